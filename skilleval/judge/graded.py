"""Reply schemas, budgets and scoring rules of the promptfoo-compatible model-graded types.

``factuality``, ``model-graded-closedqa``, ``g-eval``, ``answer-relevance``, the three
``context-*`` types and ``select-best`` each ask the judge one narrow question, and each
reply is locked to a schema written the way :mod:`skilleval.judge.schemas` writes them:
closed objects, the reason before the verdict, ``enum`` for every verdict and score,
``prefixItems`` to pin one entry per statement. The functions that read a reply trust
nothing about it (a ``Judge`` is any object) and raise :class:`ImpossibleReply` for a reply
no schema here admits.

Texts the judge rules on one piece at a time (an output's sentences, a reference's, a
context's) are split here, by :func:`sentences`, so that the pieces are the same from run
to run whatever the judge would have made of them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from skilleval.errors import ImpossibleReply
from skilleval.judge.schemas import (
    REASON_CHARS,
    bounded_text,
    closed,
    pinned_list,
    verdicts_schema,
)
from skilleval.util.frozen import frozen

# -- factuality ------------------------------------------------------------------------------

CATEGORIES: Final = ("A", "B", "C", "D", "E")
"""promptfoo's factuality categories, in its order."""

CATEGORY_NAMES: Final = {
    "A": "subset",
    "B": "superset",
    "C": "agree",
    "D": "disagree",
    "E": "differButFactual",
}
"""Each category's key in ``options.factuality`` (promptfoo's names)."""

CATEGORY_MEANINGS: Final = {
    "A": "the output is a subset of the reference and consistent with it",
    "B": "the output is a superset of the reference and consistent with it",
    "C": "the output has the same details as the reference",
    "D": "the output and the reference disagree",
    "E": "they differ, but not in anything that matters for factuality",
}

DEFAULT_CATEGORY_SCORES: Final = {
    "subset": 1.0,
    "superset": 1.0,
    "agree": 1.0,
    "disagree": 0.0,
    "differButFactual": 1.0,
}
"""A category's score when ``options.factuality`` does not set it; a score above 0 passes."""

# -- g-eval ----------------------------------------------------------------------------------

GEVAL_STEPS: Final = 3
"""How many evaluation steps the judge writes for a criterion."""

GEVAL_SCORES: Final = tuple(range(11))
"""The g-eval score scale, 0..10."""

STEP_CHARS: Final = 160
"""Longest evaluation step or generated question."""

# -- answer-relevance, context-* ---------------------------------------------------------------

QUESTIONS: Final = 3
"""How many questions ``answer-relevance`` has the judge write for an output."""

UNIT_REASON_CHARS: Final = 120
"""Longest ``reason`` for one sentence's verdict."""

MAX_UNITS: Final = 40
"""The most sentences (or context chunks) one judge call rules on."""

SUPPORT: Final = ("SUPPORTED", "NOT_SUPPORTED")
"""What the judge may say about a sentence against a context (``context-recall``)."""

CLAIMS: Final = ("SUPPORTED", "NOT_SUPPORTED", "NO_CLAIM")
"""What it may say about a sentence of the output (``context-faithfulness``)."""

NEEDED: Final = ("NEEDED", "NOT_NEEDED")
"""What it may say about a piece of context (``context-relevance``)."""

_FRAME_TOKENS: Final = 24
_UNIT_FRAME_TOKENS: Final = 24


def factuality_schema() -> dict[str, Any]:
    """``{reason, category}``, the category one of A..E."""
    return closed(
        {
            "reason": bounded_text(REASON_CHARS),
            "category": {"type": "string", "enum": list(CATEGORIES)},
        }
    )


def closedqa_schema() -> dict[str, Any]:
    """``{reason, answer}``, the answer Y (the output meets the criterion) or N."""
    return closed(
        {"reason": bounded_text(REASON_CHARS), "answer": {"type": "string", "enum": ["Y", "N"]}}
    )


def steps_schema() -> dict[str, Any]:
    """``{steps}``: exactly :data:`GEVAL_STEPS` short evaluation steps."""
    return closed({"steps": pinned_list([bounded_text(STEP_CHARS)] * GEVAL_STEPS)})


def geval_schema() -> dict[str, Any]:
    """``{reason, score}``, the score an integer 0..10."""
    return closed(
        {
            "reason": bounded_text(REASON_CHARS),
            "score": {"type": "integer", "enum": list(GEVAL_SCORES)},
        }
    )


def questions_schema() -> dict[str, Any]:
    """``{questions}``: exactly :data:`QUESTIONS` questions the output answers."""
    return closed({"questions": pinned_list([bounded_text(STEP_CHARS)] * QUESTIONS)})


def units_schema(count: int, vocabulary: Sequence[str]) -> dict[str, Any]:
    """``{verdicts}``: one ``{id, reason, verdict}`` per numbered sentence, in order."""
    return verdicts_schema(count, vocabulary, UNIT_REASON_CHARS)


def select_schema(count: int) -> dict[str, Any]:
    """``{reason, best}``, ``best`` the 0-based index of one of ``count`` outputs."""
    return closed(
        {
            "reason": bounded_text(REASON_CHARS),
            "best": {"type": "integer", "enum": list(range(count))},
        }
    )


PREFERENCES: Final = ("A", "B", "tie")
"""What a side-by-side judge may answer: answer A is better, answer B is, or neither."""


def preference_schema() -> dict[str, Any]:
    """``{reason, better}``: which of two answers better meets one rubric item, or a tie."""
    return closed(
        {
            "reason": bounded_text(REASON_CHARS),
            "better": {"type": "string", "enum": list(PREFERENCES)},
        }
    )


def read_preference(reply: Any) -> tuple[str, str]:
    """A side-by-side reply: ``A``, ``B`` or ``tie``, and the reason."""
    body = _mapping(reply)
    return str(_choice(body, "better", PREFERENCES)), _text(body, "reason")


def verdict_budget() -> int:
    """``max_tokens`` for a ``{reason, <one word>}`` reply (factuality, closedqa, g-eval,
    select-best)."""
    return _FRAME_TOKENS + REASON_CHARS


def list_budget(count: int, chars: int = STEP_CHARS) -> int:
    """``max_tokens`` for a reply of ``count`` short texts (steps, questions)."""
    return _FRAME_TOKENS + count * (8 + chars)


def units_budget(count: int) -> int:
    """``max_tokens`` for a reply with one verdict per sentence."""
    return _FRAME_TOKENS + count * (_UNIT_FRAME_TOKENS + UNIT_REASON_CHARS)


# -- splitting -------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    """``text`` cut into its lines, and each line into sentences; blank pieces are dropped.

    A sentence ends at ``.``, ``!`` or ``?`` followed by white space. Abbreviations
    (``e.g. this``) are cut too: the pieces are what the judge rules on, so they only need to
    be the same every time.
    """
    out = []
    for line in text.splitlines():
        for piece in _SENTENCE_END.split(line):
            if piece.strip():
                out.append(piece.strip())
    return out


# -- reading replies -------------------------------------------------------------------------


def _mapping(reply: Any) -> Mapping[str, Any]:
    if not isinstance(reply, Mapping):
        raise ImpossibleReply(f"reply is {type(reply).__name__}, not an object")
    return reply


def _text(reply: Mapping[str, Any], key: str) -> str:
    value = reply.get(key)
    if not isinstance(value, str):
        raise ImpossibleReply(f"`{key}` is {value!r}, not a string")
    return value


def _choice(reply: Mapping[str, Any], key: str, allowed: Sequence[Any]) -> Any:
    value = reply.get(key)
    if isinstance(value, bool) or value not in allowed:
        shown = ", ".join(str(a) for a in allowed)
        raise ImpossibleReply(f"`{key}` is {value!r}, not one of {shown}")
    return value


def _texts(reply: Mapping[str, Any], key: str, count: int) -> list[str]:
    value = reply.get(key)
    if not isinstance(value, list) or len(value) != count:
        raise ImpossibleReply(f"`{key}` is not a list of {count} texts")
    if not all(isinstance(v, str) for v in value):
        raise ImpossibleReply(f"`{key}` holds something that is not a text")
    return list(value)


@frozen
class Category:
    """A factuality reply: the category, its promptfoo name, and the judge's reason."""

    letter: str
    name: str
    reason: str


def read_category(reply: Any) -> Category:
    """The category of a ``factuality`` reply."""
    body = _mapping(reply)
    reason = _text(body, "reason")
    letter = _choice(body, "category", CATEGORIES)
    return Category(letter, CATEGORY_NAMES[letter], reason)


def read_answer(reply: Any) -> tuple[bool, str]:
    """A ``model-graded-closedqa`` reply: whether the judge said Y, and its reason."""
    body = _mapping(reply)
    reason = _text(body, "reason")
    return _choice(body, "answer", ("Y", "N")) == "Y", reason


def read_steps(reply: Any) -> list[str]:
    """The evaluation steps of a g-eval steps reply."""
    return _texts(_mapping(reply), "steps", GEVAL_STEPS)


def read_score(reply: Any) -> tuple[int, str]:
    """A g-eval score reply: the score 0..10 and the reason."""
    body = _mapping(reply)
    reason = _text(body, "reason")
    return int(_choice(body, "score", GEVAL_SCORES)), reason


def read_questions(reply: Any) -> list[str]:
    """The questions of an answer-relevance reply."""
    return _texts(_mapping(reply), "questions", QUESTIONS)


def read_best(reply: Any, count: int) -> tuple[int, str]:
    """A select-best reply: the winner's 0-based index and the reason."""
    body = _mapping(reply)
    reason = _text(body, "reason")
    return int(_choice(body, "best", tuple(range(count)))), reason


@frozen
class UnitVerdict:
    """The judge's word on one numbered sentence."""

    id: int
    text: str
    verdict: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "verdict": self.verdict, "reason": self.reason}


def read_units(reply: Any, units: Sequence[str], vocabulary: Sequence[str]) -> list[UnitVerdict]:
    """One verdict per sentence, in order.

    Raises:
        ImpossibleReply: The list does not name each sentence exactly once, in order, or a
            verdict is outside ``vocabulary``.
    """
    entries = _mapping(reply).get("verdicts")
    if not isinstance(entries, list):
        raise ImpossibleReply("reply has no `verdicts` list")
    ids = [e.get("id") if isinstance(e, Mapping) else None for e in entries]
    want = list(range(1, len(units) + 1))
    if ids != want:
        raise ImpossibleReply(f"`verdicts` has ids {ids}; expected exactly {want}, in order")
    return [
        UnitVerdict(i, unit, _choice(entry, "verdict", vocabulary), _text(entry, "reason"))
        for i, (unit, entry) in enumerate(zip(units, entries, strict=True), start=1)
    ]
