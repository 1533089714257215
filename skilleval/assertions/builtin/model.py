"""Model-graded assertions: a judge model grades the output against a rubric or statements.

Both types ask the judge (``check.judge``, set by the runner) for a reply locked to a JSON
Schema (see :mod:`skilleval.judge.schemas`) and score it with the pure rules in
:mod:`skilleval.judge.scoring`. A judge that cannot give a usable reply makes an error
verdict, never a pass or a fail.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.builtin._common import clip
from skilleval.errors import ImpossibleReply, PromptProblem, ProviderError
from skilleval.judge import choice, prompts, schemas
from skilleval.judge.leak import copied_example
from skilleval.judge.scoring import (
    AssertGrade,
    RubricGrade,
    StatementVerdict,
    grade_rubric,
    grade_scored,
    grade_statements,
    read_checks,
)
from skilleval.suite import template

_TEXT_OR_LIST: Final[dict[str, Any]] = {
    "type": ["string", "array"],
    "minLength": 1,
    "minItems": 1,
    "items": {"type": "string", "minLength": 1},
}
_RUBRIC_PROMPT: Final[dict[str, Any]] = {
    "description": "Replaces the judge prompt: a template string, or a list of {role, content}.",
    "anyOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "role": {"enum": ["system", "user", "assistant"]},
                    "content": {"type": "string"},
                },
                "required": ["role", "content"],
                "additionalProperties": False,
            },
        },
    ],
}
_RUBRIC_OPTIONS: Final[dict[str, Any]] = {
    "reference": {"type": "string", "description": "A reference answer shown to the judge."},
    "rubricPrompt": _RUBRIC_PROMPT,
}
_ASSERT_OPTIONS: Final[dict[str, Any]] = {
    "require": {"enum": ["all", "any"], "description": "How the statements combine."},
}

NO_JUDGE = "no judge model configured"


def _blank(value: Any, noun: str) -> str | None:
    if isinstance(value, str):
        return f"the {noun} is blank" if not value.strip() else None
    if isinstance(value, list):
        if not value:
            return f"the {noun} list is empty"
        for i, item in enumerate(value, start=1):
            if isinstance(item, str) and not item.strip():
                return f"{noun} {i} is blank"
    return None


def check_rubric(value: Any) -> str | None:
    """Why ``value`` cannot be a rubric (blank text, or an empty or blank item); None if it can."""
    return _blank(value, "rubric")


def check_statements(value: Any) -> str | None:
    """Why ``value`` cannot be a list of statements; None if it can."""
    return _blank(value, "statement")


def _as_items(value: Any, noun: str) -> tuple[list[str], str | None]:
    """The rendered value as a list of texts, or a problem to report as an error."""
    problem = _blank(value, noun)
    if problem is not None:
        return [], f"{problem} once its variables are filled in"
    if isinstance(value, str):
        return [value], None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value), None
    return [], f"the {noun} must be a text or a list of texts"


def _judge_failed(exc: ProviderError) -> Verdict:
    kind = getattr(exc, "kind", "provider")
    return Verdict.errored(str(exc), details={"error_kind": kind})


def _impossible(exc: ImpossibleReply, reply: Any) -> Verdict:
    return Verdict.errored(
        f"judge reply is impossible: {exc}",
        details={"error_kind": "impossible", "judge_reply": reply},
    )


def _reference(check: Check) -> tuple[str, str | None]:
    raw = check.options.get("reference")
    if raw is None:
        return "", None
    if not isinstance(raw, str):
        return "", "reference must be a text"
    try:
        return template.render(raw, check.vars), None
    except template.TemplateProblem as exc:
        return "", f"reference: {exc.message}"


# --- llm-rubric -------------------------------------------------------------------------------


@assertion(
    "llm-rubric",
    value=_TEXT_OR_LIST,
    tier="model",
    check_value=check_rubric,
    options=_RUBRIC_OPTIONS,
)
def llm_rubric(check: Check) -> Verdict:
    """A judge model grades the output against a rubric (a text, or a list of items) from 1 to 5.

    The judge replies with ``reason``, ``score`` (1..5), ``pass`` and, for a list rubric, one
    ``check`` per item. The score maps to (score − 1) / 4. The assertion passes when the
    judge's ``pass`` is true AND the mapped score is at least ``threshold`` (default 0.5).
    The judge sees the prompt, the output, the rubric and the optional ``reference``;
    ``rubricPrompt`` replaces the packaged judge prompt.

    A rubric given as one text, with the packaged prompt, is graded from choice scores when
    the judge's model gives them (:mod:`skilleval.judge.choice`): the score is the expected
    score under the scale's probabilities, the assertion passes when its mapped score reaches
    ``threshold``, and a reason is written afterwards for a failing verdict only.
    """
    if check.judge is None:
        return Verdict.errored(NO_JUDGE)
    items, problem = _as_items(check.value, "rubric")
    if problem is not None and check.value == "" and check.options.get("rubricPrompt"):
        items, problem = [""], None  # a promptfoo rubricPrompt that holds the whole rubric
    if problem is not None:
        return Verdict.errored(problem)
    if check.threshold is not None and not 0.0 <= check.threshold <= 1.0:
        return Verdict.errored(
            f"llm-rubric threshold must be between 0 and 1, not {check.threshold:g}"
        )
    reference, problem = _reference(check)
    if problem is not None:
        return Verdict.errored(problem)
    listed = items if isinstance(check.value, list) else []
    variables = prompts.rubric_variables(
        output=check.output,
        rubric=listed or items[0],
        prompt=check.prompt,
        reference=reference,
        vars_=check.vars,
    )
    judge = check.judge
    if check.options.get("rubricPrompt") is None and isinstance(judge, choice.ChoiceJudge):
        context = [*items, reference, check.prompt, check.output]
        scored = _scored_rubric(check, judge, variables, context)
        if scored is not None:
            return scored
    try:
        messages = prompts.rubric_messages(variables, check.options.get("rubricPrompt"))
    except PromptProblem as exc:
        return Verdict.errored(str(exc))
    schema = schemas.rubric_schema(len(listed))
    try:
        reply = check.judge.complete_json(messages, schema, schemas.rubric_budget(len(listed)))
    except ProviderError as exc:
        return _judge_failed(exc)
    try:
        grade = grade_rubric(reply, listed, check.threshold)
    except ImpossibleReply as exc:
        return _impossible(exc, reply)
    if check.options.get("rubricPrompt") is None:
        copied = _copied(grade, reply, [*items, reference, check.prompt, check.output])
        if copied is not None:
            return copied
    return Verdict(
        passed=grade.passed,
        reason=_rubric_reason(grade),
        score=grade.score,
        details={"rubric": listed or items[0], **_rubric_details(grade, reply)},
    )


def _scored_rubric(
    check: Check, judge: choice.ChoiceJudge, variables: Mapping[str, Any], context: list[str]
) -> Verdict | None:
    """A rubric's verdict from the score scale's log-probabilities, with a reason (and a list
    rubric's checks) written after it when it fails; None when the judge's model gave no
    scores."""
    messages = prompts.rubric_score_messages(variables)
    try:
        logprobs = judge.score_choices(messages, choice.SCORE_CHOICES)
    except ProviderError as exc:
        return _judge_failed(exc)
    if logprobs is None:
        return None
    reply: dict[str, Any] = {"scores": dict(logprobs)}
    try:
        grade = grade_scored(choice.read_scores(logprobs), check.threshold)
    except ImpossibleReply as exc:
        return _impossible(exc, reply)
    details: dict[str, Any] = {}
    items: list[str] = list(variables["items"])
    if not grade.passed and judge.reasons:
        written, problem = _written_reason(check, messages, grade, items)
        if problem is not None:
            details["reason_error"] = problem
        else:
            reply |= written
            checks = read_checks(written, items) if items else ()
            grade = replace(grade, reason=written["reason"], checks=checks)
            copied = _copied(grade, reply, context)
            if copied is not None:
                return copied
    return Verdict(
        passed=grade.passed,
        reason=_rubric_reason(grade),
        score=grade.score,
        details={
            "rubric": items or variables["rubric"],
            **_rubric_details(grade, reply),
            **details,
        },
    )


def _written_reason(
    check: Check, messages: list[dict[str, str]], grade: RubricGrade, items: list[str]
) -> tuple[dict[str, Any], str | None]:
    """The judge's reply holding the ``reason`` (and a list rubric's ``checks``) for a scored
    verdict, or why it could not give one; the verdict stands either way."""
    assert check.judge is not None
    asked = prompts.reason_messages(messages, grade.judge_score, _shown(grade), False, items)
    schema, budget = choice.reason_schema(len(items)), choice.reason_budget(len(items))
    try:
        reply = check.judge.complete_json(asked, schema, budget)
        if not isinstance(reply, Mapping) or not isinstance(reply.get("reason"), str):
            raise ImpossibleReply("the reason is not a text")
        if items:
            read_checks(reply, items)
    except ProviderError as exc:
        return {}, f"the judge wrote no reason: {exc}"
    except ImpossibleReply as exc:
        return {}, f"the judge's reason is impossible: {exc}"
    return dict(reply), None


def _shown(grade: RubricGrade) -> str:
    """A scored verdict's score as reasons and summaries show it: 4.27 → ``4.27``, 5.0 → ``5``."""
    if grade.scored is None:
        return str(grade.judge_score)
    return f"{grade.scored.score:.2f}".rstrip("0").rstrip(".")


def _copied(grade: RubricGrade, reply: Any, context: Sequence[str]) -> Verdict | None:
    """An error verdict when the reply repeats the prompt's worked example instead of grading."""
    run = copied_example([grade.reason, *(c.notes for c in grade.checks)], context)
    if run is None:
        return None
    return Verdict.errored(
        f"judge reply copies the prompt's worked example ({clip(run, 60)!r}) instead of grading",
        details={"error_kind": "copied", "judge_reply": reply},
    )


def _rubric_reason(grade: RubricGrade) -> str:
    scored = f"score {_shown(grade)}/5 → {grade.score:.3g}"
    if grade.passed:
        head = f"judge passed it, {scored} ≥ {grade.threshold:g}"
    elif grade.judge_pass:
        head = f"judge passed it but {scored} is below the threshold {grade.threshold:g}"
    else:
        head = f"judge failed it, {scored}"
    if grade.checks:
        held = sum(1 for c in grade.checks if c.passed)
        head += f", {held}/{len(grade.checks)} items met"
    return f"{head}: {clip(grade.reason)}" if grade.reason.strip() else head


def _rubric_details(grade: RubricGrade, reply: Any) -> dict[str, Any]:
    details: dict[str, Any] = {
        "judge_reply": reply,
        "judge_score": grade.judge_score,
        "judge_pass": grade.judge_pass,
        "score": grade.score,
        "threshold": grade.threshold,
    }
    if grade.checks:
        details["checks"] = [c.to_json() for c in grade.checks]
    if grade.scored is not None:
        details["verdict"] = choice.MODE
        details["judge_expected_score"] = round(grade.scored.score, 6)
        details["judge_probabilities"] = {
            str(s): round(p, 6) for s, p in grade.scored.probabilities.items()
        }
    return details


# --- llm-assert -------------------------------------------------------------------------------


@assertion(
    "llm-assert",
    value=_TEXT_OR_LIST,
    tier="model",
    check_value=check_statements,
    options=_ASSERT_OPTIONS,
)
def llm_assert(check: Check) -> Verdict:
    """A judge model says whether each statement is TRUE, FALSE or UNKNOWN of the output.

    The value is one statement or a list. Only TRUE counts as holding; UNKNOWN counts as not
    passed and is recorded apart from FALSE (``details.unknown``). ``require: all`` (the
    default) passes when every statement is TRUE, ``require: any`` when one is.
    """
    if check.judge is None:
        return Verdict.errored(NO_JUDGE)
    statements, problem = _as_items(check.value, "statement")
    if problem is not None:
        return Verdict.errored(problem)
    require = check.options.get("require", "all")
    if require not in ("all", "any"):
        return Verdict.errored(f"require must be all or any, not {require!r}")
    if check.threshold is not None:
        return Verdict.errored("llm-assert takes no threshold; use require: all | any")
    messages = prompts.assert_messages(
        output=check.output, statements=statements, prompt=check.prompt, vars_=check.vars
    )
    schema = schemas.assert_schema(len(statements))
    try:
        reply = check.judge.complete_json(messages, schema, schemas.assert_budget(len(statements)))
    except ProviderError as exc:
        return _judge_failed(exc)
    try:
        grade = grade_statements(reply, statements, require)
    except ImpossibleReply as exc:
        return _impossible(exc, reply)
    return Verdict(
        passed=grade.passed,
        reason=_assert_reason(grade),
        score=grade.score,
        details=_assert_details(grade, reply),
    )


def _assert_reason(grade: AssertGrade) -> str:
    total = len(grade.verdicts)
    counts = f"{grade.count('TRUE')}/{total} TRUE"
    others = [f"{grade.count(t)} {t}" for t in ("FALSE", "UNKNOWN") if grade.count(t)]
    if others:
        counts += f" ({', '.join(others)})"
    head = f"{counts}, require {grade.require}"
    if grade.passed:
        return head
    first = _first_not_true(grade.verdicts)
    note = f": statement {first.id} is {first.verdict}"
    if first.reason.strip():
        note += f" ({clip(first.reason, 60)})"
    return head + note


def _first_not_true(verdicts: Sequence[StatementVerdict]) -> StatementVerdict:
    return next(v for v in verdicts if v.verdict != "TRUE")


def _assert_details(grade: AssertGrade, reply: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "judge_reply": reply,
        "require": grade.require,
        "true": grade.count("TRUE"),
        "false": grade.count("FALSE"),
        "unknown": grade.count("UNKNOWN"),
        "verdicts": [v.to_json() for v in grade.verdicts],
    }
