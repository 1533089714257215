"""Power: the published planning table, scipy, and exact enumeration of the real verdict."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from stats_support import FAST

from skilleval.stats import (
    PairedCounts,
    discordant_for_power,
    discordant_power,
    lift_analysis,
    observed_tie_rate,
    plan_power,
    suite_power,
)

# peers.md §8, "Planning power": one-sided sign test, alpha = 0.05, 80% power.
PUBLISHED = {0.9: 8, 0.8: 18, 0.7: 37, 0.6: 158}


@pytest.mark.parametrize(("win_rate", "needed"), PUBLISHED.items())
def test_published_planning_table(win_rate: float, needed: int) -> None:
    assert discordant_for_power(win_rate, alpha=0.05, sidedness="one-sided") == needed
    assert discordant_power(needed, win_rate, sidedness="one-sided") >= 0.8
    assert discordant_power(needed - 1, win_rate, sidedness="one-sided") < 0.8


@pytest.mark.parametrize("m", [5, 6, 8, 13, 18, 37, 100, 158])
@pytest.mark.parametrize("win_rate", [0.55, 0.7, 0.9])
def test_discordant_power_matches_scipy(m: int, win_rate: float) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    for sidedness, alternative in (("one-sided", "greater"), ("two-sided", "two-sided")):
        # The critical count from scipy's own exact test, then scipy's binomial tail.
        critical = next(
            (
                k
                for k in range(m // 2 + 1 if sidedness == "two-sided" else 0, m + 1)
                if scipy_stats.binomtest(k, m, 0.5, alternative=alternative).pvalue <= 0.05
            ),
            None,
        )
        expected = 0.0 if critical is None else scipy_stats.binom.sf(critical - 1, m, win_rate)
        got = discordant_power(m, win_rate, sidedness=sidedness)  # type: ignore[arg-type]
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)


def _enumerated(n: int, win_rate: float, tie_rate: float, min_lift: float, sidedness: str) -> float:
    """P[helps] by running lift_analysis on every (wins, losses, ties) outcome."""
    p_win, p_loss = (1 - tie_rate) * win_rate, (1 - tie_rate) * (1 - win_rate)
    total = 0.0
    for wins in range(n + 1):
        for losses in range(n - wins + 1):
            ties = n - wins - losses
            weight = (
                math.factorial(n)
                / (math.factorial(wins) * math.factorial(losses) * math.factorial(ties))
                * p_win**wins
                * p_loss**losses
                * tie_rate**ties
            )
            verdict = lift_analysis(
                PairedCounts(ties, wins, losses, 0),
                min_lift=min_lift,
                sidedness=sidedness,  # type: ignore[arg-type]
            ).verdict
            total += weight * (verdict == "helps")
    return total


@FAST
@given(
    st.integers(0, 14),
    st.floats(0.05, 0.95),
    st.floats(0.0, 0.9),
    st.sampled_from([0.0, 0.1, 0.3]),
    st.sampled_from(["two-sided", "one-sided"]),
)
def test_suite_power_is_the_chance_of_the_real_verdict(
    n: int, win_rate: float, tie_rate: float, min_lift: float, sidedness: str
) -> None:
    got = suite_power(
        n,
        win_rate=win_rate,
        tie_rate=tie_rate,
        min_lift=min_lift,
        sidedness=sidedness,  # type: ignore[arg-type]
    )
    assert got == pytest.approx(_enumerated(n, win_rate, tie_rate, min_lift, sidedness), abs=1e-9)


def test_no_ties_reduces_to_the_discordant_power() -> None:
    for m in (5, 10, 18):
        assert suite_power(m, win_rate=0.8, tie_rate=0.0, sidedness="one-sided") == pytest.approx(
            discordant_power(m, 0.8, sidedness="one-sided")
        )
    assert suite_power(4, win_rate=0.99, tie_rate=0.0) == 0.0  # below min_tests


def test_plan_reports_the_first_count_that_reaches_the_target() -> None:
    plan = plan_power(10, win_rate=0.8, tie_rate=0.5)
    assert plan.power == pytest.approx(suite_power(10, win_rate=0.8, tie_rate=0.5))
    assert plan.power < 0.8
    assert plan.tests_needed is not None
    assert plan.tests_to_add == plan.tests_needed - 10
    assert suite_power(plan.tests_needed, win_rate=0.8, tie_rate=0.5) >= 0.8
    assert all(
        suite_power(n, win_rate=0.8, tie_rate=0.5) < 0.8 for n in range(10, plan.tests_needed)
    )
    assert plan.to_json()["tests_to_add"] == plan.tests_to_add
    enough = plan_power(plan.tests_needed + 5, win_rate=0.8, tie_rate=0.5)
    assert enough.tests_to_add == 0


def test_plan_out_of_reach() -> None:
    assert plan_power(10, win_rate=0.5).tests_needed is None
    assert plan_power(10, tie_rate=1.0).tests_needed is None
    # An expected lift of 0.5 · 0.6 = 0.3 cannot clear a min_lift of 0.4 however many tests.
    assert plan_power(10, win_rate=0.8, tie_rate=0.5, min_lift=0.4).tests_needed is None


def test_arguments_and_observed_tie_rate() -> None:
    with pytest.raises(ValueError, match="win_rate"):
        suite_power(10, win_rate=1.5, tie_rate=0.5)
    with pytest.raises(ValueError, match="tie_rate"):
        suite_power(10, win_rate=0.5, tie_rate=-0.1)
    with pytest.raises(ValueError, match="n_tests"):
        suite_power(-1, win_rate=0.5, tie_rate=0.5)
    assert observed_tie_rate(3, 5, 0, 2) == 0.5
    assert observed_tie_rate(0, 0, 0, 0) is None
