"""Checks on assertions that decide nothing: they pass, or fail, whatever the model says."""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Iterator
from typing import Any, Literal

from skilleval import expr
from skilleval.errors import RegexError, RegexTimeoutError
from skilleval.lint.checks import CANNOT_FAIL, CANNOT_PASS, NOT_CHECKABLE, UNSCORED_TEST
from skilleval.lint.finding import Finding
from skilleval.lint.view import LintAssert, LintTest, LintView
from skilleval.plugins.markers import lint_check
from skilleval.sandbox import saferegex

Always = Literal["pass", "fail"]

PROBES = (
    "",
    "x",
    "The quick brown fox jumps over the lazy dog.",
    "feat(parser): handle empty rows\n\nDetails on a second line.",
    '{"answer": 42}',
)
"""Texts unlike each other: a regex that matches all of them matches anything."""


@lint_check(CANNOT_FAIL, CANNOT_PASS, UNSCORED_TEST, NOT_CHECKABLE, name="assertions")
def check(view: LintView) -> Iterator[Finding]:
    """SE301–SE304: assertions and tests that cannot fail, cannot pass or cannot be checked here."""
    seen: set[tuple[str, int, int]] = set()
    for test in view.tests:
        yield from _unscored(test)
        if test.threshold is not None and test.threshold <= 0:
            yield Finding(
                CANNOT_FAIL,
                test.where,
                f"test '{_base_id(test)}' has `threshold: 0`: any score reaches it, so the "
                "test passes whatever the model says",
            )
        for entry in test.asserts:
            key = (entry.where.path, entry.where.line, entry.where.col)
            if key in seen or entry.weight <= 0:
                continue
            seen.add(key)
            lacking = not_checkable(entry)
            if lacking is not None:
                yield Finding(NOT_CHECKABLE, entry.where, lacking)
                continue
            found = always(entry)
            if found is None:
                continue
            outcome, why = found
            shown = _shown(entry)
            if outcome == "pass":
                yield Finding(
                    CANNOT_FAIL,
                    entry.where,
                    f"{shown} cannot fail: {why}. It adds a pass to every result",
                )
            else:
                yield Finding(
                    CANNOT_PASS,
                    entry.where,
                    f"{shown} cannot pass: {why}. It fails every result, with or without the skill",
                )


def not_checkable(entry: LintAssert) -> str | None:
    """Why ``entry`` will be an ``error`` in a local run, or None.

    An ``unavailable`` check (read from another tool's eval file) says so itself; a
    ``run-command`` whose program is not installed here cannot run.
    """
    if entry.base == "unavailable" and isinstance(entry.value, dict):
        return (
            f"{entry.value.get('text', '')!r} cannot be checked in a local run: "
            f"{entry.value.get('reason', '')}; it will be an `error` verdict"
        )
    if entry.base == "run-command":
        command = entry.value.get("command") if isinstance(entry.value, dict) else entry.value
        program = _program(command)
        if program and shutil.which(program) is None:
            return (
                f"`{program}` is not installed here, so run-command `{program} …` cannot run; "
                "it will be an `error` verdict"
            )
    return None


def _program(command: Any) -> str | None:
    """The program a command line or argv runs (None for anything the shell must decide)."""
    if isinstance(command, list):
        return str(command[0]) if command else None
    if not isinstance(command, str):
        return None
    try:
        first = shlex.split(command)[0] if command.strip() else ""
    except ValueError:
        return None
    if not first or any(c in first for c in "$`=()|&;<>") or first in _SHELL_WORDS:
        return None
    return first


_SHELL_WORDS = frozenset(
    {
        "cd",
        "test",
        "[",
        "if",
        "for",
        "while",
        "export",
        "set",
        "true",
        "false",
        "echo",
        "printf",
        "exit",
        "!",
    }
)


def _base_id(test: LintTest) -> str:
    # With several prompts a test runs once per prompt, as `id[label]`; report it once.
    return re.sub(r"\[[^\]]*\]$", "", test.id)


def _unscored(test: LintTest) -> Iterator[Finding]:
    if any(a.weight > 0 for a in test.asserts):
        return
    if not test.asserts:
        message = (
            f"test '{_base_id(test)}' has no assertions, so it passes whatever the model says "
            "and still counts toward the pass rate"
        )
    else:
        message = (
            f"every assertion of test '{_base_id(test)}' has `weight: 0`, so none decides the "
            "result and the test passes whatever the model says"
        )
    yield Finding(UNSCORED_TEST, test.where, message)


def _shown(entry: LintAssert) -> str:
    value = entry.value if entry.value is not None else entry.threshold
    return f"`{entry.type}: {_repr(value)}`"


def _repr(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"' if len(value) <= 40 else f'"{value[:39]}…"'
    return repr(value)


def always(entry: LintAssert) -> tuple[Always, str] | None:
    """Whether ``entry`` passes (or fails) on every non-empty output, and why."""
    found = _always(entry.base, entry.value, entry.threshold)
    if found is None or not entry.negated:
        return found
    outcome, why = found
    flipped: Always = "fail" if outcome == "pass" else "pass"
    return flipped, f"`{entry.base}` alone would always {outcome} ({why}), and `not-` inverts it"


def _always(base: str, value: Any, threshold: float | None) -> tuple[Always, str] | None:
    if base in ("contains", "icontains", "starts-with", "ends-with") and value == "":
        return "pass", "every text contains the empty string"
    if base in ("contains-any", "icontains-any") and isinstance(value, list) and "" in value:
        return "pass", "one of its values is the empty string, which every text contains"
    if (
        base in ("contains-all", "icontains-all")
        and isinstance(value, list)
        and value
        and all(v == "" for v in value)
    ):
        return "pass", "all its values are empty strings, which every text contains"
    if base == "regex" and isinstance(value, str):
        return _regex(value)
    if base == "min-length" and _is_number(value) and value <= 0:
        return "pass", "every output is at least 0 characters long"
    if base == "max-length" and _is_number(value) and value <= 0:
        return "fail", "only an empty output is at most 0 characters long"
    if base == "max-tokens" and _is_number(value) and value <= 0:
        return "fail", "every reply uses at least one token"
    if base == "latency":
        limit = value if _is_number(value) else threshold
        if _is_number(limit) and limit is not None and limit <= 0:
            return "fail", "no model call takes 0 milliseconds"
    if base == "word-count":
        return _word_count(value)
    if base == "expr" and isinstance(value, str):
        return _constant_expr(value)
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _regex(pattern: str) -> tuple[Always, str] | None:
    try:
        compiled = saferegex.compile(pattern)
        if all(saferegex.search(compiled, p) is not None for p in PROBES):
            return "pass", f"the pattern {pattern!r} matches any text, even an empty one"
    except (RegexError, RegexTimeoutError):
        return None
    return None


def _word_count(value: Any) -> tuple[Always, str] | None:
    if _is_number(value):
        return ("fail", "only an empty output has 0 words") if value == 0 else None
    if not isinstance(value, dict):
        return None
    low, high = value.get("min"), value.get("max")
    if _is_number(high) and high == 0:
        return "fail", "only an empty output has at most 0 words"
    if high is None and (low is None or (_is_number(low) and low <= 0)):
        return "pass", "every output has at least 0 words"
    return None


def _constant_expr(source: str) -> tuple[Always, str] | None:
    try:
        compiled = expr.compile_expr(source)
    except expr.ExprError:
        return None
    if compiled.names:
        return None
    try:
        result = compiled.evaluate({})
    except expr.ExprError:
        return None
    if result:
        return "pass", "the expression reads nothing from the output and is always true"
    return "fail", "the expression reads nothing from the output and is always false"
