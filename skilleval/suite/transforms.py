"""``transform:`` on a test or an assertion: an expr, or a JMESPath query, compiled at load."""

from __future__ import annotations

import re
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError

from skilleval import expr
from skilleval.suite.context import Loader
from skilleval.suite.model import Transform
from skilleval.suite.yamlio import Document

# Signs that a transform was written in JavaScript, as promptfoo's are: a method call
# (never valid in expr), an arrow, strict equality, JSON.*, a statement.
_JAVASCRIPT = re.compile(r"\.[A-Za-z_]\w*\s*\(|=>|===|!==|\bJSON\.|\bfunction\b|\breturn\b|;\s*$")


def compile_transform(
    loader: Loader, raw: Any, doc: Document, at: list[str | int]
) -> Transform | None:
    """The transform written at ``at``, or None (with an error when it does not compile)."""
    if raw is None:
        return None
    where = doc.at(at)
    if isinstance(raw, str):
        kind, source = "expr", raw
    else:
        kind, source = next(iter(raw.items()))
    if kind == "jmespath":
        try:
            jmespath.compile(source)
        except JMESPathError as exc:
            loader.error(where, f"transform is not a valid JMESPath query: {exc}")
            return None
        return Transform("jmespath", source, where)
    try:
        expr.compile_expr(source)
    except expr.ExprSyntaxError as exc:
        hint = ""
        if _JAVASCRIPT.search(source):
            hint = (
                "; JavaScript transforms are not supported:"
                " transforms are expr (docs/expr.md) or {jmespath: ...}"
            )
        loader.error(where, f"transform: {exc.message} at column {exc.col}{hint}")
        return None
    return Transform("expr", source, where)
