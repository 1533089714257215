"""Wilson and Newcombe intervals: published examples and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from stats_support import FAST, trials

from skilleval.stats import newcombe_paired, wilson

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
    interval = newcombe_paired(3, 5, 0, 2)
    assert interval is not None
    lo, hi = interval
    assert lo == pytest.approx(0.078, abs=5e-4)
    assert hi == pytest.approx(0.733, abs=5e-4)


def test_newcombe_no_data_and_zero_denominator() -> None:
    assert newcombe_paired(0, 0, 0, 0) is None  # no test, no difference to bound
    interval = newcombe_paired(10, 0, 0, 0)  # phi's denominator is 0
    assert interval is not None
    lo, hi = interval
    with pytest.raises(ValueError, match="non-negative"):
        newcombe_paired(-1, 0, 0, 0)
    assert lo <= 0.0 <= hi


@FAST
@given(*(st.integers(0, 30) for _ in range(4)))
def test_newcombe_contains_the_difference(a: int, b: int, c: int, d: int) -> None:
    n = a + b + c + d
    interval = newcombe_paired(a, b, c, d)
    if n == 0:
        assert interval is None
        return
    assert interval is not None
    lo, hi = interval
    assert -1.0 <= lo <= hi <= 1.0
    assert lo <= (b - c) / n <= hi
