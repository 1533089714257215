"""The AUROC and its Newcombe interval: scipy's Mann–Whitney U, properties, coverage."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from stats_support import FAST

from skilleval.stats import Z95, auroc, mann_whitney_u, newcombe_auroc_interval

scores = st.lists(st.integers(-20, 20).map(lambda x: x / 4), max_size=25)


@FAST
@given(scores, scores)
def test_auroc_is_scipys_u_over_the_pairs(pos: list[float], neg: list[float]) -> None:
    from scipy.stats import mannwhitneyu

    got = auroc(pos, neg)
    if not pos or not neg:
        assert (got.value, got.ci95) == (None, None)
        return
    u = mannwhitneyu(pos, neg, alternative="two-sided", method="asymptotic").statistic
    assert got.u == pytest.approx(u)
    assert got.value == pytest.approx(u / (len(pos) * len(neg)))


@FAST
@given(scores.filter(bool), scores.filter(bool))
def test_the_interval_holds_the_estimate_and_mirrors_when_classes_swap(
    pos: list[float], neg: list[float]
) -> None:
    one, other = auroc(pos, neg), auroc(neg, pos)
    assert one.value is not None
    assert one.ci95 is not None
    assert other.ci95 is not None
    lo, hi = one.ci95
    assert 0.0 <= lo <= one.value <= hi <= 1.0
    assert other.value == pytest.approx(1 - one.value)
    assert other.ci95[0] == pytest.approx(1 - hi, abs=1e-9)
    assert other.ci95[1] == pytest.approx(1 - lo, abs=1e-9)


@FAST
@given(st.integers(0, 100).map(lambda k: k / 100), st.integers(1, 40), st.integers(1, 40))
def test_the_limits_solve_newcombes_equation(estimate: float, n1: int, n0: int) -> None:
    """Each limit inside (0, 1) is a root of (A − θ)² = z² V(θ), found on a fine grid too."""
    star = (n1 + n0) / 2 - 1

    def gap(theta: float) -> float:
        spread = (1 - theta) / (2 - theta) + theta / (1 + theta)
        variance = theta * (1 - theta) * (1 + star * spread) / (n1 * n0)
        return (estimate - theta) ** 2 - Z95 * Z95 * variance

    lo, hi = newcombe_auroc_interval(estimate, n1, n0)
    for limit in (lo, hi):
        if 0.0 < limit < 1.0:
            assert abs(gap(limit)) < 1e-9
    inside = [t / 2000 for t in range(2001) if gap(t / 2000) <= 0]
    assert lo == pytest.approx(min(inside), abs=1e-3)
    assert hi == pytest.approx(max(inside), abs=1e-3)


@FAST
@given(st.integers(1, 30), st.integers(1, 30))
def test_more_data_never_widens_a_perfect_ranking(n1: int, n0: int) -> None:
    lo = newcombe_auroc_interval(1.0, n1, n0)[0]
    assert newcombe_auroc_interval(1.0, n1 + 1, n0 + 1)[0] >= lo
    assert newcombe_auroc_interval(1.0, n1, n0)[1] == 1.0


def test_one_pair_ranked_right_is_no_proof() -> None:
    estimate = auroc([0.3], [-2.0])
    assert estimate.value == 1.0
    assert estimate.includes_chance is True
    assert (
        auroc([float(i) for i in range(10)], [-1.0 - i for i in range(10)]).includes_chance is False
    )


def test_a_constant_score_is_a_coin_and_an_empty_class_is_null() -> None:
    assert auroc([1.0, 1.0], [1.0, 1.0, 1.0]).value == 0.5
    empty = auroc([1.0, 2.0], [])
    assert (empty.value, empty.ci95, empty.includes_chance) == (None, None, None)
    assert empty.to_json() == {
        "value": None,
        "ci95": None,
        "positives": 2,
        "negatives": 0,
        "u": 0.0,
    }


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="finite"):
        auroc([math.nan], [1.0])
    with pytest.raises(ValueError, match="both classes"):
        newcombe_auroc_interval(0.5, 0, 3)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        newcombe_auroc_interval(1.5, 3, 3)


def test_u_counts_ties_half() -> None:
    assert mann_whitney_u([1.0, 2.0], [1.0, 0.0]) == 3.5


@pytest.mark.parametrize(("shift", "n"), [(0.0, 8), (1.0, 12), (2.0, 20)])
def test_coverage_is_near_ninety_five_percent(shift: float, n: int) -> None:
    """Binormal scores with a known AUROC Φ(shift/√2): the interval holds it about 95% of the time."""
    truth = 0.5 * (1 + math.erf(shift / 2))
    rng = random.Random(1606)
    runs, hits = 600, 0
    for _ in range(runs):
        pos = [rng.gauss(shift, 1) for _ in range(n)]
        neg = [rng.gauss(0, 1) for _ in range(n)]
        lo, hi = auroc(pos, neg).ci95 or (0.0, 0.0)
        hits += lo <= truth <= hi
    assert 0.92 <= hits / runs <= 0.99
