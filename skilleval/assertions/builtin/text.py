"""Exact, substring, prefix and suffix checks on the model's output.

Numbers in values are compared as text (``contains: 42`` looks for ``"42"``), as promptfoo does.
The empty string is allowed even though ``contains: ""`` cannot fail: it is valid, just
pointless, so reporting it is left to lint, which can give it a position and a code instead of
refusing the suite.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.builtin._common import (
    as_text,
    json_difference,
    quote,
    transformed_object,
)
from skilleval.util.jsontext import json_error, loads_strict

_TEXT: dict[str, Any] = {"type": ["string", "number"]}
_TEXT_LIST: dict[str, Any] = {"type": "array", "items": _TEXT}
_EQUALS: dict[str, Any] = {"type": ["string", "number", "boolean", "object", "array"]}

_LISTED = 5
"""How many values a reason names before summarising the rest."""


def _listing(values: Sequence[str]) -> str:
    shown = ", ".join(quote(v, 40) for v in values[:_LISTED])
    rest = len(values) - _LISTED
    return f"{shown} and {rest} more" if rest > 0 else shown


def _fold(text: str) -> str:
    # casefold, not lower: it also matches "straße" with "STRASSE"
    return text.casefold()


def _first_difference(a: str, b: str) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


@assertion("equals", value=_EQUALS)
def equals(check: Check) -> Verdict:
    """Output is exactly the value; a mapping or list value is compared with the output's JSON.

    Text is compared exactly, whitespace included. A mapping or list value is deep-equal
    compared with the output parsed as JSON (or with the transform's result when it was not
    text); output that is not JSON fails.
    """
    if isinstance(check.value, Mapping | list):
        return _equals_json(check, check.value)
    expected = as_text(check.value)
    if check.output == expected:
        return Verdict.of(True, f"output equals {quote(expected)}")
    at = _first_difference(check.output, expected)
    return Verdict.of(
        False,
        f"output {quote(check.output)} differs from {quote(expected)} at offset {at}",
    )


def _equals_json(check: Check, expected: Any) -> Verdict:
    actual = transformed_object(check)
    if actual is None:
        try:
            actual = loads_strict(check.output)
        except ValueError as exc:
            return Verdict.of(False, f"output is not JSON ({json_error(exc)})")
    difference = json_difference(actual, expected)
    if difference is None:
        return Verdict.of(True, "output JSON equals the expected value")
    return Verdict.of(False, f"output JSON differs: {difference}")


def _contains(check: Check, fold: Callable[[str], str], note: str) -> Verdict:
    needle = as_text(check.value)
    found = fold(needle) in fold(check.output)
    return Verdict.of(found, f"output {'contains' if found else 'lacks'} {quote(needle)}{note}")


def _contains_all(check: Check, fold: Callable[[str], str], note: str) -> Verdict:
    needles = [as_text(v) for v in check.value]
    haystack = fold(check.output)
    missing = [n for n in needles if fold(n) not in haystack]
    if not missing:
        return Verdict.of(True, f"output contains all of {_listing(needles)}{note}")
    present = len(needles) - len(missing)
    return Verdict.of(
        False,
        f"output lacks {_listing(missing)}{note} ({present} of {len(needles)} present)",
    )


def _contains_any(check: Check, fold: Callable[[str], str], note: str) -> Verdict:
    needles = [as_text(v) for v in check.value]
    haystack = fold(check.output)
    for needle in needles:
        if fold(needle) in haystack:
            return Verdict.of(True, f"output contains {quote(needle)}{note}")
    return Verdict.of(False, f"output contains none of {_listing(needles)}{note}")


def _same(text: str) -> str:
    return text


_IGNORING_CASE = " (ignoring case)"


@assertion("contains", value=_TEXT)
def contains(check: Check) -> Verdict:
    """Output contains the value, case-sensitive."""
    return _contains(check, _same, "")


@assertion("icontains", value=_TEXT)
def icontains(check: Check) -> Verdict:
    """Output contains the value, ignoring case."""
    return _contains(check, _fold, _IGNORING_CASE)


@assertion("contains-all", value=_TEXT_LIST)
def contains_all(check: Check) -> Verdict:
    """Output contains every listed value, case-sensitive."""
    return _contains_all(check, _same, "")


@assertion("icontains-all", value=_TEXT_LIST)
def icontains_all(check: Check) -> Verdict:
    """Output contains every listed value, ignoring case."""
    return _contains_all(check, _fold, _IGNORING_CASE)


@assertion("contains-any", value=_TEXT_LIST)
def contains_any(check: Check) -> Verdict:
    """Output contains at least one listed value, case-sensitive."""
    return _contains_any(check, _same, "")


@assertion("icontains-any", value=_TEXT_LIST)
def icontains_any(check: Check) -> Verdict:
    """Output contains at least one listed value, ignoring case."""
    return _contains_any(check, _fold, _IGNORING_CASE)


@assertion("starts-with", value=_TEXT)
def starts_with(check: Check) -> Verdict:
    """Output begins with the value, case-sensitive."""
    prefix = as_text(check.value)
    if check.output.startswith(prefix):
        return Verdict.of(True, f"output starts with {quote(prefix)}")
    if not check.output:
        return Verdict.of(False, f"output is empty, so it lacks the prefix {quote(prefix)}")
    head = check.output[: max(len(prefix), 1)]
    return Verdict.of(False, f"output starts with {quote(head)}, not {quote(prefix)}")


@assertion("ends-with", value=_TEXT)
def ends_with(check: Check) -> Verdict:
    """Output finishes with the value, case-sensitive."""
    suffix = as_text(check.value)
    if check.output.endswith(suffix):
        return Verdict.of(True, f"output ends with {quote(suffix)}")
    if not check.output:
        return Verdict.of(False, f"output is empty, so it lacks the suffix {quote(suffix)}")
    tail = check.output[-max(len(suffix), 1) :]
    return Verdict.of(False, f"output ends with {quote(tail)}, not {quote(suffix)}")
