"""Regular-expression search on the model's output."""

from __future__ import annotations

from typing import Any

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.builtin._common import clip, quote
from skilleval.errors import RegexError, RegexTimeoutError
from skilleval.sandbox import saferegex
from skilleval.suite.template import is_template


def check_pattern(value: Any) -> str | None:
    """The reason ``value`` is not a Python regular expression, or None when it compiles."""
    if not isinstance(value, str) or is_template(value):
        return None
    try:
        saferegex.compile(value, javascript=True)
    except RegexError as exc:
        return f"bad regex: {exc}"
    return None


@assertion("regex", value={"type": "string"}, check_value=check_pattern)
def regex(check: Check) -> Verdict:
    """Output contains a match for the Python regular expression (re.search).

    JavaScript's spellings are read too, as promptfoo's configs write them: named groups
    ``(?<name>…)`` with ``\\k<name>``, and Unicode properties ``\\p{L}`` (with the ``regex``
    package's meaning, as JavaScript's ``u`` flag gives them).

    Use inline flags for options: ``(?i)`` ignores case, ``(?s)`` lets ``.`` match newlines and
    ``(?m)`` makes ``^`` and ``$`` match at every line. A search that backtracks past the
    time limit (1 s) is an ``error``, not a hang.
    """
    pattern = str(check.value)
    shown = f"/{clip(pattern, 60)}/"
    try:
        found = saferegex.search(pattern, check.output, javascript=True)
    except RegexError as exc:
        return Verdict.errored(f"bad regex: {exc}")
    except RegexTimeoutError as exc:
        return Verdict.errored(str(exc))
    if found is None:
        return Verdict.of(False, f"output has no match for {shown}")
    return Verdict.of(True, f"output matches {shown} with {quote(found.group(0))}")
