"""Confidence intervals: Wilson for one proportion, Newcombe for a paired difference."""

from __future__ import annotations

import math

from skilleval.stats._exact import Z95, check_counts


def wilson(x: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a single proportion ``x / n``.

    Wilson, "Probable inference, the law of succession, and statistical inference", JASA 22
    (1927) 209–212. Unlike the Wald interval it stays inside [0, 1] and does not collapse to a
    point at 0/n or n/n.

    Args:
        x: Successes.
        n: Trials.
        z: Normal quantile; the default gives a two-sided 95% interval.

    Returns:
        ``(lo, hi)``; ``(0.0, 1.0)`` when ``n == 0``.

    Raises:
        ValueError: If the counts are impossible or ``z`` is not positive.
    """
    check_counts(n, x)
    if z <= 0:
        raise ValueError(f"z must be positive, got {z}")
    if n == 0:
        return 0.0, 1.0
    p = x / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = (z / denom) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # At 0/n and n/n one bound is exactly 0 or 1 algebraically; rounding would leave it a hair off.
    lo = 0.0 if x == 0 else max(0.0, centre - half)
    hi = 1.0 if x == n else min(1.0, centre + half)
    return lo, hi


def newcombe_paired(a: int, b: int, c: int, d: int, z: float = Z95) -> tuple[float, float] | None:
    """Newcombe's interval for the difference of paired proportions, ``(b - c) / n``.

    Method 10 of Newcombe, "Improved confidence intervals for the difference between binomial
    proportions based on paired data", Statistics in Medicine 17 (1998) 2635–2650. It combines
    Wilson intervals for ``p_on = (a+b)/n`` and ``p_off = (a+c)/n`` through the phi correlation
    of the 2×2 table. When ``ad > bc`` the phi numerator is reduced by ``n/2`` (not below 0);
    phi is 0 when its denominator is 0. Unlike the Wald interval it behaves at small n.

    Args:
        a: Both pass.
        b: Only ON passes.
        c: Only OFF passes.
        d: Both fail.
        z: Normal quantile; the default gives a two-sided 95% interval.

    Returns:
        ``(lo, hi)`` for ``p_on - p_off``, inside [-1, 1]; ``None`` when ``n == 0``, since
        there is then no difference to bound.

    Raises:
        ValueError: If a count is negative or ``z`` is not positive.
    """
    if min(a, b, c, d) < 0:
        raise ValueError(f"counts must be non-negative, got a={a}, b={b}, c={c}, d={d}")
    n = a + b + c + d
    if n == 0:
        return None
    p1 = (a + b) / n
    p2 = (a + c) / n
    l1, u1 = wilson(a + b, n, z)
    l2, u2 = wilson(a + c, n, z)
    num: float = a * d - b * c
    if num > 0:
        num = max(num - n / 2, 0.0)
    den_sq = (a + b) * (c + d) * (a + c) * (b + d)
    phi = num / math.sqrt(den_sq) if den_sq else 0.0
    # The radicands are >= 0 in exact arithmetic (|phi| <= 1); clamp away float noise.
    delta = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    eps = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    diff = (b - c) / n
    return max(-1.0, diff - delta), min(1.0, diff + eps)
