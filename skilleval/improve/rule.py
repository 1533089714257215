"""The acceptance rule: when a chosen candidate may replace the current skill.

One candidate per round reaches the confirmation set: the one the selection set chose. On
the confirmation set it is compared with the current skill by the exact paired test every
run uses for its lift (:func:`~skilleval.stats.lift.lift_from_trials`: the sign test on the
tests whose outcome differs, or the paired permutation test on pass rates when tests run
several trials), one-sided (H1: the candidate is better), at the round's α:

* **the measure.** A description edit is judged on routing first: per test, whether the
  router's choice matched ``should_trigger``. Any other edit is judged on the tests' pass
  or fail. The other measure must not be worse: a description edit may not lower the pass
  count, an instruction edit may not lower the number of tests routed correctly.
* **the correction.** Each round's confirmation test is a single test of one candidate,
  since choosing happened on another set. Several rounds reuse the confirmation set, so
  α is split evenly over the rounds asked for (Bonferroni, α/R each): whatever happens
  between rounds, the chance that any round accepts a candidate no better than the
  current skill is at most α. docs/statistics.md simulates it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from skilleval import stats
from skilleval.improve.candidates import Part
from skilleval.improve.evaluate import TestOutcome
from skilleval.stats._exact import check_alpha, min_wins
from skilleval.util.frozen import frozen

ASSUMED_TIE_RATE = 0.5
"""The share of tests a candidate leaves unchanged, assumed for planning as `skilleval power`
assumes it when no run says otherwise."""
PLANNED_WIN_RATE = 0.8
"""The planning effect: a candidate that wins 8 of every 10 tests it changes."""
PLANNED_POWER = 0.8


def round_alpha(alpha: float, rounds: int) -> float:
    """Each round's share of α (Bonferroni over the rounds asked for)."""
    return alpha / max(1, rounds)


def primary_measure(part: Part) -> str:
    return "routing" if part == "description" else "pass"


@frozen
class Confirmation:
    """The confirmation test of one chosen candidate against the current skill."""

    measure: str
    """``pass`` or ``routing``: what the paired test compared."""
    lift: stats.LiftResult
    other_measure: str
    other_candidate: int
    other_current: int
    """The other measure's count on the confirmation set, candidate and current."""
    accepted: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "measure": self.measure,
            "test": self.lift.to_json(),
            "other_measure": {
                "name": self.other_measure,
                "candidate": self.other_candidate,
                "current": self.other_current,
                "not_worse": self.other_candidate >= self.other_current,
            },
            "accepted": self.accepted,
            "reason": self.reason,
        }


def pass_pairs(
    candidate: Mapping[str, TestOutcome], current: Mapping[str, TestOutcome], ids: Sequence[str]
) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Per test, ``((scored, passed) candidate, (scored, passed) current)``; a test either
    side could not score is left out, as the run's lift leaves it out."""
    out = []
    for test_id in ids:
        a, b = candidate[test_id], current[test_id]
        if a.scored and b.scored:
            out.append(((a.scored, a.passed), (b.scored, b.passed)))
    return out


def routing_pairs(
    candidate: Mapping[str, TestOutcome], current: Mapping[str, TestOutcome], ids: Sequence[str]
) -> list[tuple[bool, bool]]:
    """Per routed test, whether each side's router choice was right."""
    out = []
    for test_id in ids:
        a, b = candidate[test_id].routed, current[test_id].routed
        if a is not None and b is not None:
            out.append((a, b))
    return out


def count(outcomes: Mapping[str, TestOutcome], ids: Sequence[str], measure: str) -> int:
    """Tests passed (by majority) or routed right, over ``ids``."""
    if measure == "routing":
        return sum(1 for i in ids if outcomes[i].routed)
    return sum(1 for i in ids if outcomes[i].vote)


def confirm(
    part: Part,
    candidate: Mapping[str, TestOutcome],
    current: Mapping[str, TestOutcome],
    ids: Sequence[str],
    *,
    alpha: float,
    min_lift: float = 0.0,
) -> Confirmation:
    """Apply the rule to the chosen candidate on the confirmation tests ``ids``."""
    measure = primary_measure(part)
    other = "pass" if measure == "routing" else "routing"
    if measure == "routing":
        lift = stats.lift_analysis(
            routing_pairs(candidate, current, ids),
            alpha=alpha,
            min_lift=min_lift,
            sidedness="one-sided",
        )
    else:
        lift = stats.lift_from_trials(
            pass_pairs(candidate, current, ids),
            alpha=alpha,
            min_lift=min_lift,
            sidedness="one-sided",
        )
    mine, theirs = count(candidate, ids, other), count(current, ids, other)
    helps = lift.verdict == "helps"
    not_worse = mine >= theirs
    accepted = helps and not_worse
    what = "routing" if measure == "routing" else "pass rate"
    tally = (
        f"the candidate does better on {lift.b} and worse on {lift.c} of the {lift.n} "
        f"confirmation tests compared"
    )
    p_text = f"p = {lift.p_one_sided:.3g} (one-sided exact test, α {alpha:.4g})"
    if lift.verdict == "underpowered":
        reason = (
            f"too few confirmation tests to decide its {what}: {tally}, and no result of so "
            f"few could reach α {alpha:.4g}"
        )
    elif not helps and lift.p_one_sided <= alpha:
        reason = f"its {what} gain is below min_lift {min_lift:g}: {tally}, {p_text}"
    elif not helps:
        reason = f"its {what} is not significantly better: {tally}, {p_text}"
    elif not not_worse:
        reason = (
            f"its {what} is significantly better, but its "
            f"{'pass count' if other == 'pass' else 'routing'} on the confirmation set is "
            f"worse ({mine} against {theirs})"
        )
    else:
        reason = f"its {what} is significantly better: {tally}, {p_text}"
    return Confirmation(measure, lift, other, mine, theirs, accepted, reason)


def smallest_decidable(alpha: float, *, limit: int = 200) -> int | None:
    """The fewest changed tests with which a clean sweep reaches ``alpha`` (one-sided)."""
    alpha_x = check_alpha(alpha)
    return next(
        (m for m in range(limit + 1) if min_wins(m, alpha_x, "one-sided") is not None), None
    )


def decision_sizes(
    confirm_size: int, confirm_share: float, alpha: float, min_lift: float = 0.0
) -> dict[str, Any]:
    """How many tests a decision needs, as `skilleval power` plans it: the fewest changed
    confirmation tests that can decide at all, the confirmation tests for 80% power against
    a candidate that wins 80% of the tests it changes (half of them tied), and the suite that
    split gives that many."""
    plan = stats.plan_power(
        confirm_size,
        win_rate=PLANNED_WIN_RATE,
        tie_rate=ASSUMED_TIE_RATE,
        alpha=alpha,
        sidedness="one-sided",
        min_lift=min_lift,
        target=PLANNED_POWER,
    )
    needed = plan.tests_needed
    return {
        "alpha": alpha,
        "confirmation_tests": confirm_size,
        "smallest_decidable": smallest_decidable(alpha),
        "power": float(f"{plan.power:.6g}"),
        "win_rate": PLANNED_WIN_RATE,
        "tie_rate": ASSUMED_TIE_RATE,
        "target": PLANNED_POWER,
        "confirmation_tests_needed": needed,
        "suite_tests_needed": None if needed is None else math.ceil(needed / confirm_share),
    }
