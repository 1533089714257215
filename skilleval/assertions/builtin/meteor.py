"""``meteor``: METEOR (Banerjee and Lavie, 2005) of the output against reference texts, as
promptfoo computes it.

Words are the text split on JavaScript's whitespace, trailing full stops removed, compared
lower-cased. They are aligned in three passes, each on the words still unmatched: the same
word, the same Porter stem (:mod:`._porter`), then a WordNet synonym of the stem
(:mod:`._wordnet`), as promptfoo looks synonyms up after stemming.
With m matches over c output words and r reference words, P = m/c and R = m/r,
Fmean = P·R / (α·P + (1−α)·R), and the score is (1 − γ·(chunks/m)^β)·Fmean, where chunks
counts the runs of matches adjacent in both texts. α, β and γ default to 0.9, 3 and 0.5
(promptfoo's ``alpha``, ``beta``, ``gamma`` keys); with several references the best score
counts. It passes at ``threshold`` (default 0.5).

The synonym pass needs a WordNet database on the machine (see :mod:`._wordnet`); without
one, the score comes from the first two passes and the reason says so.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.builtin._porter import stem
from skilleval.assertions.builtin._wordnet import synonyms, wordnet_dir
from skilleval.assertions.builtin.length import JS_WHITESPACE

_VALUE: dict[str, Any] = {
    "anyOf": [
        {"type": "string"},
        {"type": "array", "minItems": 1, "items": {"type": "string"}},
    ],
    "description": "the reference text, or a list of acceptable references",
}
_PARAMETER: dict[str, Any] = {"type": "number"}
_OPTIONS = {
    "alpha": {**_PARAMETER, "description": "meteor: the weight of precision against recall (0.9)"},
    "beta": {**_PARAMETER, "description": "meteor: the fragmentation penalty's exponent (3)"},
    "gamma": {**_PARAMETER, "description": "meteor: the fragmentation penalty's weight (0.5)"},
}
DEFAULT_THRESHOLD = 0.5

Indexed = list[tuple[int, str]]
Match = tuple[int, int]


def words(text: str) -> list[str]:
    """``text`` split as promptfoo splits it: on JavaScript's whitespace, each word without
    trailing full stops (a text starting or ending with whitespace has an empty word there)."""
    return [w.rstrip(".") for w in JS_WHITESPACE.split(text)]


def _align(
    candidate: Indexed, reference: Indexed, same: Callable[[str, str], bool]
) -> tuple[list[Match], Indexed, Indexed]:
    """Match each candidate word, last first, to the last unmatched reference word ``same``
    accepts; what is left of each side."""
    left_c, left_r = list(candidate), list(reference)
    found: list[Match] = []
    for i in range(len(left_c) - 1, -1, -1):
        for j in range(len(left_r) - 1, -1, -1):
            if same(left_c[i][1], left_r[j][1]):
                found.append((left_c[i][0], left_r[j][0]))
                del left_c[i]
                del left_r[j]
                break
    return found, left_c, left_r


def _chunks(matches: Sequence[Match]) -> int:
    if not matches:
        return 0
    return 1 + sum(
        1 for a, b in itertools.pairwise(matches) if b[0] != a[0] + 1 or b[1] != a[1] + 1
    )


def meteor_score(
    output: str,
    reference: str,
    alpha: float = 0.9,
    beta: float = 3.0,
    gamma: float = 0.5,
    wordnet: Any = None,
) -> float:
    """METEOR of ``output`` against one reference; ``wordnet`` is the database folder, or
    None to leave synonyms out."""
    candidate = [(i, w.lower()) for i, w in enumerate(words(output))]
    ref = [(i, w.lower()) for i, w in enumerate(words(reference))]
    exact, rest_c, rest_r = _align(candidate, ref, str.__eq__)
    stemmed, rest_c, rest_r = _align(
        [(i, stem(w)) for i, w in rest_c],
        [(i, stem(w)) for i, w in rest_r],
        str.__eq__,
    )
    # As in promptfoo, the synonym pass looks up what the stem pass left: the stems.
    synonym: list[Match] = []
    if wordnet is not None:
        synonym, _, _ = _align(
            rest_c, rest_r, lambda c, r: r == c or ("_" not in r and r in synonyms(c, wordnet))
        )
    matches = sorted([*exact, *stemmed, *synonym])
    count = len(matches)
    if count == 0 or not candidate or not ref:
        return 0.0
    precision = count / len(candidate)
    recall = count / len(ref)
    denominator = alpha * precision + (1 - alpha) * recall
    if denominator == 0:
        return 0.0
    fmean = precision * recall / denominator
    fragmentation = _chunks(matches) / count
    return float((1 - gamma * fragmentation**beta) * fmean)


@assertion("meteor", value=_VALUE, options=_OPTIONS)
def meteor(check: Check) -> Verdict:
    """METEOR of the output against the reference text(s) reaches ``threshold`` (0.5)."""
    references = [check.value] if isinstance(check.value, str) else list(check.value)
    if not check.output:
        return Verdict.errored("meteor needs an output to score; this one is empty")
    wordnet = wordnet_dir()
    params = {k: float(check.options[k]) for k in ("alpha", "beta", "gamma") if k in check.options}
    score = max(meteor_score(check.output, r, wordnet=wordnet, **params) for r in references)
    threshold = DEFAULT_THRESHOLD if check.threshold is None else check.threshold
    note = "" if wordnet is not None else " (no WordNet database here: synonyms not matched)"
    return Verdict.of(
        score >= threshold, f"METEOR {score:.4f}, threshold {threshold:g}{note}", score=score
    )
