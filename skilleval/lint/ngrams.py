"""Word-level text comparison: normalising, shared phrases and similarity.

Everything works on lower-cased words (runs of letters and digits), so punctuation, case and
hyphens never hide a copied phrase: ``commit-message`` and "Commit message" are the same two
words. A phrase is *distinctive* when it carries several content words; runs of function
words ("of the", "in a way that") are shared by any two English texts and say nothing.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Sequence

from skilleval.util.frozen import frozen

_WORD = re.compile(r"[^\W_]+")

_FUNCTION_WORDS = """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each else etc
    few for from further had has have having he her here hers him his how i if in into is it
    its itself just me more most my no nor not now of off on once only or other our ours out
    over own same she should so some such than that the their theirs them then there these
    they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself
"""
STOPWORDS: frozenset[str] = frozenset(_FUNCTION_WORDS.split())
"""Function words: they never make a shared phrase distinctive."""

SHINGLE = 3
"""Phrases are found as runs of shared word trigrams."""


@frozen
class Phrase:
    """A run of words that two texts share."""

    words: tuple[str, ...]
    start: int
    """Index of the first word in the text that was searched."""

    @property
    def text(self) -> str:
        return " ".join(self.words)

    @property
    def content_words(self) -> int:
        return content_count(self.words)

    def __len__(self) -> int:
        return len(self.words)


def words(text: str) -> list[str]:
    """The lower-cased words of ``text``, Unicode-normalised."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _WORD.findall(folded)


def normalise(text: str) -> str:
    """``text`` reduced to its words, for spotting duplicates that differ only in punctuation."""
    return " ".join(words(text))


def content_count(seq: Sequence[str]) -> int:
    """How many words of ``seq`` are not function words."""
    return sum(1 for w in seq if w not in STOPWORDS)


def shingles(seq: Sequence[str], n: int = SHINGLE) -> set[tuple[str, ...]]:
    """Every run of ``n`` consecutive words."""
    return {tuple(seq[i : i + n]) for i in range(len(seq) - n + 1)}


class Source:
    """A reference text (a SKILL.md), indexed once and searched many times."""

    def __init__(self, text: str) -> None:
        self.words = words(text)
        self._grams = shingles(self.words)
        self._joined = f" {' '.join(self.words)} "

    def contains(self, seq: Sequence[str]) -> bool:
        """Whether ``seq`` appears in the source as consecutive words."""
        return bool(seq) and f" {' '.join(seq)} " in self._joined

    def shared(self, seq: Sequence[str]) -> list[Phrase]:
        """The maximal runs of ``seq`` made of trigrams that also occur in the source.

        A run is a stretch in which every trigram is in the source, so it may stitch together
        two nearby passages of the source; for showing users the copied words that is what we
        want, and the exact substring test is :meth:`contains`.
        """
        n = SHINGLE
        hits = [tuple(seq[i : i + n]) in self._grams for i in range(len(seq) - n + 1)]
        runs: list[Phrase] = []
        i = 0
        while i < len(hits):
            if not hits[i]:
                i += 1
                continue
            j = i
            while j + 1 < len(hits) and hits[j + 1]:
                j += 1
            runs.append(Phrase(tuple(seq[i : j + n]), i))
            i = j + 1
        return runs

    def longest_distinctive(self, seq: Sequence[str], min_content: int) -> Phrase | None:
        """The longest shared run with at least ``min_content`` content words, if any."""
        best: Phrase | None = None
        for phrase in self.shared(seq):
            if phrase.content_words < min_content:
                continue
            if best is None or (len(phrase), phrase.content_words) > (
                len(best),
                best.content_words,
            ):
                best = phrase
        return best


def similarity(a: Sequence[str], b: Sequence[str]) -> float:
    """How alike two word sequences are, 0..1 (difflib's ratio over words, not characters)."""
    if not a and not b:
        return 1.0
    return difflib.SequenceMatcher(None, list(a), list(b), autojunk=False).ratio()


def common_run(seqs: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """The longest run of words that every sequence contains (empty when there is none)."""
    if not seqs:
        return ()
    first = min(seqs, key=len)
    others = [f" {' '.join(s)} " for s in seqs]
    for size in range(len(first), 0, -1):
        for i in range(len(first) - size + 1):
            run = first[i : i + size]
            needle = f" {' '.join(run)} "
            if all(needle in o for o in others):
                return tuple(run)
    return ()
