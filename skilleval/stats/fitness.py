"""Is a judge better than chance? An interval for a mean of per-pair scores, and its words.

A judge's fitness is measured on pairs: each pair's two outputs are graded, and the pair
scores 1 (both right), 0.5 (one) or 0. The outputs of a pair share a prompt and a rubric, so
they are not independent, and a Wilson interval over the outputs would be too narrow.
:func:`wilson_mean` takes the pair as the unit instead: a score bounded in [0, 1] with mean
p has a variance of at most p(1 − p), the variance of a yes/no outcome, so the Wilson
interval computed from the mean over n pairs is at least as wide as the truth needs
(conservative), and reduces to the ordinary Wilson interval when every score is 0 or 1.

A judge is qualified when the interval's lower bound is above chance (0.5): a judge that
gives every output the same grade scores exactly 0.5.
"""

from __future__ import annotations

import math
from typing import Final

from skilleval.stats._exact import Z95

CHANCE: Final = 0.5
"""The fitness of a judge that gives every output the same grade, or guesses."""


def wilson_mean(mean: float, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson's interval for the mean of ``n`` scores that each lie in [0, 1].

    Args:
        mean: The observed mean.
        n: How many scores.
        z: Normal quantile; the default gives a two-sided 95% interval.

    Returns:
        ``(lo, hi)``, or None when ``n == 0`` (nothing to bound).

    Raises:
        ValueError: ``mean`` is outside [0, 1], ``n`` is negative or ``z`` is not positive.
    """
    if not 0.0 <= mean <= 1.0:
        raise ValueError(f"mean must be in [0, 1], got {mean}")
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    if z <= 0:
        raise ValueError(f"z must be positive, got {z}")
    if n == 0:
        return None
    z2 = z * z
    denom = 1 + z2 / n
    centre = (mean + z2 / (2 * n)) / denom
    half = (z / denom) * math.sqrt(mean * (1 - mean) / n + z2 / (4 * n * n))
    lo = 0.0 if mean == 0.0 else max(0.0, centre - half)
    hi = 1.0 if mean == 1.0 else min(1.0, centre + half)
    return lo, hi


def above_chance(interval: tuple[float, float] | None) -> bool:
    """Whether the whole interval lies above :data:`CHANCE`."""
    return interval is not None and interval[0] > CHANCE


def figure_words(name: str, value: float, interval: tuple[float, float], n: int, unit: str) -> str:
    """``fitness 0.55 [0.43, 0.66] includes chance 0.5 on 73 pairs``, or ``is above`` /
    ``is below`` chance when the interval excludes it."""
    lo, hi = interval
    if lo > CHANCE:
        where = f"is above chance {CHANCE:g}"
    elif hi < CHANCE:
        where = f"is below chance {CHANCE:g}"
    else:
        where = f"includes chance {CHANCE:g}"
    return f"{name} {value:.2f} [{lo:.2f}, {hi:.2f}] {where} on {n} {unit}"
