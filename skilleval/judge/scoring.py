"""From a validated judge reply to a grade: the scoring rules, as pure functions.

A reply can match its schema and still be impossible: a check list that skips or repeats an
item, a verdict outside the vocabulary. The schemas sent by skilleval rule these out, but a
``Judge`` is any object with ``complete_json``, so nothing here trusts it; an impossible
reply raises :class:`ImpossibleReply`, which the assertions turn into an error verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from skilleval.errors import ImpossibleReply
from skilleval.judge.choice import ScoredVerdict
from skilleval.judge.schemas import SCORES, TRUTH
from skilleval.util.frozen import frozen

Require = Literal["all", "any"]
Truth = Literal["TRUE", "FALSE", "UNKNOWN"]

DEFAULT_THRESHOLD = 0.5
"""The lowest mapped score an ``llm-rubric`` pass needs when the assertion sets none."""


def map_score(score: float) -> float:
    """The judge's 1..5 score on the 0..1 scale: (score − 1) / 4."""
    return (score - 1) / 4


@frozen
class ItemCheck:
    """The judge's word on one item of a list rubric."""

    id: int
    item: str
    passed: bool
    notes: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "item": self.item, "pass": self.passed, "notes": self.notes}


@frozen
class RubricGrade:
    """An ``llm-rubric`` outcome."""

    passed: bool
    """The judge said pass AND the mapped score reached the threshold (a scored verdict:
    the mapped score reached the threshold)."""
    score: float
    """The mapped score, (judge score − 1) / 4, whichever way the verdict went."""
    judge_score: int
    """The score the judge wrote; for a scored verdict, the likeliest score."""
    judge_pass: bool
    threshold: float
    reason: str
    checks: tuple[ItemCheck, ...] = ()
    scored: ScoredVerdict | None = None
    """The score scale's probabilities, when the verdict was read from them."""


@frozen
class StatementVerdict:
    """The judge's word on one ``llm-assert`` statement."""

    id: int
    statement: str
    verdict: Truth
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "statement": self.statement,
            "verdict": self.verdict,
            "reason": self.reason,
        }


@frozen
class AssertGrade:
    """An ``llm-assert`` outcome."""

    passed: bool
    score: float
    """Share of statements judged TRUE (``require: all``); 1 or 0 (``require: any``)."""
    require: Require
    verdicts: tuple[StatementVerdict, ...]

    def count(self, truth: Truth) -> int:
        """How many statements got ``truth``."""
        return sum(1 for v in self.verdicts if v.verdict == truth)


def _field(reply: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    if key not in reply:
        raise ImpossibleReply(f"reply has no `{key}`")
    value = reply[key]
    # bool is an int in Python; a score of `true` is still impossible.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ImpossibleReply(f"`{key}` is {value!r}, not a {_kind_name(kind)}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {bool: "boolean", int: "integer", str: "string", list: "list"}
    if isinstance(kind, tuple):
        return " or ".join(names.get(k, k.__name__) for k in kind)
    return names.get(kind, kind.__name__)


def _entries(reply: Mapping[str, Any], key: str, expected: int) -> list[Mapping[str, Any]]:
    entries = _field(reply, key, list)
    ids = [e.get("id") if isinstance(e, Mapping) else None for e in entries]
    want = list(range(1, expected + 1))
    if ids != want:
        raise ImpossibleReply(f"`{key}` has ids {ids}; expected exactly {want}, in order")
    return list(entries)


def grade_rubric(
    reply: Any, items: Sequence[str] = (), threshold: float | None = None
) -> RubricGrade:
    """Score an ``llm-rubric`` reply.

    The rule: pass iff the judge's ``pass`` is true AND (score − 1) / 4 ≥ ``threshold``.
    Per-item checks are recorded; they do not enter the rule.

    Args:
        reply: The parsed reply.
        items: The rubric's items when it is a list; empty for a free-text rubric.
        threshold: The assertion's threshold, or None for :data:`DEFAULT_THRESHOLD`.

    Raises:
        ImpossibleReply: The reply lacks a field, has one of the wrong kind, a score off the
            scale, or checks that do not name each item exactly once, in order.
    """
    if not isinstance(reply, Mapping):
        raise ImpossibleReply(f"reply is {type(reply).__name__}, not an object")
    score = _field(reply, "score", int)
    if score not in SCORES:
        raise ImpossibleReply(f"score {score} is not on the scale {SCORES[0]}..{SCORES[-1]}")
    judge_pass = _field(reply, "pass", bool)
    reason = _field(reply, "reason", str)
    checks = read_checks(reply, items) if items else ()
    bar = DEFAULT_THRESHOLD if threshold is None else threshold
    mapped = map_score(score)
    return RubricGrade(
        passed=judge_pass and mapped >= bar,
        score=mapped,
        judge_score=score,
        judge_pass=judge_pass,
        threshold=bar,
        reason=reason,
        checks=checks,
    )


def read_checks(reply: Mapping[str, Any], items: Sequence[str]) -> tuple[ItemCheck, ...]:
    """A list rubric's ``checks``, one per item.

    Raises:
        ImpossibleReply: They do not name each item exactly once, in order, or an entry lacks
            ``pass`` or ``notes``.
    """
    entries = _entries(reply, "checks", len(items))
    return tuple(
        ItemCheck(
            id=i,
            item=item,
            passed=_field(entry, "pass", bool),
            notes=_field(entry, "notes", str),
        )
        for i, (item, entry) in enumerate(zip(items, entries, strict=True), start=1)
    )


def grade_scored(
    verdict: ScoredVerdict, threshold: float | None = None, reason: str = ""
) -> RubricGrade:
    """Grade a free-text ``llm-rubric`` verdict read from the score scale's log-probabilities.

    The rule: pass iff (score − 1) / 4 ≥ ``threshold``, where the score is the verdict's
    (:data:`~skilleval.judge.choice.VERDICT_RULE`). With no written ``pass`` to ask for, the
    threshold alone decides, as it already could: a written verdict passes only when its
    score reaches the threshold too.
    """
    bar = DEFAULT_THRESHOLD if threshold is None else threshold
    mapped = map_score(verdict.score)
    passed = mapped >= bar
    return RubricGrade(
        passed=passed,
        score=mapped,
        judge_score=verdict.likeliest,
        judge_pass=passed,
        threshold=bar,
        reason=reason,
        scored=verdict,
    )


def grade_statements(reply: Any, statements: Sequence[str], require: Require) -> AssertGrade:
    """Score an ``llm-assert`` reply.

    Only TRUE counts as holding: FALSE and UNKNOWN both count as not passed. ``require: all``
    passes when every statement is TRUE; ``require: any`` when at least one is.

    Raises:
        ImpossibleReply: The verdict list does not cover each statement exactly once, in
            order, or holds a verdict outside TRUE/FALSE/UNKNOWN.
    """
    if not isinstance(reply, Mapping):
        raise ImpossibleReply(f"reply is {type(reply).__name__}, not an object")
    entries = _entries(reply, "verdicts", len(statements))
    verdicts = []
    for i, (statement, entry) in enumerate(zip(statements, entries, strict=True), start=1):
        truth = _field(entry, "verdict", str)
        if truth not in TRUTH:
            raise ImpossibleReply(f"statement {i} has verdict {truth!r}, not one of {TRUTH}")
        verdicts.append(StatementVerdict(i, statement, truth, _field(entry, "reason", str)))
    held = sum(1 for v in verdicts if v.verdict == "TRUE")
    if require == "all":
        passed, score = held == len(verdicts), held / len(verdicts)
    else:
        passed = held > 0
        score = 1.0 if passed else 0.0
    return AssertGrade(passed=passed, score=score, require=require, verdicts=tuple(verdicts))
