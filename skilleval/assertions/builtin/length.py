"""Size and closeness checks: characters, words, and edit distance to a reference."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.builtin._common import as_text, quote

_COUNT: dict[str, Any] = {"type": "integer", "minimum": 0}
_WORD_COUNT: dict[str, Any] = {
    "oneOf": [
        _COUNT,
        {
            "type": "object",
            "properties": {"min": _COUNT, "max": _COUNT},
            "minProperties": 1,
            "additionalProperties": False,
        },
    ]
}
JS_WHITESPACE = re.compile(
    "[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+"
)
"""JavaScript's ``\\s``: unlike Python's ``str.split``, it holds U+FEFF and not U+001C–U+001F
or U+0085."""

DEFAULT_MAX_DISTANCE = 5
"""promptfoo's default ``threshold`` for ``levenshtein``."""

MAX_CELLS = 10_000_000_000
"""The largest product of the two texts' lengths ``levenshtein`` takes on: two texts of
100,000 characters, measured at under 1 s. The work grows with the product."""


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@assertion("max-length", value=_COUNT)
def max_length(check: Check) -> Verdict:
    """Output is at most this many characters long."""
    size = len(check.output)
    return Verdict.of(
        size <= check.value, f"output is {_plural(size, 'character')} (max {check.value})"
    )


@assertion("min-length", value=_COUNT)
def min_length(check: Check) -> Verdict:
    """Output is at least this many characters long."""
    size = len(check.output)
    return Verdict.of(
        size >= check.value, f"output is {_plural(size, 'character')} (min {check.value})"
    )


def check_word_bounds(value: Any) -> str | None:
    """The reason a ``{min, max}`` word count is impossible, or None."""
    if isinstance(value, Mapping):
        low, high = value.get("min"), value.get("max")
        if isinstance(low, int) and isinstance(high, int) and low > high:
            return f"word-count min {low} is greater than max {high}"
    return None


@assertion("word-count", value=_WORD_COUNT, check_value=check_word_bounds)
def word_count(check: Check) -> Verdict:
    """Output has exactly this many words, or a count within {min, max}.

    Words are runs of non-whitespace characters, so punctuation attached to a word is part of
    it and a lone dash counts as a word. Whitespace is JavaScript's, as promptfoo splits.
    """
    words = len([w for w in JS_WHITESPACE.split(check.output) if w])
    found = f"output has {_plural(words, 'word')}"
    if isinstance(check.value, int):
        return Verdict.of(words == check.value, f"{found} (expected {check.value})")
    low, high = check.value.get("min"), check.value.get("max")
    if low is not None and high is not None:
        wanted = f"{low}–{high}"
    elif low is not None:
        wanted = f"at least {low}"
    else:
        wanted = f"at most {high}"
    inside = (low is None or words >= low) and (high is None or words <= high)
    return Verdict.of(inside, f"{found} (expected {wanted})")


def edit_distance(a: str, b: str) -> int:
    """The Levenshtein distance between ``a`` and ``b``: insertions, deletions, substitutions.

    Computed by rapidfuzz's bit-parallel C++ code: two texts of 6,000 characters took 2.6 ms,
    where the pure-Python dynamic programme it replaces took 23 s.
    """
    from rapidfuzz.distance import Levenshtein  # lazy: start-up time

    return int(Levenshtein.distance(a, b))


@assertion("levenshtein", value={"type": ["string", "number"]})
def levenshtein(check: Check) -> Verdict:
    """Output is within `threshold` edits (default 5) of the reference text given as the value.

    The score is promptfoo's: 1 within the distance, 0 past it, so a test's ``threshold``
    reads it as promptfoo does. The similarity (1 − distance / length of the longer text)
    is in the reason and in ``details``.
    """
    reference = as_text(check.value)
    limit = DEFAULT_MAX_DISTANCE if check.threshold is None else check.threshold
    if len(check.output) * len(reference) > MAX_CELLS:
        return Verdict.errored(
            f"levenshtein on texts of {len(check.output):,} and {len(reference):,} characters"
            f" is too slow to compute; the limit is {MAX_CELLS:,} for their lengths"
            " multiplied (two texts of 100,000 characters)"
        )
    distance = edit_distance(check.output, reference)
    longest = max(len(check.output), len(reference))
    similarity = 1.0 if longest == 0 else 1.0 - distance / longest
    passed = distance <= limit
    return Verdict.of(
        passed,
        f"output is {_plural(distance, 'edit')} from {quote(reference, 40)} (max {limit:g};"
        f" similarity {similarity:.2f})",
        score=1.0 if passed else 0.0,
        details={"distance": distance, "similarity": similarity},
    )
