"""Each candidate against the suite, with lint's word n-gram checks.

A case repeats its source test's prompt by construction, so the source test as written (with
each of its prompts, and each item of a list var) is not compared.
What is flagged:

- another test of the suite that sends the same request (lint's SE103 rule: equal once case,
  spacing and punctuation are ignored) or almost the same (SE104's word similarity, from
  :data:`~skilleval.lint.design.NEAR_DUPLICATE`);
- an earlier case from another test that does;
- a prompt or assertion that names or quotes the skill (lint's SE201–SE203, run on the cases).

A flagged case is still written, with the flags beside it: whether two tests asking the same
thing belong in one suite, or on one side of a train/confirm split, is the user's call.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from skilleval.cases.collect import Case
from skilleval.errors import Location
from skilleval.lint import leakage
from skilleval.lint.design import NEAR_DUPLICATE
from skilleval.lint.ngrams import similarity, words
from skilleval.lint.view import MODEL_TYPES, LintAssert, LintTest, LintView
from skilleval.suite.skills import Skill
from skilleval.util.frozen import frozen

CASE_FILE = "<case {}>"
"""The stand-in position of a case in lint's view, so a finding names the case it is about."""


@frozen
class Flag:
    """One reason to look twice at a case."""

    code: str
    """``duplicate``, ``near-duplicate`` or the lint check's name (``prompt-echoes-skill`` …)."""
    message: str
    other: str | None = None
    """The test or case it repeats."""
    similarity: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.other is not None:
            out["other"] = self.other
        if self.similarity is not None:
            out["similarity"] = round(self.similarity, 4)
        return out


class WordIndex:
    """Prompts seen so far, indexed so that only possible near-duplicates are compared.

    Prefix filtering: difflib's ratio is 2·M / (|a| + |b|) and the matched words M are at most
    |b|, so a ratio of r needs M ≥ r / (2 − r) · |a| words of ``a`` shared with ``b`` (9/11 of
    them at lint's 0.9). Two word multisets sharing that many always share one of the
    :func:`_prefix` words of each: the rarest ones under an order fixed for all prompts. Only
    prompts that share a prefix word are counted and compared, so a suite of thousands of
    tests costs a handful of difflib calls per case, not one per test.
    """

    def __init__(self, rarity: Mapping[str, int]) -> None:
        self.rarity = rarity
        self.items: list[tuple[str, str, list[str], Counter[str]]] = []
        """(name, source test, words, word counts)."""
        self.exact: dict[str, list[int]] = {}
        self.by_token: dict[tuple[str, int], list[int]] = {}

    def add(self, name: str, source: str, prompt: str) -> None:
        seq = words(prompt)
        self.exact.setdefault(" ".join(seq), []).append(len(self.items))
        for token in _prefix(seq, self.rarity):
            self.by_token.setdefault(token, []).append(len(self.items))
        self.items.append((name, source, seq, Counter(seq)))

    def nearest(self, prompt: str, source: str) -> tuple[str, float] | None:
        """The most similar prompt from another source test, at or above NEAR_DUPLICATE."""
        seq = words(prompt)
        key = " ".join(seq)
        if not key:
            return None
        for i in self.exact.get(key, ()):
            if self.items[i][1] != source:
                return self.items[i][0], 1.0
        counts = Counter(seq)
        near = {j for token in _prefix(seq, self.rarity) for j in self.by_token.get(token, ())}
        best: tuple[str, float] | None = None
        for j in sorted(near):  # the earliest of equally close prompts
            name, other_source, other, other_counts = self.items[j]
            common = sum((counts & other_counts).values())
            if other_source == source or 2 * common / (len(seq) + len(other)) < NEAR_DUPLICATE:
                continue
            score = similarity(seq, other)
            if score >= NEAR_DUPLICATE and (best is None or score > best[1]):
                best = (name, score)
        return best


def _prefix(seq: Sequence[str], rarity: Mapping[str, int]) -> list[tuple[str, int]]:
    """The rarest words of ``seq`` (the k-th repeat of a word is a word of its own), as many
    as prefix filtering needs: every near-duplicate shares at least one of them."""
    tokens: list[tuple[str, int]] = []
    seen: Counter[str] = Counter()
    for word in seq:
        seen[word] += 1
        tokens.append((word, seen[word]))
    tokens.sort(key=lambda t: (rarity.get(t[0], 0), t[0], t[1]))
    needed = math.ceil(len(seq) * NEAR_DUPLICATE / (2 - NEAR_DUPLICATE) - 1e-9)
    return tokens[: len(tokens) - needed + 1]


def check(
    cases: Sequence[Case], suite_tests: Sequence[LintTest], skill: Skill | None
) -> dict[str, list[Flag]]:
    """The flags of each case, by case id (a case with none is absent)."""
    flags: dict[str, list[Flag]] = {}
    rarity: Counter[str] = Counter()
    for text in [*(t.prompt for t in suite_tests), *(c.prompt for c in cases)]:
        rarity.update(set(words(text)))
    suite_index = WordIndex(rarity)
    for test in suite_tests:
        suite_index.add(f"test '{test.id}' ({test.where})", str(test.where), test.prompt)
    case_index = WordIndex(rarity)
    for case in cases:
        source = str(case.source_at)  # the test as written: each of its prompts, its items
        found = suite_index.nearest(case.prompt, source)
        if found is not None:
            flags.setdefault(case.id, []).append(_repeat(found, "the suite's"))
        earlier = case_index.nearest(case.prompt, source)
        if earlier is not None:
            flags.setdefault(case.id, []).append(_repeat(earlier, "an earlier"))
        case_index.add(f"case '{case.id}'", source, case.prompt)
    for case_id, flag in _leaks(cases, skill):
        flags.setdefault(case_id, []).append(flag)
    return flags


def _repeat(found: tuple[str, float], whose: str) -> Flag:
    name, score = found
    if score >= 1.0:
        return Flag(
            "duplicate",
            f"sends the same prompt as {whose} {name} once case, spacing and punctuation are "
            "ignored",
            name,
            1.0,
        )
    return Flag(
        "near-duplicate",
        f"is {score:.0%} the same words as {whose} {name}: the two ask one thing",
        name,
        score,
    )


def _leaks(cases: Sequence[Case], skill: Skill | None) -> list[tuple[str, Flag]]:
    """lint's leakage checks (SE201–SE203) on the cases as tests."""
    if skill is None or not cases:
        return []
    by_path = {CASE_FILE.format(c.id): c.id for c in cases}
    view = LintView(
        path=skill.path,
        display=skill.display,
        doc=None,
        tests=[_as_lint_test(c) for c in cases],
        skill=skill,
        loaded=True,
    )
    out = []
    for finding in leakage.check(view):
        case_id = by_path.get(finding.where.path)
        if case_id is not None:
            out.append(
                (case_id, Flag(finding.check.name, f"{finding.message} [{finding.check.id}]"))
            )
    return out


def _as_lint_test(case: Case) -> LintTest:
    at = Location(CASE_FILE.format(case.id), 1, 1)
    asserts = []
    for raw in case.test.get("assert") or []:
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            continue
        written = raw["type"]
        base = written.removeprefix("not-")
        asserts.append(
            LintAssert(
                type=written,
                base=base,
                negated=written != base,
                value=raw.get("value"),
                weight=float(raw.get("weight", 1.0)) if _number(raw.get("weight", 1.0)) else 1.0,
                threshold=None,
                where=at,
                tier="model" if base in MODEL_TYPES else "deterministic",
            )
        )
    should = case.test.get("should_trigger")
    return LintTest(
        id=case.id,
        where=at,
        prompt=case.prompt,
        pieces=(),
        should_trigger=should if isinstance(should, bool) else None,
        asserts=tuple(asserts),
    )


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
