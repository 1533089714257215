"""The rubric prompt's worked example, and the check that a judge's reply did not copy it.

A small judge can copy the example word for word: asked to grade a colour palette, it
answered "It names Rome.". Such a reply is no grade at all, so the ``llm-rubric`` assertion
turns it into an error verdict.

The rule: the reply's reason (or an item's notes) shares a run of at least
:data:`MIN_RUN` consecutive words with the example, and that run holds a word that is
neither a common function word nor anywhere in what the judge was given to grade (the
rubric, the reference, the prompt and the output). A suite that really is about Rome and
Italy can therefore get "It names Rome" back without an error: every word of the run is in
its own rubric.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from skilleval.util.frozen import frozen


@frozen
class WorkedExample:
    """One rubric with a good and a bad output, and the replies they get."""

    rubric: str
    good: str
    good_reason: str
    bad: str
    bad_reason: str

    @property
    def texts(self) -> tuple[str, ...]:
        """Every sentence of the example a judge could copy."""
        return (self.rubric, self.good, self.good_reason, self.bad, self.bad_reason)


WORKED_EXAMPLE: Final = WorkedExample(
    rubric="The answer names Rome as the capital of Italy",
    good="Rome is the capital of Italy.",
    good_reason="It names Rome.",
    bad="Milan is the capital of Italy.",
    bad_reason="It names Milan, not Rome.",
)
"""The example ``rubric.j2`` shows the judge; the template renders it from here."""

MIN_RUN: Final = 3
"""Consecutive words a reply must share with the example to count as copying it."""

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_FUNCTION_WORDS: Final = frozenset(
    [
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "by",
        "with",
        "as",
        "and",
        "or",
        "but",
        "not",
        "no",
        "nor",
        "so",
        "than",
        "then",
        "there",
        "here",
        "it's",
        "from",
        "into",
        "out",
        "up",
    ]
)


def words(text: str) -> list[str]:
    """The lower-cased words of ``text``, punctuation dropped."""
    return [w.lower() for w in _WORD.findall(text)]


def shared_runs(
    tokens: Sequence[str], example: Sequence[str], where: Mapping[str, Sequence[int]]
) -> Iterable[tuple[str, ...]]:
    """Every maximal run of at least :data:`MIN_RUN` words that both sequences share.

    ``where``: each word of ``example`` and its positions there, in order; a run can only
    start where the two words are equal, so no other position is tried.
    """
    for i, token in enumerate(tokens):
        for j in where.get(token, ()):
            if i and j and tokens[i - 1] == example[j - 1]:
                continue  # not maximal: the run started one word earlier
            length = 0
            while (
                i + length < len(tokens)
                and j + length < len(example)
                and tokens[i + length] == example[j + length]
            ):
                length += 1
            if length >= MIN_RUN:
                yield tuple(tokens[i : i + length])


@functools.cache
def _examples() -> tuple[tuple[list[str], dict[str, list[int]]], ...]:
    """The worked example's texts as words, each with where each word stands in it."""
    out = []
    for text in WORKED_EXAMPLE.texts:
        example = words(text)
        where: dict[str, list[int]] = {}
        for j, word in enumerate(example):
            where.setdefault(word, []).append(j)
        out.append((example, where))
    return tuple(out)


def copied_example(replies: Iterable[str], context: Iterable[str]) -> str | None:
    """The words a reply copied from the worked example, or None when it copied nothing.

    Args:
        replies: The reply's free text: its reason, and each item's notes.
        context: What the judge was asked to grade: rubric, reference, prompt, output.
    """
    known = {w for text in context for w in words(text)}
    for reply in replies:
        tokens = words(reply)
        for example, where in _examples():
            for run in shared_runs(tokens, example, where):
                if any(w not in known and w not in _FUNCTION_WORDS for w in run):
                    return " ".join(run)
    return None
