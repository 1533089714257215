"""Embedding-graded types: ``similar`` (and its ``:cosine``, ``:dot``, ``:euclidean`` forms) and
``answer-relevance``.

Vectors come from the judge's model (the generator's unless ``judge:`` names another), through
:meth:`skilleval.judge.JudgeClient.embed`: a GGUF embeds through llama-cpp-python, an
OpenAI-compatible server through ``/v1/embeddings``. A model that cannot embed makes these
types an ``error`` ("provider echo cannot embed"), never a pass or a fail.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal

from skilleval.api import Check, TextEmbedder, Verdict, assertion
from skilleval.assertions.builtin._common import clip
from skilleval.assertions.builtin._graded import query_of
from skilleval.assertions.builtin.model import NO_JUDGE, check_rubric
from skilleval.errors import ImpossibleReply, ProviderError
from skilleval.judge import graded, prompts

Metric = Literal["cosine", "dot", "euclidean"]

SIMILAR_THRESHOLD: Final = 0.75
"""The ``similar`` pass mark when the assertion sets none (promptfoo's)."""
RELEVANCE_THRESHOLD: Final = 0.5
"""The ``answer-relevance`` pass mark when the assertion sets none."""

_TEXT_OR_LIST: Final[dict[str, Any]] = {
    "type": ["string", "array"],
    "minLength": 1,
    "minItems": 1,
    "items": {"type": "string", "minLength": 1},
}


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of the angle between two vectors; 0 when either is the zero vector."""
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    if norm == 0:
        return 0.0
    return sum(x * y for x, y in zip(a, b, strict=True)) / norm


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def euclidean(a: Sequence[float], b: Sequence[float]) -> float:
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b, strict=True)))


_MEASURES: Final[dict[Metric, Callable[[Sequence[float], Sequence[float]], float]]] = {
    "cosine": cosine,
    "dot": dot,
    "euclidean": euclidean,
}


def _embed(check: Check, texts: list[str]) -> list[list[float]] | Verdict:
    judge = check.judge
    if judge is None:
        return Verdict.errored(NO_JUDGE)
    if not isinstance(judge, TextEmbedder):
        return Verdict.errored("the judge cannot embed texts", details={"error_kind": "provider"})
    try:
        vectors = judge.embed(texts)
    except ProviderError as exc:
        return Verdict.errored(str(exc), details={"error_kind": getattr(exc, "kind", "provider")})
    if len(vectors) != len(texts) or len({len(v) for v in vectors}) != 1:
        return Verdict.errored("the judge's embeddings are not one vector per text, of one length")
    return vectors


def _similar(check: Check, metric: Metric) -> Verdict:
    """``similar:<metric>``: the output against the value (or each of a list of values)."""
    references = [check.value] if isinstance(check.value, str) else list(check.value or [])
    if not references or not all(isinstance(r, str) and r.strip() for r in references):
        return Verdict.errored("the expected text is blank once its variables are filled in")
    vectors = _embed(check, [check.output, *references])
    if isinstance(vectors, Verdict):
        return vectors
    output, rest = vectors[0], vectors[1:]
    measure = _MEASURES[metric]
    values = [measure(output, r) for r in rest]
    if not all(math.isfinite(v) for v in values):
        return Verdict.errored(f"the {metric} of the embeddings is not a finite number")
    threshold = SIMILAR_THRESHOLD if check.threshold is None else check.threshold
    if metric == "euclidean":
        # A distance: the closest reference decides, and it must not exceed the threshold.
        best = min(range(len(values)), key=values.__getitem__)
        passed = values[best] <= threshold
        score = 1.0 / (1.0 + values[best])
        verb = "≤" if passed else ">"
    else:
        best = max(range(len(values)), key=values.__getitem__)
        passed = values[best] >= threshold
        score = min(1.0, max(0.0, values[best]))
        verb = "≥" if passed else "<"
    which = (
        f" (closest of {len(values)}: {clip(references[best], 40)!r})" if len(values) > 1 else ""
    )
    return Verdict(
        passed=passed,
        reason=f"{metric} {values[best]:.3f} {verb} {threshold:g}{which}",
        score=score,
        details={
            "metric": metric,
            "values": [round(v, 6) for v in values],
            "best": best,
            "threshold": threshold,
        },
    )


@assertion("similar", value=_TEXT_OR_LIST, tier="model", check_value=check_rubric)
def similar(check: Check) -> Verdict:
    """The output's embedding is close to the value's: cosine similarity ≥ ``threshold`` (0.75).

    With a list of values, the closest one decides. ``not-similar`` therefore passes only
    when the output is far from every value. Score: the similarity, clipped to 0..1.
    """
    return _similar(check, "cosine")


@assertion("similar:cosine", value=_TEXT_OR_LIST, tier="model", check_value=check_rubric)
def similar_cosine(check: Check) -> Verdict:
    """``similar``, spelled with its metric."""
    return _similar(check, "cosine")


@assertion("similar:dot", value=_TEXT_OR_LIST, tier="model", check_value=check_rubric)
def similar_dot(check: Check) -> Verdict:
    """The dot product of the embeddings ≥ ``threshold`` (0.75); for normalised vectors, the cosine."""
    return _similar(check, "dot")


@assertion("similar:euclidean", value=_TEXT_OR_LIST, tier="model", check_value=check_rubric)
def similar_euclidean(check: Check) -> Verdict:
    """The Euclidean distance between the embeddings ≤ ``threshold`` (0.75): here the
    threshold is a largest distance. Score: 1 / (1 + distance)."""
    return _similar(check, "euclidean")


@assertion("answer-relevance", value=None, tier="model")
def answer_relevance(check: Check) -> Verdict:
    """The judge writes the questions the output answers; their mean cosine similarity to the
    query (``vars.query``, else the prompt) must reach ``threshold`` (0.5).

    One judge call writes three questions from the output alone; the question and the
    three are then embedded by the judge's model. An output that answers something else
    gets questions far from the query.
    """
    if check.judge is None:
        return Verdict.errored(NO_JUDGE)
    threshold = RELEVANCE_THRESHOLD if check.threshold is None else check.threshold
    if not 0.0 <= threshold <= 1.0:
        return Verdict.errored(
            f"answer-relevance threshold must be between 0 and 1, not {threshold:g}"
        )
    if not isinstance(check.judge, TextEmbedder):
        return Verdict.errored("the judge cannot embed texts", details={"error_kind": "provider"})
    query = query_of(check)
    if not query.strip():
        return Verdict.errored("no query: set vars.query, or give the test a prompt")
    messages = prompts.graded_messages(
        "questions", {"output": check.output, "count": graded.QUESTIONS}
    )
    try:
        reply = check.judge.complete_json(
            messages, graded.questions_schema(), graded.list_budget(graded.QUESTIONS)
        )
    except ProviderError as exc:
        return Verdict.errored(str(exc), details={"error_kind": getattr(exc, "kind", "provider")})
    try:
        questions = graded.read_questions(reply)
    except ImpossibleReply as exc:
        return Verdict.errored(
            f"judge reply is impossible: {exc}",
            details={"error_kind": "impossible", "judge_reply": reply},
        )
    vectors = _embed(check, [query, *questions])
    if isinstance(vectors, Verdict):
        return vectors
    sims = [cosine(vectors[0], v) for v in vectors[1:]]
    mean = sum(sims) / len(sims)
    passed = mean >= threshold
    verb = "≥" if passed else "<"
    return Verdict(
        passed=passed,
        reason=f"mean cosine of {len(sims)} generated questions to the query {mean:.3f} {verb} {threshold:g}",
        score=min(1.0, max(0.0, mean)),
        details={
            "judge_reply": reply,
            "questions": questions,
            "similarities": [round(s, 6) for s in sims],
            "score": mean,
            "threshold": threshold,
        },
    )
