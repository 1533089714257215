"""A free-text ``llm-rubric`` verdict read from the score scale's log-probabilities.

When the judge's model scores choices (``Capabilities.scores``), the verdict of a rubric (one
text, or a list of items) is one choice request over the score scale ``1``..``5``: the model scores
each digit as the whole reply, and nothing is sampled. The log-probabilities, normalised over
the five options, give a distribution over scores; the verdict's score is its expectation
(:data:`VERDICT_RULE`), a number between 1 and 5 rather than a whole one, so that two outputs
the model leans on differently do not tie. The reason, when one is written at all, comes
after the verdict in a second call that is told the verdict (:func:`reason_schema`); for a
list rubric that call also writes the per-item ``checks``.

A judge that can score choices says so through :class:`ChoiceJudge`; any other judge (an
OpenAI-compatible server, the scripted model, a plugin's own) gets the written
``{reason, score, pass}`` reply as before.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, Protocol, runtime_checkable

from skilleval.api import Capabilities
from skilleval.errors import ImpossibleReply
from skilleval.judge.schemas import (
    CHECK_FRAME_TOKENS,
    NOTES_CHARS,
    SCORES,
    bounded_text,
    checks_schema,
    closed,
)
from skilleval.util.frozen import frozen

Rule = Literal["expectation", "argmax"]

SCORE_CHOICES: Final = tuple(str(s) for s in SCORES)
"""The options of the verdict's choice request: the score scale's digits."""

VERDICT_RULE: Final[Rule] = "expectation"
"""How the score comes from the options' probabilities: their expectation (``argmax`` would
be the most likely digit). Part of the judge's fitness key."""

MODE: Final = f"scored-{VERDICT_RULE}"
"""What a judge that scores choices says about its ``llm-rubric`` verdicts (``describe()``)."""

WRITTEN: Final = "written"
"""What a judge that writes its verdict says instead."""

REASON_CHARS: Final = 200
"""Longest reason written after a scored verdict."""

_REASON_FRAME_TOKENS: Final = 8


def scores_verdicts(capabilities: Capabilities) -> bool:
    """Whether a judge on a provider with these capabilities reads its rubric verdicts from
    choice scores: it declares ``scores`` and is ``measured``, so the scores are a model's
    own. The scripted model declares ``scores`` for the routing replies a suite writes; its
    judge replies are written too, so it keeps the written verdict."""
    return capabilities.scores and capabilities.measured


@runtime_checkable
class ChoiceJudge(Protocol):
    """A judge that can score a closed set of replies, and knows whether reasons are read."""

    reasons: bool
    """Write a reason for a failing scored verdict (False where nothing shows reasons, as
    in the fitness check)."""

    def score_choices(
        self, messages: Sequence[Mapping[str, str]], choices: Sequence[str]
    ) -> Mapping[str, float] | None:
        """Each choice's log-probability as the whole reply; None when the model cannot
        score them, and the written reply must be asked for instead."""
        ...


@frozen
class ScoredVerdict:
    """The score scale's log-probabilities, and the score they give."""

    logprobs: Mapping[str, float]
    """Each option's log-probability as the judge's reply."""
    probabilities: Mapping[int, float]
    """Each score's probability, normalised over the scale."""
    score: float
    """The verdict's score on 1..5 under :data:`VERDICT_RULE`."""
    likeliest: int
    """The most probable score (the lowest on a tie)."""


def read_scores(logprobs: Mapping[str, float], rule: Rule = VERDICT_RULE) -> ScoredVerdict:
    """The verdict the options' log-probabilities give.

    Raises:
        ImpossibleReply: A score of the scale has no finite log-probability.
    """
    missing = [c for c in SCORE_CHOICES if c not in logprobs]
    if missing:
        raise ImpossibleReply(f"the judge scored no option {', '.join(missing)}")
    values = {int(c): float(logprobs[c]) for c in SCORE_CHOICES}
    if not all(math.isfinite(v) for v in values.values()):
        raise ImpossibleReply("the judge gave an option a log-probability that is not finite")
    top = max(values.values())
    weights = {s: math.exp(v - top) for s, v in values.items()}
    total = sum(weights.values())
    probabilities = {s: w / total for s, w in weights.items()}
    likeliest = max(SCORES, key=lambda s: (values[s], -s))
    expected = sum(s * p for s, p in probabilities.items())
    score = expected if rule == "expectation" else float(likeliest)
    return ScoredVerdict(
        logprobs={c: values[int(c)] for c in SCORE_CHOICES},
        probabilities=probabilities,
        score=min(max(score, SCORES[0]), SCORES[-1]),
        likeliest=likeliest,
    )


def reason_schema(items: int = 0) -> dict[str, Any]:
    """The reply schema of the reason written after a scored verdict: ``{reason}``, and for a
    rubric of ``items`` items the ``checks`` a written verdict has, one per item."""
    properties: dict[str, Any] = {"reason": bounded_text(REASON_CHARS)}
    if items:
        properties["checks"] = checks_schema(items)
    return closed(properties)


def reason_budget(items: int = 0) -> int:
    """``max_tokens`` for the reason: a token is at least one character, so this fits."""
    return _REASON_FRAME_TOKENS + REASON_CHARS + items * (CHECK_FRAME_TOKENS + NOTES_CHARS)
