"""What promptfoo's judge-graded types share: one judge call under a schema, and the ways
it can fail before a verdict.

A grader body raises :class:`Failed` with the verdict to return (always an ``error``: no
judge, a blank value, a threshold out of range, a failed call), and :func:`guarded` turns it
into that verdict. The graders are in :mod:`.graded` (factuality, closed QA, G-Eval,
select-best) and :mod:`.context` (the context-* types); :mod:`.embedding` reads the query
the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Final

from skilleval.api import Check, Judge, Verdict
from skilleval.assertions.builtin.model import NO_JUDGE
from skilleval.errors import CannotEvaluate, ImpossibleReply, ProviderError

TEXT: Final[dict[str, Any]] = {"type": "string", "minLength": 1}
TEXT_OR_LIST: Final[dict[str, Any]] = {
    "type": ["string", "array"],
    "minLength": 1,
    "minItems": 1,
    "items": {"type": "string", "minLength": 1},
}


class Failed(CannotEvaluate):
    """A verdict to return at once (an error), raised from deep in a grader; one that reached
    the runner would still be an ``error`` verdict, as any :class:`CannotEvaluate` is."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.reason)
        self.verdict = verdict


def ask(
    judge: Judge, messages: list[dict[str, str]], schema: Mapping[str, Any], budget: int
) -> Any:
    """The judge's reply to ``messages`` under ``schema``; a failed call raises :class:`Failed`."""
    try:
        return judge.complete_json(messages, schema, budget)
    except ProviderError as exc:
        kind = getattr(exc, "kind", "provider")
        raise Failed(Verdict.errored(str(exc), details={"error_kind": kind})) from None


def impossible(exc: ImpossibleReply, reply: Any) -> Verdict:
    """The ``error`` verdict for a judge reply that fits its schema but cannot be true."""
    return Verdict.errored(
        f"judge reply is impossible: {exc}",
        details={"error_kind": "impossible", "judge_reply": reply},
    )


def judge_of(check: Check) -> Judge:
    """The suite's judge; its absence raises :class:`Failed`."""
    if check.judge is None:
        raise Failed(Verdict.errored(NO_JUDGE))
    return check.judge


def no_threshold(check: Check, name: str, instead: str) -> None:
    """Refuse a ``threshold`` on a type that passes by another rule (``instead`` says which)."""
    if check.threshold is not None:
        raise Failed(Verdict.errored(f"{name} takes no threshold; {instead}"))


def unit_threshold(check: Check, name: str, default: float) -> float:
    """The assertion's ``threshold`` (``default`` when it sets none), which must be in 0..1."""
    if check.threshold is None:
        return default
    if not 0.0 <= check.threshold <= 1.0:
        raise Failed(
            Verdict.errored(f"{name} threshold must be between 0 and 1, not {check.threshold:g}")
        )
    return check.threshold


def text_value(check: Check, noun: str) -> str:
    """The value as a text that is not blank; ``noun`` names it in the error."""
    value = check.value
    if not isinstance(value, str) or not value.strip():
        raise Failed(Verdict.errored(f"the {noun} is blank once its variables are filled in"))
    return value


def query_of(check: Check) -> str:
    """The question the output answers: ``vars.query`` when it is a text, else the prompt."""
    query = check.vars.get("query")
    return query if isinstance(query, str) and query.strip() else check.prompt


def guarded(grader: Callable[[Check], Verdict]) -> Callable[[Check], Verdict]:
    """Run a grader body; a :class:`Failed` raised inside becomes its verdict."""

    @functools.wraps(grader)
    def run(check: Check) -> Verdict:
        try:
            return grader(check)
        except Failed as failed:
            return failed.verdict

    return run
