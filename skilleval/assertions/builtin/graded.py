"""promptfoo's model-graded types on skilleval's judge.

``factuality``, ``model-graded-closedqa``, ``g-eval``, ``context-faithfulness``,
``context-recall``, ``context-relevance`` and ``select-best`` keep promptfoo's names, values
and pass rules, with skilleval's judge underneath: greedy seeded calls, replies locked to a
schema (:mod:`skilleval.judge.graded`), a failed or impossible reply an ``error`` verdict, never
a pass or a fail. The prompts are skilleval's own (``judge/templates/``).

Where a rule differs from promptfoo's, the docstring says so; docs/assertions.md has the table.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from skilleval.api import Check, Judge, Verdict, assertion
from skilleval.assertions.builtin._common import clip
from skilleval.assertions.builtin.model import NO_JUDGE, check_rubric
from skilleval.errors import ImpossibleReply, ProviderError
from skilleval.judge import graded, prompts

_TEXT: Final[dict[str, Any]] = {"type": "string", "minLength": 1}
_TEXT_OR_LIST: Final[dict[str, Any]] = {
    "type": ["string", "array"],
    "minLength": 1,
    "minItems": 1,
    "items": {"type": "string", "minLength": 1},
}
_SCORE_01: Final[dict[str, Any]] = {"type": "number", "minimum": 0, "maximum": 1}
_FACTUALITY_OPTIONS: Final[dict[str, Any]] = {
    "options": {
        "type": "object",
        "description": "promptfoo's grading options; `factuality` scores each category 0..1.",
        "additionalProperties": False,
        "properties": {
            "factuality": {
                "type": "object",
                "additionalProperties": False,
                "properties": {name: _SCORE_01 for name in graded.DEFAULT_CATEGORY_SCORES},
            }
        },
    }
}
_CONTEXT_TRANSFORM: Final[dict[str, Any]] = {
    "contextTransform": {
        "description": "Where the context comes from instead of vars.context: a transform of the output.",
    }
}

GEVAL_THRESHOLD: Final = 0.7
"""The g-eval pass mark when the assertion sets none (promptfoo's)."""
CONTEXT_THRESHOLD: Final = 0.5
"""The context-* pass mark when the assertion sets none (promptfoo's is 0, which passes all)."""


class _Failed(Exception):
    """A verdict to return at once (an error), raised from deep in a grader."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.reason)
        self.verdict = verdict


def _ask(
    judge: Judge, messages: list[dict[str, str]], schema: Mapping[str, Any], budget: int
) -> Any:
    try:
        return judge.complete_json(messages, schema, budget)
    except ProviderError as exc:
        kind = getattr(exc, "kind", "provider")
        raise _Failed(Verdict.errored(str(exc), details={"error_kind": kind})) from None


def _impossible(exc: ImpossibleReply, reply: Any) -> Verdict:
    return Verdict.errored(
        f"judge reply is impossible: {exc}",
        details={"error_kind": "impossible", "judge_reply": reply},
    )


def _judge(check: Check) -> Judge:
    if check.judge is None:
        raise _Failed(Verdict.errored(NO_JUDGE))
    return check.judge


def _no_threshold(check: Check, name: str, instead: str) -> None:
    if check.threshold is not None:
        raise _Failed(Verdict.errored(f"{name} takes no threshold; {instead}"))


def _unit_threshold(check: Check, name: str, default: float) -> float:
    if check.threshold is None:
        return default
    if not 0.0 <= check.threshold <= 1.0:
        raise _Failed(
            Verdict.errored(f"{name} threshold must be between 0 and 1, not {check.threshold:g}")
        )
    return check.threshold


def _text_value(check: Check, noun: str) -> str:
    value = check.value
    if not isinstance(value, str) or not value.strip():
        raise _Failed(Verdict.errored(f"the {noun} is blank once its variables are filled in"))
    return value


def query_of(check: Check) -> str:
    """The question the output answers: ``vars.query`` when it is a text, else the prompt."""
    query = check.vars.get("query")
    return query if isinstance(query, str) and query.strip() else check.prompt


def _guarded(grader: Callable[[Check], Verdict]) -> Callable[[Check], Verdict]:
    """Run a grader body; a :class:`_Failed` raised inside becomes its verdict."""

    @functools.wraps(grader)
    def run(check: Check) -> Verdict:
        try:
            return grader(check)
        except _Failed as failed:
            return failed.verdict

    return run


# --- factuality -----------------------------------------------------------------------------


def category_scores(check: Check) -> dict[str, float]:
    """Each category's score: promptfoo's defaults, overridden by ``options.factuality``."""
    raw = check.options.get("options")
    chosen = raw.get("factuality") if isinstance(raw, Mapping) else None
    scores = dict(graded.DEFAULT_CATEGORY_SCORES)
    if isinstance(chosen, Mapping):
        scores.update({k: float(v) for k, v in chosen.items() if k in scores})
    return scores


@assertion(
    "factuality",
    value=_TEXT,
    tier="model",
    check_value=check_rubric,
    options=_FACTUALITY_OPTIONS,
)
@_guarded
def factuality(check: Check) -> Verdict:
    """The judge places the output's facts against a reference answer in one of five categories.

    The value is the reference. The categories are promptfoo's: A subset, B superset, C the
    same, D disagree, E differ in what does not matter. Each has a score (``options.factuality``:
    ``subset``, ``superset``, ``agree``, ``disagree``, ``differButFactual``; by default 1 but
    ``disagree`` 0), and the assertion passes when its category's score is above 0.
    """
    judge = _judge(check)
    reference = _text_value(check, "reference")
    _no_threshold(check, "factuality", "set each category's score in options.factuality")
    variables = {
        **check.vars,
        "question": check.prompt,
        "reference": reference,
        "output": check.output,
        "categories": graded.CATEGORY_MEANINGS,
    }
    messages = prompts.graded_messages("factuality", variables)
    reply = _ask(judge, messages, graded.factuality_schema(), graded.verdict_budget())
    try:
        category = graded.read_category(reply)
    except ImpossibleReply as exc:
        return _impossible(exc, reply)
    score = category_scores(check)[category.name]
    passed = score > 0
    head = f"category {category.letter} ({category.name}), score {score:g}"
    return Verdict(
        passed=passed,
        reason=f"{head}: {clip(category.reason)}" if category.reason.strip() else head,
        score=score,
        details={
            "judge_reply": reply,
            "category": category.letter,
            "category_name": category.name,
            "score": score,
        },
    )


# --- model-graded-closedqa ------------------------------------------------------------------


@assertion("model-graded-closedqa", value=_TEXT, tier="model", check_value=check_rubric)
@_guarded
def closedqa(check: Check) -> Verdict:
    """The judge answers Y or N: does the output meet the criterion (the value)?

    Passes on Y. The reply is locked to Y or N, so an answer that is neither is an ``error``,
    where promptfoo would count it a fail.
    """
    judge = _judge(check)
    criterion = _text_value(check, "criterion")
    _no_threshold(check, "model-graded-closedqa", "it passes on Y and fails on N")
    variables = {
        **check.vars,
        "criterion": criterion,
        "prompt": check.prompt,
        "output": check.output,
    }
    messages = prompts.graded_messages("closedqa", variables)
    reply = _ask(judge, messages, graded.closedqa_schema(), graded.verdict_budget())
    try:
        meets, reason = graded.read_answer(reply)
    except ImpossibleReply as exc:
        return _impossible(exc, reply)
    head = "judge answered Y" if meets else "judge answered N"
    return Verdict(
        passed=meets,
        reason=f"{head}: {clip(reason)}" if reason.strip() else head,
        details={"judge_reply": reply, "answer": "Y" if meets else "N"},
    )


# --- g-eval ---------------------------------------------------------------------------------


@assertion("g-eval", value=_TEXT_OR_LIST, tier="model", check_value=check_rubric)
@_guarded
def g_eval(check: Check) -> Verdict:
    """G-Eval: the judge writes evaluation steps for each criterion, then scores the output 0..10.

    Two calls per criterion: the steps (which do not depend on the output, so they come from
    the response cache after the first test), then the score. The score is divided by 10 and,
    for a list of criteria, averaged; the assertion passes when it reaches ``threshold``
    (default 0.7).
    """
    judge = _judge(check)
    threshold = _unit_threshold(check, "g-eval", GEVAL_THRESHOLD)
    criteria = [check.value] if isinstance(check.value, str) else list(check.value or [])
    if not criteria or not all(isinstance(c, str) and c.strip() for c in criteria):
        return Verdict.errored("the criteria are blank once their variables are filled in")
    graded_criteria: list[dict[str, Any]] = []
    for criterion in criteria:
        steps_messages = prompts.graded_messages(
            "geval_steps", {"criterion": criterion, "count": graded.GEVAL_STEPS}
        )
        steps_reply = _ask(
            judge, steps_messages, graded.steps_schema(), graded.list_budget(graded.GEVAL_STEPS)
        )
        try:
            steps = graded.read_steps(steps_reply)
        except ImpossibleReply as exc:
            return _impossible(exc, steps_reply)
        variables = {
            **check.vars,
            "criterion": criterion,
            "steps": steps,
            "prompt": check.prompt,
            "output": check.output,
        }
        messages = prompts.graded_messages("geval_score", variables)
        reply = _ask(judge, messages, graded.geval_schema(), graded.verdict_budget())
        try:
            score, reason = graded.read_score(reply)
        except ImpossibleReply as exc:
            return _impossible(exc, reply)
        graded_criteria.append(
            {"criterion": criterion, "steps": steps, "score": score, "reason": reason}
        )
    mean = sum(c["score"] for c in graded_criteria) / (10 * len(graded_criteria))
    passed = mean >= threshold
    scores = ", ".join(f"{c['score']}/10" for c in graded_criteria)
    verb = "≥" if passed else "<"
    head = f"score {scores} → {mean:.2f} {verb} {threshold:g}"
    reason = graded_criteria[0]["reason"] if len(graded_criteria) == 1 else ""
    return Verdict(
        passed=passed,
        reason=f"{head}: {clip(reason)}" if reason.strip() else head,
        score=mean,
        details={"criteria": graded_criteria, "score": mean, "threshold": threshold},
    )


# --- context-* ------------------------------------------------------------------------------


def context_of(check: Check) -> list[str]:
    """The context as pieces: ``contextTransform``'s result, else ``vars.context``.

    A list stays as its items; a text is cut into sentences.
    """
    raw = check.context if check.context is not None else check.vars.get("context")
    where = "contextTransform" if check.context is not None else "vars.context"
    if raw is None:
        raise _Failed(
            Verdict.errored("no context: set vars.context, or contextTransform on the assertion")
        )
    if isinstance(raw, str):
        pieces = graded.sentences(raw)
    elif isinstance(raw, list) and all(isinstance(p, str) for p in raw):
        pieces = [p.strip() for p in raw if p.strip()]
    else:
        raise _Failed(
            Verdict.errored(f"{where} must be a text or a list of texts, not {type(raw).__name__}")
        )
    if not pieces:
        raise _Failed(Verdict.errored(f"{where} is empty"))
    return pieces


def _units(pieces: list[str], what: str) -> list[str]:
    if len(pieces) > graded.MAX_UNITS:
        raise _Failed(
            Verdict.errored(
                f"{what} has {len(pieces)} sentences; one judge call rules on at most "
                f"{graded.MAX_UNITS}"
            )
        )
    return pieces


def _rule_on(
    judge: Judge,
    template: str,
    units: list[str],
    vocabulary: Sequence[str],
    variables: Mapping[str, Any],
) -> tuple[list[graded.UnitVerdict], Any]:
    messages = prompts.graded_messages(
        template, {**variables, "units": units, "vocabulary": list(vocabulary)}
    )
    schema = graded.units_schema(len(units), vocabulary)
    reply = _ask(judge, messages, schema, graded.units_budget(len(units)))
    try:
        return graded.read_units(reply, units, vocabulary), reply
    except ImpossibleReply as exc:
        raise _Failed(_impossible(exc, reply)) from None


def _share(
    name: str,
    verdicts: list[graded.UnitVerdict],
    good: str,
    counted: Sequence[str],
    threshold: float,
    reply: Any,
    noun: str,
) -> Verdict:
    scored = [v for v in verdicts if v.verdict in counted]
    held = sum(1 for v in scored if v.verdict == good)
    score = held / len(scored) if scored else 1.0
    passed = score >= threshold
    verb = "≥" if passed else "<"
    head = f"{name} {score:.2f} ({held}/{len(scored)} {noun}) {verb} {threshold:g}"
    if not scored:
        head = f"{name} 1 (nothing to check: every sentence was {', '.join(sorted({v.verdict for v in verdicts}))}) ≥ {threshold:g}"
    missed = next((v for v in scored if v.verdict != good), None)
    if missed is not None and not passed:
        head += f"; first {missed.verdict}: {clip(missed.text, 60)!r}"
    return Verdict(
        passed=passed,
        reason=head,
        score=score,
        details={
            "judge_reply": reply,
            "score": score,
            "threshold": threshold,
            "verdicts": [v.to_json() for v in verdicts],
        },
    )


@assertion(
    "context-faithfulness",
    value=None,
    tier="model",
    options=_CONTEXT_TRANSFORM,
)
@_guarded
def context_faithfulness(check: Check) -> Verdict:
    """The judge checks each sentence of the output against the context: is it supported?

    Sentences that state nothing (a greeting, an offer) are set aside; the score is the share
    of the others that the context supports, and the assertion passes when it reaches
    ``threshold`` (default 0.5). The context is ``vars.context`` or the assertion's
    ``contextTransform``.
    """
    judge = _judge(check)
    threshold = _unit_threshold(check, "context-faithfulness", CONTEXT_THRESHOLD)
    context = context_of(check)
    units = _units(graded.sentences(check.output), "the output")
    if not units:
        return Verdict.errored("the output is empty; there is nothing to check against the context")
    verdicts, reply = _rule_on(
        judge,
        "context_support",
        units,
        graded.CLAIMS,
        {"context": "\n".join(context), "subject": "output", "query": query_of(check)},
    )
    return _share(
        "faithfulness",
        verdicts,
        "SUPPORTED",
        ("SUPPORTED", "NOT_SUPPORTED"),
        threshold,
        reply,
        "claims supported",
    )


@assertion(
    "context-recall",
    value=_TEXT,
    tier="model",
    check_value=check_rubric,
    options=_CONTEXT_TRANSFORM,
)
@_guarded
def context_recall(check: Check) -> Verdict:
    """The judge checks each sentence of the ground truth (the value) against the context.

    The score is the share of them the context supports; the assertion passes when it reaches
    ``threshold`` (default 0.5).
    """
    judge = _judge(check)
    threshold = _unit_threshold(check, "context-recall", CONTEXT_THRESHOLD)
    context = context_of(check)
    units = _units(graded.sentences(_text_value(check, "ground truth")), "the value")
    verdicts, reply = _rule_on(
        judge,
        "context_support",
        units,
        graded.SUPPORT,
        {"context": "\n".join(context), "subject": "reference", "query": ""},
    )
    return _share(
        "recall", verdicts, "SUPPORTED", graded.SUPPORT, threshold, reply, "sentences found"
    )


@assertion(
    "context-relevance",
    value=None,
    tier="model",
    options=_CONTEXT_TRANSFORM,
)
@_guarded
def context_relevance(check: Check) -> Verdict:
    """The judge marks each piece of the context as needed to answer the query, or not.

    The query is ``vars.query`` (else the prompt); the pieces are the items of a list context,
    or the sentences of a text. The score is the share needed; the assertion passes when it
    reaches ``threshold`` (default 0.5).
    """
    judge = _judge(check)
    threshold = _unit_threshold(check, "context-relevance", CONTEXT_THRESHOLD)
    units = _units(context_of(check), "the context")
    verdicts, reply = _rule_on(
        judge, "context_needed", units, graded.NEEDED, {"query": query_of(check)}
    )
    return _share("relevance", verdicts, "NEEDED", graded.NEEDED, threshold, reply, "pieces needed")


# --- select-best ----------------------------------------------------------------------------


@assertion(
    "select-best",
    value=_TEXT,
    tier="model",
    check_value=check_rubric,
    compares=True,
)
def select_best(checks: Sequence[Check]) -> list[Verdict]:
    """The judge picks, among the outputs of one test for each prompt, the one that best meets
    the criterion (the value); that output passes and the others fail.

    The outputs compared are those of the same test, arm and trial under each of the suite's
    prompts. One judge call sees them all, numbered from 0.
    """
    first = checks[0]
    count = len(checks)
    if count < 2:
        return [
            Verdict.errored(
                "select-best needs at least two outputs of this test to compare; list two or "
                "more `prompts:`"
            )
        ] * count
    if first.judge is None:
        return [Verdict.errored(NO_JUDGE)] * count
    if not isinstance(first.value, str) or not first.value.strip():
        return [Verdict.errored("the criterion is blank once its variables are filled in")] * count
    variables = {**first.vars, "criterion": first.value, "outputs": [c.output for c in checks]}
    messages = prompts.graded_messages("select_best", variables)
    try:
        reply = _ask(first.judge, messages, graded.select_schema(count), graded.verdict_budget())
        best, reason = graded.read_best(reply, count)
    except _Failed as failed:
        return [failed.verdict] * count
    except ImpossibleReply as exc:
        return [_impossible(exc, reply)] * count
    out = []
    for i in range(count):
        won = i == best
        head = f"output {i} of {count} {'chosen' if won else 'not chosen'}; output {best} won"
        out.append(
            Verdict(
                passed=won,
                reason=f"{head}: {clip(reason)}" if reason.strip() else head,
                details={"judge_reply": reply, "chosen": best, "index": i, "outputs": count},
            )
        )
    return out


@assertion(
    "model-graded-factuality",
    value=_TEXT,
    tier="model",
    check_value=check_rubric,
    options=_FACTUALITY_OPTIONS,
)
def model_graded_factuality(check: Check) -> Verdict:
    """``factuality`` under its older promptfoo name."""
    verdict: Verdict = factuality(check)
    return verdict
