"""promptfoo's model-graded types on skilleval's judge.

``factuality``, ``model-graded-closedqa``, ``g-eval`` and ``select-best`` (the ``context-*``
types are in :mod:`.context`) keep promptfoo's names, values and pass rules, with skilleval's
judge underneath: greedy seeded calls, replies locked to a schema
(:mod:`skilleval.judge.graded`), a failed or impossible reply an ``error`` verdict, never a
pass or a fail. The prompts are skilleval's own (``judge/templates/``).

Where a rule differs from promptfoo's, the docstring says so; docs/assertions.md has the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.builtin._common import clip
from skilleval.assertions.builtin._graded import (
    TEXT,
    TEXT_OR_LIST,
    Failed,
    ask,
    guarded,
    impossible,
    judge_of,
    no_threshold,
    text_value,
    unit_threshold,
)
from skilleval.assertions.builtin.model import NO_JUDGE, check_rubric
from skilleval.errors import ImpossibleReply
from skilleval.judge import graded, prompts

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

GEVAL_THRESHOLD: Final = 0.7
"""The g-eval pass mark when the assertion sets none (promptfoo's)."""


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
    value=TEXT,
    tier="model",
    check_value=check_rubric,
    options=_FACTUALITY_OPTIONS,
)
@guarded
def factuality(check: Check) -> Verdict:
    """The judge places the output's facts against a reference answer in one of five categories.

    The value is the reference. The categories are promptfoo's: A subset, B superset, C the
    same, D disagree, E differ in what does not matter. Each has a score (``options.factuality``:
    ``subset``, ``superset``, ``agree``, ``disagree``, ``differButFactual``; by default 1 but
    ``disagree`` 0), and the assertion passes when its category's score is above 0.
    """
    judge = judge_of(check)
    reference = text_value(check, "reference")
    no_threshold(check, "factuality", "set each category's score in options.factuality")
    variables = {
        **check.vars,
        "question": check.prompt,
        "reference": reference,
        "output": check.output,
        "categories": graded.CATEGORY_MEANINGS,
    }
    messages = prompts.graded_messages("factuality", variables)
    reply = ask(judge, messages, graded.factuality_schema(), graded.verdict_budget())
    try:
        category = graded.read_category(reply)
    except ImpossibleReply as exc:
        return impossible(exc, reply)
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


@assertion("model-graded-closedqa", value=TEXT, tier="model", check_value=check_rubric)
@guarded
def closedqa(check: Check) -> Verdict:
    """The judge answers Y or N: does the output meet the criterion (the value)?

    Passes on Y. The reply is locked to Y or N, so an answer that is neither is an ``error``,
    where promptfoo would count it a fail.
    """
    judge = judge_of(check)
    criterion = text_value(check, "criterion")
    no_threshold(check, "model-graded-closedqa", "it passes on Y and fails on N")
    variables = {
        **check.vars,
        "criterion": criterion,
        "prompt": check.prompt,
        "output": check.output,
    }
    messages = prompts.graded_messages("closedqa", variables)
    reply = ask(judge, messages, graded.closedqa_schema(), graded.verdict_budget())
    try:
        meets, reason = graded.read_answer(reply)
    except ImpossibleReply as exc:
        return impossible(exc, reply)
    head = "judge answered Y" if meets else "judge answered N"
    return Verdict(
        passed=meets,
        reason=f"{head}: {clip(reason)}" if reason.strip() else head,
        details={"judge_reply": reply, "answer": "Y" if meets else "N"},
    )


# --- g-eval ---------------------------------------------------------------------------------


@assertion("g-eval", value=TEXT_OR_LIST, tier="model", check_value=check_rubric)
@guarded
def g_eval(check: Check) -> Verdict:
    """G-Eval: the judge writes evaluation steps for each criterion, then scores the output 0..10.

    Two calls per criterion: the steps (which do not depend on the output, so they come from
    the response cache after the first test), then the score. The score is divided by 10 and,
    for a list of criteria, averaged; the assertion passes when it reaches ``threshold``
    (default 0.7).
    """
    judge = judge_of(check)
    threshold = unit_threshold(check, "g-eval", GEVAL_THRESHOLD)
    criteria = [check.value] if isinstance(check.value, str) else list(check.value or [])
    if not criteria or not all(isinstance(c, str) and c.strip() for c in criteria):
        return Verdict.errored("the criteria are blank once their variables are filled in")
    graded_criteria: list[dict[str, Any]] = []
    for criterion in criteria:
        steps_messages = prompts.graded_messages(
            "geval_steps", {"criterion": criterion, "count": graded.GEVAL_STEPS}
        )
        steps_reply = ask(
            judge, steps_messages, graded.steps_schema(), graded.list_budget(graded.GEVAL_STEPS)
        )
        try:
            steps = graded.read_steps(steps_reply)
        except ImpossibleReply as exc:
            return impossible(exc, steps_reply)
        variables = {
            **check.vars,
            "criterion": criterion,
            "steps": steps,
            "prompt": check.prompt,
            "output": check.output,
        }
        messages = prompts.graded_messages("geval_score", variables)
        reply = ask(judge, messages, graded.geval_schema(), graded.verdict_budget())
        try:
            score, reason = graded.read_score(reply)
        except ImpossibleReply as exc:
            return impossible(exc, reply)
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


# --- select-best ----------------------------------------------------------------------------


@assertion(
    "select-best",
    value=TEXT,
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
        reply = ask(first.judge, messages, graded.select_schema(count), graded.verdict_budget())
        best, reason = graded.read_best(reply, count)
    except Failed as failed:
        return [failed.verdict] * count
    except ImpossibleReply as exc:
        return [impossible(exc, reply)] * count
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
    value=TEXT,
    tier="model",
    check_value=check_rubric,
    options=_FACTUALITY_OPTIONS,
)
def model_graded_factuality(check: Check) -> Verdict:
    """``factuality`` under its older promptfoo name."""
    verdict: Verdict = factuality(check)
    return verdict
