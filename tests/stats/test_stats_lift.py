"""The lift verdict: rules, reasons, arguments and properties."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from stats_support import FAST, pairs

from skilleval import stats
from skilleval.stats import PairedCounts, can_reach_significance, lift_analysis

# --------------------------------------------------------------------------- lift verdicts


def test_helps_with_reason() -> None:
    r = lift_analysis(pairs(4, 6, 0, 0), min_lift=0.1)
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
    r = lift_analysis(pairs(4, 0, 6, 0))
    assert r.verdict == "hurts"
    assert r.lift == -0.6
    assert "favour OFF" in r.reason
    assert "p=0.0312" in r.reason


def test_one_sided_uses_the_mirror_test_for_hurts() -> None:
    helps = lift_analysis(pairs(4, 5, 0, 1), sidedness="one-sided")
    assert helps.verdict == "helps"
    assert helps.sidedness == "one-sided"
    assert "(one-sided)" in helps.reason
    # The older spelling is accepted and reported with the one word.
    assert lift_analysis(pairs(4, 5, 0, 1), sidedness="one-sided") == helps
    hurts = lift_analysis(pairs(4, 0, 5, 1), sidedness="one-sided")
    assert hurts.verdict == "hurts"
    assert hurts.p_one_sided == 1.0
    assert hurts.p_one_sided_reverse == 1 / 32
    # The same 5-0 record cannot reach significance two-sided.
    assert lift_analysis(pairs(4, 5, 0, 1)).verdict == "underpowered"


def test_significant_but_below_min_lift_is_no_evidence() -> None:
    r = lift_analysis(pairs(90, 9, 1, 0), min_lift=0.1)
    assert r.p_two_sided <= 0.05
    assert r.verdict == "no evidence"
    assert "below min_lift 0.1" in r.reason


def test_min_lift_is_compared_as_written() -> None:
    # Lift is exactly 1/10; the float 0.1 is slightly larger than that.
    r = lift_analysis(pairs(54, 6, 0, 0), min_lift=0.1)
    assert r.lift_exact == Fraction(1, 10)
    assert r.verdict == "helps"


def test_no_evidence() -> None:
    r = lift_analysis(pairs(2, 4, 4, 0))
    assert r.verdict == "no evidence"
    assert r.reason == "the 8 discordant tests split evenly (b=4, c=4), p=1 > 0.05 (two-sided)"
    r = lift_analysis(pairs(0, 6, 2, 2))
    assert r.verdict == "no evidence"
    assert r.reason.startswith("6 of 8 discordant tests favour ON")


def test_fewer_than_five_tests_is_underpowered() -> None:
    r = lift_analysis(pairs(1, 2, 0, 1))
    assert r.verdict == "underpowered"
    assert r.reason == (
        "only 4 distinct tests compared; at least 5 are needed before the skill can be judged"
    )


def test_four_wins_of_four_is_p_one_eighth_two_sided() -> None:
    r = lift_analysis(pairs(0, 4, 0, 0), min_tests=0)
    assert r.p_two_sided == 0.125
    assert r.p_one_sided == 0.0625


def test_reason_says_why_an_interval_that_excludes_zero_gave_no_verdict() -> None:
    few = lift_analysis(pairs(0, 4, 0, 0))
    assert few.ci95 is not None
    assert few.ci95[0] > 0
    assert few.verdict == "underpowered"
    assert few.reason.endswith(
        "; the 95% interval [+0.31, +1.00] excludes 0, but below 5 distinct tests skilleval "
        "does not judge, because an interval from so few tests is a rough guide"
    )
    changed = lift_analysis(pairs(3, 5, 0, 2))  # Newcombe [0.078, 0.733], 5 of 5 two-sided
    assert changed.verdict == "underpowered"
    assert "excludes 0, but the interval is an approximation" in changed.reason
    close = lift_analysis(pairs(0, 7, 1, 0))  # p = 0.07 two-sided
    assert close.ci95 is not None
    assert close.ci95[0] > 0
    assert close.verdict == "no evidence"
    assert "excludes 0, but the verdict rests on the exact test" in close.reason
    # An interval that contains 0 needs no explanation.
    assert "interval" not in lift_analysis(pairs(2, 4, 4, 0)).reason


def test_too_few_discordant_is_underpowered() -> None:
    r = lift_analysis(pairs(20, 0, 0, 0))
    assert r.verdict == "underpowered"
    assert r.reason.startswith("none of 20 tests changed outcome")
    assert "at least 6 are needed" in r.reason
    r = lift_analysis(pairs(5, 4, 0, 1), sidedness="one-sided")
    assert r.verdict == "underpowered"
    assert "at least 5 are needed" in r.reason


def test_zero_tests_does_not_crash() -> None:
    r = lift_analysis([])
    assert r.verdict == "underpowered"
    assert r.lift is None
    assert r.lift_exact is None
    assert r.p_two_sided == 1.0
    assert r.ci95 is None
    out = json.loads(json.dumps(r.to_json()))
    assert out["lift"] is None
    assert out["ci95"] is None
    assert lift_analysis([], min_tests=0).verdict == "underpowered"


def test_lift_accepts_counts_and_serialises() -> None:
    r = lift_analysis(PairedCounts(3, 5, 0, 2), sidedness="one-sided")
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
    st.sampled_from(["two-sided", "one-sided"]),
)
def test_lift_properties(a: int, b: int, c: int, d: int, sidedness: stats.Sidedness) -> None:
    n = a + b + c + d
    r = lift_analysis(pairs(a, b, c, d), sidedness=sidedness)
    assert r.n == n
    for p in (r.p_two_sided, r.p_one_sided, r.p_one_sided_reverse):
        assert 0.0 <= p <= 1.0
    assert r.reason
    if n == 0:
        assert r.lift is None
        return
    assert r.lift_exact == Fraction(b - c, n)
    assert r.ci95 is not None
    assert r.ci95[0] <= (b - c) / n <= r.ci95[1]
    if r.verdict == "helps":
        assert b > c
    if r.verdict == "hurts":
        assert c > b
    if n < 5 or not can_reach_significance(b + c, 0.05, sidedness):
        assert r.verdict == "underpowered"
