"""Tests for skilleval.stats: published values, scipy cross-checks, properties and edge cases."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skilleval import stats
from skilleval.stats import (
    PairedCounts,
    TriggerMetrics,
    can_reach_significance,
    confusion_matrix,
    lift_analysis,
    majority,
    mcnemar_exact,
    min_wins_for_significance,
    newcombe_paired,
    paired_counts,
    pass_at_k,
    pass_hat_k,
    reliability,
    sign_test_greater,
    trigger_metrics,
    wilson,
)

FAST = settings(max_examples=150, deadline=None)


@st.composite
def trials(draw: st.DrawFn) -> tuple[int, int]:
    n = draw(st.integers(0, 40))
    return n, draw(st.integers(0, n))


def _pairs(a: int, b: int, c: int, d: int) -> list[tuple[bool, bool]]:
    return [(True, True)] * a + [(True, False)] * b + [(False, True)] * c + [(False, False)] * d


# --------------------------------------------------------------------------- pass@k, pass^k

# peers.md §8, n = 5 trials, c = 3 passes.
PASS_AT_5_3 = {1: "3/5", 2: "9/10", 3: "1", 4: "1", 5: "1"}
PASS_HAT_5_3 = {1: "3/5", 2: "3/10", 3: "1/10", 4: "0", 5: "0"}


@pytest.mark.parametrize("k", range(1, 6))
def test_published_pass_k_table(k: int) -> None:
    assert pass_at_k(5, 3, k) == Fraction(PASS_AT_5_3[k])
    assert pass_hat_k(5, 3, k) == Fraction(PASS_HAT_5_3[k])


def test_pass_hat_is_not_the_plug_in() -> None:
    assert pass_hat_k(5, 3, 2) != Fraction(3, 5) ** 2


def test_fewer_trials_than_k_is_not_computable() -> None:
    assert pass_at_k(3, 2, 4) is None
    assert pass_hat_k(3, 2, 4) is None
    assert pass_at_k(0, 0, 1) is None


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, -1, 1), (-1, 0, 1), (5, 3, 0)])
def test_impossible_counts_are_rejected(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match=r"c <= n|k must be at least 1"):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError, match=r"c <= n|k must be at least 1"):
        pass_hat_k(n, c, k)


@FAST
@given(trials(), st.integers(1, 45))
def test_pass_k_bounds_and_order(nc: tuple[int, int], k: int) -> None:
    n, c = nc
    at, hat = pass_at_k(n, c, k), pass_hat_k(n, c, k)
    if n < k:
        assert at is None
        assert hat is None
        return
    assert at is not None
    assert hat is not None
    assert 0 <= hat <= at <= 1


@FAST
@given(trials().filter(lambda nc: nc[0] > 0))
def test_pass_at_1_is_exactly_the_pass_rate(nc: tuple[int, int]) -> None:
    n, c = nc
    assert pass_at_k(n, c, 1) == Fraction(c, n)
    assert pass_hat_k(n, c, 1) == Fraction(c, n)


@FAST
@given(trials().filter(lambda nc: nc[0] >= 2))
def test_pass_k_monotone_in_k(nc: tuple[int, int]) -> None:
    n, c = nc
    at = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    hat = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    assert all(x is not None and y is not None and x <= y for x, y in itertools.pairwise(at))
    assert all(x is not None and y is not None and x >= y for x, y in itertools.pairwise(hat))


def test_reliability_aggregates_only_tests_with_enough_trials() -> None:
    rel = reliability({"steady": (5, 5), "flaky": (5, 3), "short": (2, 1), "dead": (4, 0)})
    assert [t.name for t in rel.tests] == ["steady", "flaky", "short", "dead"]
    assert rel.flaky == ("flaky", "short")
    flaky = rel.tests[1]
    assert flaky.pass_at == tuple(Fraction(PASS_AT_5_3[k]) for k in range(1, 6))
    assert flaky.pass_hat == tuple(Fraction(PASS_HAT_5_3[k]) for k in range(1, 6))

    k1 = rel.at(1)
    assert k1 is not None
    assert (k1.tests_counted, k1.tests_skipped) == (4, 0)
    assert k1.pass_at_k == (1 + Fraction(3, 5) + Fraction(1, 2) + 0) / 4

    k3 = rel.at(3)
    assert k3 is not None
    assert (k3.tests_counted, k3.tests_skipped) == (3, 1)
    assert k3.pass_at_k == (1 + 1 + 0) / Fraction(3)
    assert k3.pass_hat_k == (1 + Fraction(1, 10) + 0) / Fraction(3)

    k5 = rel.at(5)
    assert k5 is not None
    assert k5.tests_counted == 2
    assert [p.k for p in rel.aggregate] == [1, 2, 3, 4, 5]


def test_reliability_requested_ks_and_empty_input() -> None:
    rel = reliability({"t": (2, 1)}, ks=[3, 1, 1])
    assert [p.k for p in rel.aggregate] == [1, 3]
    k3 = rel.at(3)
    assert k3 is not None
    assert k3.pass_at_k is None
    assert k3.pass_hat_k is None
    assert (k3.tests_counted, k3.tests_skipped) == (0, 1)
    empty = reliability({})
    assert empty.aggregate == ()
    assert empty.flaky == ()
    with pytest.raises(ValueError, match="k must be at least 1"):
        reliability({"t": (2, 1)}, ks=[0])


def test_reliability_to_json_keeps_exact_fractions() -> None:
    out = reliability({"t": (5, 3)}).to_json()
    json.dumps(out)
    assert out["tests"][0]["pass_at_k"][1] == {"k": 2, "value": 0.9, "exact": "9/10"}
    assert out["aggregate"][2]["pass_hat_k"] == {"value": 0.1, "exact": "1/10"}
    assert out["flaky"] == ["t"]


# --------------------------------------------------------------------------- paired counts


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        ([True, True, False], True),
        ([False, False, True], False),
        ([True, False], None),
        ([True, True, False, False], None),
        ([], None),
        ([True], True),
    ],
)
def test_majority_tie_is_undecided(votes: list[bool], expected: bool | None) -> None:
    assert majority(votes) is expected


def test_paired_counts() -> None:
    counts = paired_counts(_pairs(3, 5, 0, 2))
    assert counts == PairedCounts(3, 5, 0, 2)
    assert (counts.n, counts.discordant) == (10, 5)
    assert counts.to_json() == {"a": 3, "b": 5, "c": 0, "d": 2, "n": 10}
    with pytest.raises(ValueError, match="non-negative"):
        PairedCounts(-1, 0, 0, 0)


# --------------------------------------------------------------------------- exact tests


def test_no_discordant_pairs_gives_p_one() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert sign_test_greater(0, 0) == 1.0


def test_known_p_values() -> None:
    assert mcnemar_exact(6, 0) == 1 / 32
    assert mcnemar_exact(0, 6) == 1 / 32
    assert mcnemar_exact(5, 0) == 1 / 16
    assert sign_test_greater(5, 0) == 1 / 32
    assert sign_test_greater(0, 5) == 1.0
    assert mcnemar_exact(3, 3) == 1.0
    with pytest.raises(ValueError, match="non-negative"):
        mcnemar_exact(-1, 2)


@pytest.mark.parametrize("b", range(0, 31, 3))
@pytest.mark.parametrize("c", [0, 1, 2, 4, 7, 12, 20, 30])
def test_p_values_match_scipy(b: int, c: int) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    if b + c == 0:
        return
    two = scipy_stats.binomtest(b, b + c, 0.5, alternative="two-sided").pvalue
    greater = scipy_stats.binomtest(b, b + c, 0.5, alternative="greater").pvalue
    assert mcnemar_exact(b, c) == pytest.approx(two, rel=1e-9, abs=1e-15)
    assert sign_test_greater(b, c) == pytest.approx(greater, rel=1e-9, abs=1e-15)


@FAST
@given(st.integers(0, 200), st.integers(0, 200))
def test_p_values_are_probabilities(b: int, c: int) -> None:
    assert 0.0 <= mcnemar_exact(b, c) <= 1.0
    assert 0.0 <= sign_test_greater(b, c) <= 1.0
    assert mcnemar_exact(b, c) == mcnemar_exact(c, b)


# --------------------------------------------------------------------------- intervals


@pytest.mark.parametrize(
    ("x", "n", "lo", "hi"),
    [(10, 10, 0.722, 1.0), (5, 5, 0.566, 1.0), (0, 5, 0.0, 0.434)],
)
def test_published_wilson_examples(x: int, n: int, lo: float, hi: float) -> None:
    got_lo, got_hi = wilson(x, n)
    assert got_lo == pytest.approx(lo, abs=5e-4)
    assert got_hi == pytest.approx(hi, abs=5e-4)


def test_wilson_edges() -> None:
    assert wilson(0, 0) == (0.0, 1.0)
    assert wilson(7, 7)[1] == 1.0
    assert wilson(0, 7)[0] == 0.0
    with pytest.raises(ValueError, match="c <= n"):
        wilson(3, 2)
    with pytest.raises(ValueError, match="z must be positive"):
        wilson(1, 2, z=0)


@FAST
@given(trials())
def test_wilson_contains_the_estimate(nc: tuple[int, int]) -> None:
    n, x = nc
    lo, hi = wilson(x, n)
    assert 0.0 <= lo <= hi <= 1.0
    if n:
        assert lo <= x / n <= hi


def test_published_newcombe_example() -> None:
    lo, hi = newcombe_paired(3, 5, 0, 2)
    assert lo == pytest.approx(0.078, abs=5e-4)
    assert hi == pytest.approx(0.733, abs=5e-4)
    assert lift_analysis(_pairs(3, 5, 0, 2)).lift == 0.5


def test_newcombe_no_data_and_zero_denominator() -> None:
    assert newcombe_paired(0, 0, 0, 0) == (-1.0, 1.0)
    lo, hi = newcombe_paired(10, 0, 0, 0)  # phi's denominator is 0
    assert lo <= 0.0 <= hi


@FAST
@given(*(st.integers(0, 30) for _ in range(4)))
def test_newcombe_contains_the_difference(a: int, b: int, c: int, d: int) -> None:
    n = a + b + c + d
    lo, hi = newcombe_paired(a, b, c, d)
    assert -1.0 <= lo <= hi <= 1.0
    if n:
        assert lo <= (b - c) / n <= hi


# --------------------------------------------------------------------------- minimum wins

# peers.md §8 at alpha = 0.05: n discordant -> (min wins, p rounded to 3 places); None = never.
MIN_WINS_GREATER: dict[int, tuple[int, float] | None] = {
    **{n: None for n in range(1, 5)},
    5: (5, 0.031), 6: (6, 0.016), 7: (7, 0.008), 8: (7, 0.035), 9: (8, 0.020),
    10: (9, 0.011), 11: (9, 0.033), 12: (10, 0.019), 13: (10, 0.046), 14: (11, 0.029),
    15: (12, 0.018), 16: (12, 0.038), 17: (13, 0.025), 18: (13, 0.048), 19: (14, 0.032),
    20: (15, 0.021),
}  # fmt: skip
MIN_WINS_TWO_SIDED: dict[int, tuple[int, float] | None] = {
    **{n: None for n in range(1, 6)},
    6: (6, 0.031), 7: (7, 0.016), 8: (8, 0.008), 9: (8, 0.039), 10: (9, 0.021),
    11: (10, 0.012), 12: (10, 0.039), 13: (11, 0.022), 14: (12, 0.013), 15: (12, 0.035),
    16: (13, 0.021), 17: (13, 0.049), 18: (14, 0.031), 19: (15, 0.019), 20: (15, 0.041),
}  # fmt: skip


@pytest.mark.parametrize("n", range(1, 21))
def test_published_min_wins_greater(n: int) -> None:
    row = MIN_WINS_GREATER[n]
    assert can_reach_significance(n, 0.05, "greater") is (row is not None)
    if row is None:
        assert min_wins_for_significance(n, 0.05, "greater") is None
        return
    wins, p = row
    assert min_wins_for_significance(n, 0.05, "greater") == wins
    assert round(sign_test_greater(wins, n - wins), 3) == p
    assert sign_test_greater(wins - 1, n - wins + 1) > 0.05


@pytest.mark.parametrize("n", range(1, 21))
def test_published_min_wins_two_sided(n: int) -> None:
    row = MIN_WINS_TWO_SIDED[n]
    assert can_reach_significance(n, 0.05, "two-sided") is (row is not None)
    if row is None:
        assert min_wins_for_significance(n, 0.05, "two-sided") is None
        return
    wins, p = row
    assert min_wins_for_significance(n, 0.05, "two-sided") == wins
    assert round(mcnemar_exact(wins, n - wins), 3) == p
    assert mcnemar_exact(wins - 1, n - wins + 1) > 0.05


def test_min_wins_arguments() -> None:
    assert min_wins_for_significance(0) is None
    assert not can_reach_significance(0)
    with pytest.raises(ValueError, match="non-negative"):
        min_wins_for_significance(-1)
    with pytest.raises(ValueError, match="alpha"):
        min_wins_for_significance(5, alpha=1.0)
    with pytest.raises(ValueError, match="sidedness"):
        min_wins_for_significance(5, sidedness="less")  # type: ignore[arg-type]


def test_alpha_is_compared_exactly() -> None:
    # 5 of 5 one-sided is exactly 1/32, which equals this alpha.
    assert min_wins_for_significance(5, alpha=0.03125, sidedness="greater") == 5


# --------------------------------------------------------------------------- lift verdicts


def test_helps_with_reason() -> None:
    r = lift_analysis(_pairs(4, 6, 0, 0), min_lift=0.1)
    assert r.verdict == "helps"
    assert (r.n, r.a, r.b, r.c, r.d) == (10, 4, 6, 0, 0)
    assert r.lift_exact == Fraction(3, 5)
    assert r.lift == 0.6
    assert r.p_two_sided == 1 / 32
    assert r.p_one_sided == 1 / 64
    assert r.sidedness == "two-sided"
    assert r.reason == (
        "6 of 6 discordant tests favour ON (b=6, c=0), p=0.0312 ≤ 0.05 (two-sided) "
        "and lift 0.6 ≥ min_lift 0.1"
    )


def test_hurts_two_sided() -> None:
    r = lift_analysis(_pairs(4, 0, 6, 0))
    assert r.verdict == "hurts"
    assert r.lift == -0.6
    assert "favour OFF" in r.reason
    assert "p=0.0312" in r.reason


def test_greater_uses_the_mirror_test_for_hurts() -> None:
    helps = lift_analysis(_pairs(4, 5, 0, 1), sidedness="greater")
    assert helps.verdict == "helps"
    assert "(one-sided)" in helps.reason
    hurts = lift_analysis(_pairs(4, 0, 5, 1), sidedness="greater")
    assert hurts.verdict == "hurts"
    assert hurts.p_one_sided == 1.0
    assert hurts.p_one_sided_reverse == 1 / 32
    # The same 5-0 record cannot reach significance two-sided.
    assert lift_analysis(_pairs(4, 5, 0, 1)).verdict == "underpowered"


def test_significant_but_below_min_lift_is_no_evidence() -> None:
    r = lift_analysis(_pairs(90, 9, 1, 0), min_lift=0.1)
    assert r.p_two_sided <= 0.05
    assert r.verdict == "no evidence"
    assert "below min_lift 0.1" in r.reason


def test_min_lift_is_compared_as_written() -> None:
    # Lift is exactly 1/10; the float 0.1 is slightly larger than that.
    r = lift_analysis(_pairs(54, 6, 0, 0), min_lift=0.1)
    assert r.lift_exact == Fraction(1, 10)
    assert r.verdict == "helps"


def test_no_evidence() -> None:
    r = lift_analysis(_pairs(2, 4, 4, 0))
    assert r.verdict == "no evidence"
    assert r.reason == "the 8 discordant tests split evenly (b=4, c=4), p=1 > 0.05 (two-sided)"
    r = lift_analysis(_pairs(0, 6, 2, 2))
    assert r.verdict == "no evidence"
    assert r.reason.startswith("6 of 8 discordant tests favour ON")


def test_fewer_than_five_tests_is_underpowered() -> None:
    r = lift_analysis(_pairs(0, 4, 0, 0))
    assert r.verdict == "underpowered"
    assert r.reason == (
        "only 4 distinct tests compared; at least 5 are needed before the skill can be judged"
    )


def test_too_few_discordant_is_underpowered() -> None:
    r = lift_analysis(_pairs(20, 0, 0, 0))
    assert r.verdict == "underpowered"
    assert r.reason.startswith("none of 20 tests changed outcome")
    assert "at least 6 are needed" in r.reason
    r = lift_analysis(_pairs(5, 4, 0, 1), sidedness="greater")
    assert r.verdict == "underpowered"
    assert "at least 5 are needed" in r.reason


def test_zero_tests_does_not_crash() -> None:
    r = lift_analysis([])
    assert r.verdict == "underpowered"
    assert r.lift is None
    assert r.lift_exact is None
    assert r.p_two_sided == 1.0
    assert r.ci95 == (-1.0, 1.0)
    assert json.loads(json.dumps(r.to_json()))["lift"] is None
    assert lift_analysis([], min_tests=0).verdict == "underpowered"


def test_lift_accepts_counts_and_serialises() -> None:
    r = lift_analysis(PairedCounts(3, 5, 0, 2), sidedness="greater")
    assert r.counts == PairedCounts(3, 5, 0, 2)
    out = r.to_json()
    json.dumps(out)
    assert out["lift"] == 0.5
    assert out["lift_exact"] == "1/2"
    assert out["ci95"] == [pytest.approx(0.0785, abs=1e-4), pytest.approx(0.7334, abs=1e-4)]
    assert out["verdict"] == "helps"


def test_lift_arguments() -> None:
    with pytest.raises(ValueError, match="alpha"):
        lift_analysis([], alpha=0.0)
    with pytest.raises(ValueError, match="sidedness"):
        lift_analysis([], sidedness="less")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="min_tests"):
        lift_analysis([], min_tests=-1)


@FAST
@given(
    *(st.integers(0, 25) for _ in range(4)),
    st.sampled_from(["two-sided", "greater"]),
)
def test_lift_properties(a: int, b: int, c: int, d: int, sidedness: stats.Sidedness) -> None:
    n = a + b + c + d
    r = lift_analysis(_pairs(a, b, c, d), sidedness=sidedness)
    assert r.n == n
    for p in (r.p_two_sided, r.p_one_sided, r.p_one_sided_reverse):
        assert 0.0 <= p <= 1.0
    assert r.reason
    if n == 0:
        assert r.lift is None
        return
    assert r.lift_exact == Fraction(b - c, n)
    assert r.ci95[0] <= (b - c) / n <= r.ci95[1]
    if r.verdict == "helps":
        assert b > c
    if r.verdict == "hurts":
        assert c > b
    if n < 5 or not can_reach_significance(b + c, 0.05, sidedness):
        assert r.verdict == "underpowered"


# --------------------------------------------------------------------------- triggering


def test_trigger_metrics() -> None:
    rows = [(True, True)] * 6 + [(True, False)] * 2 + [(False, True)] + [(False, False)] * 3
    m = trigger_metrics(rows)
    assert (m.tp, m.fn, m.fp, m.tn, m.n) == (6, 2, 1, 3, 12)
    assert m.accuracy == 9 / 12
    assert m.precision == 6 / 7
    assert m.recall == 6 / 8
    assert m.f1 == pytest.approx(2 * (6 / 7) * (6 / 8) / (6 / 7 + 6 / 8))
    json.dumps(m.to_json())


def test_trigger_metrics_undefined_rates_are_none() -> None:
    empty = trigger_metrics([])
    assert (empty.accuracy, empty.precision, empty.recall, empty.f1) == (None, None, None, None)
    quiet = trigger_metrics([(False, False)] * 4)
    assert quiet.accuracy == 1.0
    assert (quiet.precision, quiet.recall, quiet.f1) == (None, None, None)
    missed = trigger_metrics([(True, False)] * 3)
    assert (missed.precision, missed.recall, missed.f1) == (None, 0.0, 0.0)
    assert missed.to_json()["precision"] is None


def test_confusion_matrix() -> None:
    rows = [
        ("pdf", "pdf"),
        ("pdf", "none"),
        ("docx", "docx"),
        ("none", "none"),
        ("none", "pdf"),
        ("docx", "xlsx"),
    ]
    cm = confusion_matrix(rows, labels=["pdf", "docx", "none"])
    assert cm.labels == ("pdf", "docx", "none", "xlsx")
    assert cm.count("pdf", "none") == 1
    assert cm.count("docx", "xlsx") == 1
    assert cm.total == 6
    assert cm.accuracy == 3 / 6
    assert cm.one_vs_rest("pdf") == TriggerMetrics(tp=1, fp=1, tn=3, fn=1)
    assert cm.to_json()["counts"][0] == [1, 0, 1, 0]
    assert confusion_matrix([("b", "a")]).labels == ("a", "b")
    assert confusion_matrix([]).accuracy is None
    with pytest.raises(ValueError, match="distinct"):
        confusion_matrix([], labels=["a", "a"])
