"""Exact binomial tails and the argument checks every estimator shares.

Probabilities are kept as :class:`~fractions.Fraction` until the caller needs a float, so a
p-value of exactly ``alpha`` counts as significant and thresholds typed as decimals mean what
they say.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Any, Literal

Sidedness = Literal["two-sided", "one-sided"]
"""How the lift is tested: ``two-sided`` (McNemar) or ``one-sided`` (sign test, ON better).
The same two words are used by the suite schema, the docs and ``results.json``."""

SidednessArg = Literal["two-sided", "one-sided", "greater"]
"""What the functions accept: ``greater`` is the older spelling of ``one-sided``."""

Z95 = 1.959963984540054
"""The 0.975 quantile of the standard normal: the z of a two-sided 95% interval."""


def sidedness_word(sidedness: str) -> Sidedness:
    """The one word for a sidedness, accepting the older ``greater`` for ``one-sided``.

    Raises:
        ValueError: For anything else.
    """
    if sidedness == "two-sided":
        return "two-sided"
    if sidedness in ("one-sided", "greater"):
        return "one-sided"
    raise ValueError(f"sidedness must be 'two-sided' or 'one-sided', got {sidedness!r}")


def check_counts(n: int, c: int) -> None:
    if n < 0 or not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")


def check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def check_discordant(b: int, c: int) -> None:
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")


def decimal(x: float) -> Fraction:
    """``x`` as the decimal it was written as.

    A threshold typed as 0.1 means one tenth, not the nearest binary float (which is slightly
    larger and would make an exact lift of 1/10 fail a ">= 0.1" check).
    """
    return Fraction(repr(float(x)))


def check_alpha(alpha: float) -> Fraction:
    exact = decimal(alpha)
    if not 0 < exact < 1:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha}")
    return exact


def upper_tail(m: int, k: int) -> Fraction:
    """P[X >= k] for X ~ Bin(m, 1/2), exactly."""
    if k <= 0:
        return Fraction(1)
    if k > m:
        return Fraction(0)
    return Fraction(sum(math.comb(m, i) for i in range(k, m + 1)), 2**m)


def p_two_sided(b: int, c: int) -> Fraction:
    return min(Fraction(1), 2 * upper_tail(b + c, max(b, c)))


def p_greater(b: int, c: int) -> Fraction:
    return upper_tail(b + c, b)


@lru_cache(maxsize=4096)
def min_wins(m: int, alpha: Fraction, sidedness: Sidedness) -> int | None:
    """Fewest ON wins among ``m`` discordant tests with ``p <= alpha``; None if none reach it.

    Walks down from a clean sweep, adding one binomial coefficient at a time, so the cost is
    linear in ``m`` (the power search calls this for every ``m`` up to thousands).
    """
    limit = alpha * 2**m  # compare tail counts, not probabilities
    if sidedness == "two-sided":
        limit /= 2
        lowest = m // 2 + 1  # a two-sided win must favour ON: more than half of the votes
    else:
        lowest = 0
    tail = 0
    term = 1  # C(m, wins), updated by C(m, w - 1) = C(m, w) * w / (m - w + 1)
    best: int | None = None
    for wins in range(m, lowest - 1, -1):
        tail += term
        if tail > limit:
            break
        best = wins
        term = term * wins // (m - wins + 1)
    return best


def min_discordant(alpha: Fraction, sidedness: Sidedness) -> int:
    """Fewest discordant tests for which some split reaches ``p <= alpha``."""
    # A clean sweep of m has p = 2^-m (one-sided) or 2^(1-m) (two-sided), so this terminates.
    m = 0
    while min_wins(m, alpha, sidedness) is None:
        m += 1
    return m


# -- JSON number formatting -------------------------------------------------------------------


def rounded(x: float) -> float:
    """Six significant digits rather than six decimals, so that tiny p-values survive."""
    return float(f"{x:.6g}")


def exact_text(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


def frac_json(x: Fraction | None) -> dict[str, Any] | None:
    if x is None:
        return None
    return {"value": rounded(float(x)), "exact": exact_text(x)}
