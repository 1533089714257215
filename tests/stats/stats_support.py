"""Shared by the statistics tests: the hypothesis budget, a trials strategy, a 2×2 builder."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st

FAST = settings(max_examples=150, deadline=None)


@st.composite
def trials(draw: st.DrawFn) -> tuple[int, int]:
    """``(n, c)``: up to 40 trials and how many passed."""
    n = draw(st.integers(0, 40))
    return n, draw(st.integers(0, n))


def pairs(a: int, b: int, c: int, d: int) -> list[tuple[bool, bool]]:
    """``(on, off)`` votes making the 2×2 table ``a, b, c, d``."""
    return [(True, True)] * a + [(True, False)] * b + [(False, True)] * c + [(False, False)] * d
