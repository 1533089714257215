"""The ``expr`` assertion: a safe expression over the output (see docs/expr.md)."""

from __future__ import annotations

import json
from typing import Any

from skilleval.api import Check, Verdict, assertion
from skilleval.expr import ExprSyntaxError, compile_expr


def _check(source: Any) -> str | None:
    try:
        compile_expr(str(source))
    except ExprSyntaxError as exc:
        return f"bad expr: {exc.message} (column {exc.col})"
    return None


def _parsed(check: Check) -> Any:
    if check.transformed is not None and not isinstance(check.transformed, str):
        return check.transformed
    try:
        return json.loads(check.output)
    except ValueError:
        return None


@assertion("expr", value={"type": "string", "minLength": 1}, check_value=_check)
def expr(check: Check) -> Verdict:
    """An expression over output, json, vars and stats is truthy (e.g. `len(output) <= 200`)."""
    compiled = compile_expr(str(check.value))
    env = {
        "output": check.output,
        "json": _parsed(check),
        "vars": dict(check.vars),
        "stats": check.stats.to_env(),
    }
    result = compiled.evaluate(env)
    if isinstance(result, bool) or result is None:
        return Verdict.of(bool(result), f"{check.value} is {'true' if result else 'false'}")
    if isinstance(result, (int, float)):
        score = max(0.0, min(1.0, float(result)))
        passed = score >= check.threshold if check.threshold is not None else result > 0
        return Verdict.of(passed, f"{check.value} = {result}", score=score)
    return Verdict.of(
        bool(result), f"{check.value} gave {type(result).__name__} {str(result)[:40]!r}"
    )
