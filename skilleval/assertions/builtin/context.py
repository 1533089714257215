"""promptfoo's ``context-*`` types on skilleval's judge: is the output faithful to the context,
does the context hold the ground truth, which of its pieces does the query need.

Each cuts a text into sentences (or takes a list's items), asks the judge for one verdict per
piece in a single call, and scores the share that holds; the assertion passes at
``threshold`` (default :data:`CONTEXT_THRESHOLD`). The context is ``vars.context`` or the
assertion's ``contextTransform``. Like :mod:`.graded`, a failed or impossible reply is an
``error`` verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from skilleval.api import Check, Judge, Verdict, assertion
from skilleval.assertions.builtin._common import clip
from skilleval.assertions.builtin._graded import (
    TEXT,
    Failed,
    ask,
    guarded,
    impossible,
    judge_of,
    query_of,
    text_value,
    unit_threshold,
)
from skilleval.assertions.builtin.model import check_rubric
from skilleval.errors import ImpossibleReply
from skilleval.judge import graded, prompts

_CONTEXT_TRANSFORM: Final[dict[str, Any]] = {
    "contextTransform": {
        "description": "Where the context comes from instead of vars.context: a transform of the output.",
    }
}

CONTEXT_THRESHOLD: Final = 0.5
"""The context-* pass mark when the assertion sets none (promptfoo's is 0, which passes all)."""


def context_of(check: Check) -> list[str]:
    """The context as pieces: ``contextTransform``'s result, else ``vars.context``.

    A list stays as its items; a text is cut into sentences.
    """
    raw = check.context if check.context is not None else check.vars.get("context")
    where = "contextTransform" if check.context is not None else "vars.context"
    if raw is None:
        raise Failed(
            Verdict.errored("no context: set vars.context, or contextTransform on the assertion")
        )
    if isinstance(raw, str):
        pieces = graded.sentences(raw)
    elif isinstance(raw, list) and all(isinstance(p, str) for p in raw):
        pieces = [p.strip() for p in raw if p.strip()]
    else:
        raise Failed(
            Verdict.errored(f"{where} must be a text or a list of texts, not {type(raw).__name__}")
        )
    if not pieces:
        raise Failed(Verdict.errored(f"{where} is empty"))
    return pieces


def _units(pieces: list[str], what: str) -> list[str]:
    if len(pieces) > graded.MAX_UNITS:
        raise Failed(
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
    reply = ask(judge, messages, schema, graded.units_budget(len(units)))
    try:
        return graded.read_units(reply, units, vocabulary), reply
    except ImpossibleReply as exc:
        raise Failed(impossible(exc, reply)) from None


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
@guarded
def context_faithfulness(check: Check) -> Verdict:
    """The judge checks each sentence of the output against the context: is it supported?

    Sentences that state nothing (a greeting, an offer) are set aside; the score is the share
    of the others that the context supports, and the assertion passes when it reaches
    ``threshold`` (default 0.5). The context is ``vars.context`` or the assertion's
    ``contextTransform``.
    """
    judge = judge_of(check)
    threshold = unit_threshold(check, "context-faithfulness", CONTEXT_THRESHOLD)
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
    value=TEXT,
    tier="model",
    check_value=check_rubric,
    options=_CONTEXT_TRANSFORM,
)
@guarded
def context_recall(check: Check) -> Verdict:
    """The judge checks each sentence of the ground truth (the value) against the context.

    The score is the share of them the context supports; the assertion passes when it reaches
    ``threshold`` (default 0.5).
    """
    judge = judge_of(check)
    threshold = unit_threshold(check, "context-recall", CONTEXT_THRESHOLD)
    context = context_of(check)
    units = _units(graded.sentences(text_value(check, "ground truth")), "the value")
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
@guarded
def context_relevance(check: Check) -> Verdict:
    """The judge marks each piece of the context as needed to answer the query, or not.

    The query is ``vars.query`` (else the prompt); the pieces are the items of a list context,
    or the sentences of a text. The score is the share needed; the assertion passes when it
    reaches ``threshold`` (default 0.5).
    """
    judge = judge_of(check)
    threshold = unit_threshold(check, "context-relevance", CONTEXT_THRESHOLD)
    units = _units(context_of(check), "the context")
    verdicts, reply = _rule_on(
        judge, "context_needed", units, graded.NEEDED, {"query": query_of(check)}
    )
    return _share("relevance", verdicts, "NEEDED", graded.NEEDED, threshold, reply, "pieces needed")
