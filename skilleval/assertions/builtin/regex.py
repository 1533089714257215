"""Regular-expression search on the model's output."""

from __future__ import annotations

import functools
import re
from typing import Any

from skilleval.assertions.api import Check, Verdict, assertion
from skilleval.assertions.builtin._common import clip, has_template, quote


@functools.lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def check_pattern(value: Any) -> str | None:
    """The reason ``value`` is not a Python regular expression, or None when it compiles."""
    if not isinstance(value, str) or has_template(value):
        return None
    try:
        _compile(value)
    except re.error as exc:
        return f"bad regex: {exc}"
    return None


@assertion("regex", value={"type": "string"}, check_value=check_pattern)
def regex(check: Check) -> Verdict:
    """Output contains a match for the Python regular expression (re.search).

    Use inline flags for options: ``(?i)`` ignores case, ``(?s)`` lets ``.`` match newlines and
    ``(?m)`` makes ``^`` and ``$`` match at every line.
    """
    pattern = str(check.value)
    try:
        compiled = _compile(pattern)
    except re.error as exc:
        return Verdict.failed_with_error(f"bad regex: {exc}")
    shown = f"/{clip(pattern, 60)}/"
    found = compiled.search(check.output)
    if found is None:
        return Verdict.of(False, f"output has no match for {shown}")
    return Verdict.of(True, f"output matches {shown} with {quote(found.group(0))}")
