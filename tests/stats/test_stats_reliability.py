"""pass@k and pass^k: published values, properties, and the suite curve's fixed set of tests."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from stats_support import FAST, trials

from skilleval.stats import pass_at_k, pass_hat_k, reliability, reliability_from_outcomes

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


def test_the_curve_uses_one_set_of_tests_for_every_k() -> None:
    rel = reliability({"steady": (5, 5), "flaky": (5, 3), "short": (2, 1), "dead": (4, 0)})
    assert [t.name for t in rel.tests] == ["steady", "flaky", "short", "dead"]
    assert rel.flaky == ("flaky", "short")
    flaky = rel.tests[1]
    assert flaky.pass_at == tuple(Fraction(PASS_AT_5_3[k]) for k in range(1, 6))
    assert flaky.pass_hat == tuple(Fraction(PASS_HAT_5_3[k]) for k in range(1, 6))
    # By default the curve stops at the shortest record, so every test is in every point.
    assert [p.k for p in rel.aggregate] == [1, 2]
    assert {(p.tests_counted, p.tests_skipped) for p in rel.aggregate} == {(4, 0)}
    k1, k2 = rel.aggregate
    assert k1.pass_at_k == (1 + Fraction(3, 5) + Fraction(1, 2) + 0) / 4
    assert k2.pass_hat_k == (1 + Fraction(3, 10) + 0 + 0) / 4
    # Asking for a longer curve leaves the short tests out of all of it, not just its tail.
    long = reliability({"steady": (5, 5), "flaky": (5, 3), "short": (2, 1)}, ks=range(1, 6))
    assert {(p.tests_counted, p.tests_skipped) for p in long.aggregate} == {(2, 1)}
    k3 = long.at(3)
    assert k3 is not None
    assert k3.pass_at_k == 1
    assert k3.pass_hat_k == (1 + Fraction(1, 10)) / 2


def test_pass_hat_cannot_rise_when_a_short_test_drops_out() -> None:
    # Under the old per-k sets, the failing short test left the mean at k = 3 and pass^3
    # (1.0) came out above pass^2 (0.5).
    rel = reliability({"good": (3, 3), "bad": (2, 0)}, ks=[1, 2, 3])
    values = [p.pass_hat_k for p in rel.aggregate]
    assert values == [1, 1, 1]
    assert rel.aggregate[0].tests_counted == 1


def test_reliability_requested_ks_and_empty_input() -> None:
    rel = reliability({"t": (2, 1)}, ks=[3, 1, 1])
    assert [p.k for p in rel.aggregate] == [1, 3]
    for point in rel.aggregate:
        assert point.pass_at_k is None
        assert point.pass_hat_k is None
        assert (point.tests_counted, point.tests_skipped) == (0, 1)
    empty = reliability({})
    assert empty.aggregate == ()
    assert empty.flaky == ()
    assert reliability({"never-ran": (0, 0)}).aggregate == ()
    with pytest.raises(ValueError, match="k must be at least 1"):
        reliability({"t": (2, 1)}, ks=[0])


def test_an_error_counts_as_a_trial_that_did_not_pass() -> None:
    rel = reliability_from_outcomes({"t": ["pass", "error", "error"], "u": ["error", "fail"]})
    t, u = rel.tests
    assert (t.n, t.c, u.n, u.c) == (3, 1, 2, 0)
    assert u.pass_at == (0, 0)  # never passed: never "passes at 2"
    assert rel.flaky == ("t",)


@st.composite
def records(draw: st.DrawFn) -> dict[str, list[str]]:
    names = draw(st.lists(st.text("abcdef", min_size=1, max_size=3), max_size=6, unique=True))
    outcome = st.sampled_from(["pass", "fail", "error"])
    return {name: draw(st.lists(outcome, min_size=0, max_size=7)) for name in names}


@FAST
@given(
    st.dictionaries(st.text("abc", max_size=2), trials(), max_size=6), st.sets(st.integers(1, 8))
)
def test_suite_curve_is_monotone_in_k(per_test: dict[str, tuple[int, int]], ks: set[int]) -> None:
    rel = reliability(per_test, ks or None)
    points = [p for p in rel.aggregate if p.pass_at_k is not None]
    assert len({(p.tests_counted, p.tests_skipped) for p in rel.aggregate}) <= 1
    for x, y in itertools.pairwise(points):
        assert x.pass_at_k is not None
        assert y.pass_at_k is not None
        assert x.pass_hat_k is not None
        assert y.pass_hat_k is not None
        assert x.pass_at_k <= y.pass_at_k
        assert x.pass_hat_k >= y.pass_hat_k
        assert 0 <= y.pass_hat_k <= y.pass_at_k <= 1


@FAST
@given(records())
def test_the_error_rule_cannot_raise_a_figure(per_test: dict[str, list[str]]) -> None:
    counted = reliability_from_outcomes(per_test)
    dropped = {name: [s for s in ss if s != "error"] for name, ss in per_test.items()}
    as_pass = {name: ["pass" if s == "error" else s for s in ss] for name, ss in per_test.items()}
    for test, without, optimistic in zip(
        counted.tests,
        reliability_from_outcomes(dropped).tests,
        reliability_from_outcomes(as_pass).tests,
        strict=True,
    ):
        if test.c == 0:
            assert all(v == 0 for v in test.pass_at)
        for k in range(1, test.n + 1):
            assert test.pass_at[k - 1] <= optimistic.pass_at[k - 1]
            assert test.pass_hat[k - 1] <= optimistic.pass_hat[k - 1]
            if k <= without.n:
                assert test.pass_at[k - 1] <= without.pass_at[k - 1]
                assert test.pass_hat[k - 1] <= without.pass_hat[k - 1]


def test_reliability_to_json_keeps_exact_fractions() -> None:
    out = reliability({"t": (5, 3)}).to_json()
    json.dumps(out)
    assert out["tests"][0]["pass_at_k"][1] == {"k": 2, "value": 0.9, "exact": "9/10"}
    assert out["aggregate"][2]["pass_hat_k"] == {"value": 0.1, "exact": "1/10"}
    assert out["flaky"] == ["t"]
