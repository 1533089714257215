"""``side-by-side``: the judge compares the skill-on and skill-off answers, item by item.

This is what Vally's rubric and skill-creator's blind comparator do. For each rubric item the
judge sees the two answers to the same request together and says which meets the item
better, or that it is a tie; then it is asked again with the answers' places swapped, to
cancel a preference for a position. An item goes to an arm only when both calls agree on it;
anything else is a tie. The arm that wins more items is preferred for the test: its result
passes and the other's fails, and a test with no preference fails in both arms. So the
run's lift over such tests counts the preferences and leaves ties out, and its exact sign
test (``lift: {sidedness: one-sided}``) is the one dotnet/skills reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.builtin._common import clip
from skilleval.assertions.builtin.model import NO_JUDGE, check_rubric
from skilleval.errors import ImpossibleReply, ProviderError
from skilleval.judge import graded, prompts
from skilleval.suite import template

_ITEMS: Final[dict[str, Any]] = {
    "type": ["string", "array"],
    "minLength": 1,
    "minItems": 1,
    "items": {"type": "string", "minLength": 1},
}
COMPARED: Final = ("off", "on")
"""The arms compared: the bare model and the skill's."""


@assertion("side-by-side", value=_ITEMS, tier="model", check_value=check_rubric, compares="arms")
def side_by_side(checks: Sequence[Check]) -> list[Verdict]:
    """The judge prefers the skill-on or the skill-off answer on each rubric item, twice with the
    places swapped; the arm preferred on more items passes, the other fails.

    Gets the checks of one test and trial in every arm, ordered by arm name. An arm other than
    ``off`` and ``on`` (``routed``) is not compared and gets an ``error``.
    """
    by_arm = {c.arm: c for c in checks}
    if not all(arm in by_arm for arm in COMPARED):
        return [
            Verdict.errored(
                "side-by-side compares the skill-off and skill-on answers of a test: it needs "
                "`skill:` and both the `off` and `on` arms"
            )
        ] * len(checks)
    off, on = by_arm["off"], by_arm["on"]
    if on.judge is None:
        return [Verdict.errored(NO_JUDGE)] * len(checks)
    try:
        items = _items(on)
        outcomes = [_item(on, off, item) for item in items]
    except _Failed as failed:
        return [failed.verdict if c.arm in COMPARED else _not_compared(c) for c in checks]
    wins = sum(o["preferred"] == "on" for o in outcomes)
    losses = sum(o["preferred"] == "off" for o in outcomes)
    ties = len(outcomes) - wins - losses
    preferred = "on" if wins > losses else "off" if losses > wins else "tie"
    details = {"preferred": preferred, "on": wins, "off": losses, "ties": ties, "items": outcomes}
    out = []
    for check in checks:
        if check.arm not in COMPARED:
            out.append(_not_compared(check))
            continue
        mine, theirs = (wins, losses) if check.arm == "on" else (losses, wins)
        head = (
            f"{check.arm} preferred on {mine} of {len(items)} item(s), the other arm on "
            f"{theirs}, {ties} tie(s)"
        )
        won = preferred == check.arm
        reason = f"{head}: {'preferred' if won else 'not preferred'}"
        if len(outcomes) == 1 and outcomes[0]["reasons"]:
            reason += f" ({clip(outcomes[0]['reasons'][0])})"
        score = 0.5 + (mine - theirs) / (2 * len(items))
        out.append(Verdict(passed=won, reason=reason, score=score, details=details))
    return out


class _Failed(Exception):
    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.reason)
        self.verdict = verdict


def _not_compared(check: Check) -> Verdict:
    return Verdict.errored(f"side-by-side compares the off and on arms only, not {check.arm!r}")


def _items(check: Check) -> list[str]:
    raw = check.value if isinstance(check.value, list) else [check.value]
    items = []
    for item in raw:
        try:
            text = template.render(str(item), check.vars)
        except template.TemplateProblem as exc:
            raise _Failed(Verdict.errored(f"rubric item: {exc.message}")) from None
        if not text.strip():
            raise _Failed(
                Verdict.errored("a rubric item is blank once its variables are filled in")
            )
        items.append(text)
    return items


def _item(on: Check, off: Check, item: str) -> dict[str, Any]:
    """One rubric item judged twice: on first, then off first. Agreement or a tie."""
    first, first_reason = _ask(on, item, on.output, off.output)
    second, second_reason = _ask(on, item, off.output, on.output)
    said = [{"A": "on", "B": "off"}.get(first, "tie"), {"A": "off", "B": "on"}.get(second, "tie")]
    preferred = said[0] if said[0] == said[1] else "tie"
    return {
        "item": item,
        "preferred": preferred,
        "calls": said,
        "reasons": [first_reason, second_reason],
    }


def _ask(check: Check, item: str, answer_a: str, answer_b: str) -> tuple[str, str]:
    assert check.judge is not None  # checked by the caller
    variables = {
        **check.vars,
        "item": item,
        "prompt": check.prompt,
        "answer_a": answer_a,
        "answer_b": answer_b,
    }
    messages = prompts.graded_messages("side_by_side", variables)
    try:
        reply = check.judge.complete_json(
            messages, graded.preference_schema(), graded.verdict_budget()
        )
    except ProviderError as exc:
        kind = getattr(exc, "kind", "provider")
        raise _Failed(Verdict.errored(str(exc), details={"error_kind": kind})) from None
    try:
        return graded.read_preference(reply)
    except ImpossibleReply as exc:
        raise _Failed(
            Verdict.errored(
                f"judge reply is impossible: {exc}",
                details={"error_kind": "impossible", "judge_reply": reply},
            )
        ) from None
