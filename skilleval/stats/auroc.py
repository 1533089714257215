"""The area under the ROC curve of a score over two classes, with its interval.

A router's choice is a threshold on a score; the AUROC is the threshold-free view of that
score: the chance that a randomly drawn positive (a request that should trigger the skill)
scores above a randomly drawn negative, ties counting half. 0.5 is a coin, 1.0 a perfect
ranking. It equals the Mann–Whitney ``U`` of the positives divided by ``n1 · n0``.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

from skilleval.stats._exact import Z95, rounded
from skilleval.util.frozen import frozen

_GRID = 400
"""Grid steps used to bracket each interval limit before bisection."""


def mann_whitney_u(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """``U`` of the positives: pairs where the positive scores higher, ties counting half.

    Counted by sorting the negatives once and bisecting for each positive, so it takes
    ``O((n1 + n0) log n0)``.
    """
    ordered = sorted(negatives)
    total = 0.0
    for score in positives:
        below = bisect_left(ordered, score)
        ties = bisect_right(ordered, score) - below
        total += below + ties / 2
    return total


def _variance(theta: float, n1: int, n0: int) -> float:
    # Hanley and McNeil's variance with Q1 = θ/(2−θ), Q2 = 2θ²/(1+θ), written as a function of
    # θ, with both (n − 1) factors replaced by N* = (n1 + n0)/2 − 1 (Newcombe's Method 5).
    star = (n1 + n0) / 2 - 1
    spread = (1 - theta) / (2 - theta) + theta / (1 + theta)
    return theta * (1 - theta) * (1 + star * spread) / (n1 * n0)


def _limit(estimate: float, n1: int, n0: int, z: float, *, upper: bool) -> float:
    """The interval limit on one side of ``estimate``: where ``(A − θ)² = z² V(θ)``."""

    def outside(theta: float) -> bool:
        return (estimate - theta) ** 2 > z * z * _variance(theta, n1, n0)

    edge = 1.0 if upper else 0.0
    if not outside(edge):
        return edge
    # Walk from the estimate towards the edge and stop at the first θ outside the interval,
    # then bisect between it and the last θ inside.
    inside = estimate
    for step in range(1, _GRID + 1):
        theta = estimate + (edge - estimate) * step / _GRID
        if outside(theta):
            break
        inside = theta
    lo, hi = (inside, theta) if upper else (theta, inside)
    for _ in range(60):
        mid = (lo + hi) / 2
        if outside(mid) == upper:
            hi = mid
        else:
            lo = mid
    return lo if upper else hi


def newcombe_auroc_interval(
    estimate: float, n1: int, n0: int, z: float = Z95
) -> tuple[float, float]:
    """A score-type interval for an AUROC of ``estimate`` from ``n1`` positives and ``n0`` negatives.

    Method 5 of Newcombe, "Confidence intervals for an effect size measure based on the
    Mann–Whitney statistic. Part 2: Asymptotic methods and evaluation", Statistics in
    Medicine 25 (2006) 559–573: every θ with ``(A − θ)² <= z² V(θ)``, where ``V`` is Hanley
    and McNeil's variance as a function of θ with ``N* = (n1 + n0)/2 − 1`` for both sample
    sizes. Like Wilson's interval for a proportion it stays inside [0, 1] and does not
    collapse to a point at 0 or 1, so one positive ranked above one negative is not a proof.

    Raises:
        ValueError: If a class is empty, the estimate is outside [0, 1] or ``z`` is not positive.
    """
    if n1 < 1 or n0 < 1:
        raise ValueError(f"both classes need a member, got n1={n1}, n0={n0}")
    if not 0.0 <= estimate <= 1.0:
        raise ValueError(f"an AUROC lies in [0, 1], got {estimate}")
    if z <= 0:
        raise ValueError(f"z must be positive, got {z}")
    return _limit(estimate, n1, n0, z, upper=False), _limit(estimate, n1, n0, z, upper=True)


@frozen
class AurocEstimate:
    """The AUROC of a score over two classes; ``value`` is None when a class is empty."""

    value: float | None
    ci95: tuple[float, float] | None
    positives: int
    negatives: int
    u: float
    """Mann–Whitney ``U`` of the positives (pairs ranked right, ties half)."""

    @property
    def includes_chance(self) -> bool | None:
        """Whether the interval includes 0.5 (a ranking no better than a coin); None without one."""
        if self.ci95 is None:
            return None
        return self.ci95[0] <= 0.5 <= self.ci95[1]

    def to_json(self) -> dict[str, Any]:
        return {
            "value": None if self.value is None else rounded(self.value),
            "ci95": None if self.ci95 is None else [rounded(v) for v in self.ci95],
            "positives": self.positives,
            "negatives": self.negatives,
            "u": self.u,
        }


def auroc(positives: Sequence[float], negatives: Sequence[float]) -> AurocEstimate:
    """The AUROC of the positives' scores against the negatives', with a 95% interval.

    Ties count half (the Mann–Whitney convention), so a constant score gives 0.5. The
    interval is :func:`newcombe_auroc_interval`.

    Raises:
        ValueError: If a score is not a finite number.
    """
    if any(not math.isfinite(x) for x in (*positives, *negatives)):
        raise ValueError("scores must be finite numbers")
    n1, n0 = len(positives), len(negatives)
    if not n1 or not n0:
        return AurocEstimate(None, None, n1, n0, 0.0)
    u = mann_whitney_u(positives, negatives)
    value = u / (n1 * n0)
    return AurocEstimate(value, newcombe_auroc_interval(value, n1, n0), n1, n0, u)
