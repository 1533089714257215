"""Planning: how likely a suite is to show that a skill helps, and how many tests it needs.

The model behind every figure: each distinct test is *tied* (both arms give the same vote)
with probability ``tie_rate``, independently; an untied test is a win for the skill with
probability ``win_rate``. The verdict is then :func:`~skilleval.stats.lift.lift_analysis`'s,
computed exactly over every outcome: the exact test's critical number of wins comes from
integer arithmetic, and the binomial weights are floats.

Power is not monotone in the number of tests for an exact test (adding a test can raise the
wins needed by one), so "tests needed" is the first count that reaches the target, the same
convention as the published planning table (one-sided, α = 0.05, 80% power: 8, 18, 37 and
158 discordant tests for true win rates of 0.9, 0.8, 0.7 and 0.6).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Any

from skilleval.stats._exact import (
    Sidedness,
    SidednessArg,
    check_alpha,
    decimal,
    min_wins,
    sidedness_word,
)
from skilleval.util.frozen import frozen

SEARCH_LIMIT = 2000
"""The most tests :func:`plan_power` considers before it reports the target as out of reach."""


def _pmf(m: int, p: float) -> list[float]:
    """P[X = i] for X ~ Bin(m, p), i = 0..m."""
    if p <= 0:
        return [1.0] + [0.0] * m
    if p >= 1:
        return [0.0] * m + [1.0]
    lp, lq = math.log(p), math.log1p(-p)
    top = math.lgamma(m + 1)
    return [
        math.exp(top - math.lgamma(i + 1) - math.lgamma(m - i + 1) + i * lp + (m - i) * lq)
        for i in range(m + 1)
    ]


@lru_cache(maxsize=4096)
def _tails(m: int, p: float) -> tuple[float, ...]:
    """P[X >= k] for X ~ Bin(m, p), k = 0..m+1."""
    out = [0.0] * (m + 2)
    for i, x in reversed(list(enumerate(_pmf(m, p)))):
        out[i] = out[i + 1] + x
    return tuple(min(1.0, t) for t in out)


def _check_rate(name: str, x: float) -> None:
    if not 0 <= x <= 1:
        raise ValueError(f"{name} must be between 0 and 1, got {x}")


def discordant_power(
    m: int, win_rate: float, *, alpha: float = 0.05, sidedness: SidednessArg = "one-sided"
) -> float:
    """Chance that ``m`` discordant tests give a significant win for ON.

    Args:
        m: Discordant tests (ties already excluded).
        win_rate: True chance that a discordant test favours ON.
        alpha: Significance level.
        sidedness: The test the verdict uses.

    Returns:
        ``P[wins >= critical]`` with wins ~ Bin(m, win_rate); 0 when no split is significant.
    """
    _check_rate("win_rate", win_rate)
    need = min_wins(m, check_alpha(alpha), sidedness_word(sidedness))
    return 0.0 if need is None else _tails(m, win_rate)[need]


def discordant_for_power(
    win_rate: float,
    *,
    target: float = 0.8,
    alpha: float = 0.05,
    sidedness: SidednessArg = "one-sided",
    limit: int = 10 * SEARCH_LIMIT,
) -> int | None:
    """Fewest discordant tests whose :func:`discordant_power` reaches ``target``.

    Returns:
        The count, or ``None`` if none up to ``limit`` does.
    """
    _check_rate("target", target)
    return next(
        (
            m
            for m in range(limit + 1)
            if discordant_power(m, win_rate, alpha=alpha, sidedness=sidedness) >= target
        ),
        None,
    )


def suite_power(
    n_tests: int,
    *,
    win_rate: float,
    tie_rate: float,
    alpha: float = 0.05,
    sidedness: SidednessArg = "two-sided",
    min_lift: float = 0.0,
    min_tests: int = 5,
) -> float:
    """Chance that ``n_tests`` distinct tests give a ``helps`` verdict.

    Args:
        n_tests: Distinct tests compared between ON and OFF.
        win_rate: True chance that an untied test favours ON.
        tie_rate: True chance that a test is tied (same vote ON and OFF).
        alpha: Significance level, as in the suite's ``lift:``.
        sidedness: As in the suite's ``lift:``.
        min_lift: As in the suite's ``lift:``; the lift ``(b - c) / n`` must reach it.
        min_tests: Fewest tests before any verdict but ``underpowered``.

    Returns:
        The probability, between 0 and 1.

    Raises:
        ValueError: If a rate or count is out of range.
    """
    _check_rate("win_rate", win_rate)
    _check_rate("tie_rate", tie_rate)
    if n_tests < 0:
        raise ValueError(f"n_tests must be non-negative, got {n_tests}")
    if n_tests < min_tests or n_tests == 0:
        return 0.0
    alpha_x, side, floor = check_alpha(alpha), sidedness_word(sidedness), decimal(min_lift)
    total = 0.0
    for m, weight in enumerate(_pmf(n_tests, 1 - tie_rate)):
        if weight < 1e-16:
            continue
        need = min_wins(m, alpha_x, side)
        if need is None:
            continue
        # lift = (2·wins - m) / n >= min_lift  <=>  wins >= (m + min_lift·n) / 2
        by_lift = math.ceil((m + floor * n_tests) / 2) if floor > 0 else 0
        k = max(need, by_lift)
        if k <= m:
            total += weight * _tails(m, win_rate)[k]
    return min(1.0, total)


@frozen
class PowerPlan:
    """A suite's chance of a ``helps`` verdict, and what it takes to reach the target."""

    n_tests: int
    win_rate: float
    tie_rate: float
    alpha: float
    sidedness: Sidedness
    min_lift: float
    target: float
    power: float
    """Chance of ``helps`` with ``n_tests`` tests."""
    tests_needed: int | None
    """First count of tests, at least ``n_tests``, whose power reaches ``target``; ``None``
    when none up to :data:`SEARCH_LIMIT` does (e.g. a win rate of 0.5 or below)."""

    @property
    def tests_to_add(self) -> int | None:
        return None if self.tests_needed is None else self.tests_needed - self.n_tests

    def to_json(self) -> dict[str, Any]:
        return {
            "n_tests": self.n_tests,
            "win_rate": self.win_rate,
            "tie_rate": self.tie_rate,
            "alpha": self.alpha,
            "sidedness": self.sidedness,
            "min_lift": self.min_lift,
            "target": self.target,
            "power": float(f"{self.power:.6g}"),
            "tests_needed": self.tests_needed,
            "tests_to_add": self.tests_to_add,
        }


def plan_power(
    n_tests: int,
    *,
    win_rate: float = 0.8,
    tie_rate: float = 0.5,
    alpha: float = 0.05,
    sidedness: SidednessArg = "two-sided",
    min_lift: float = 0.0,
    min_tests: int = 5,
    target: float = 0.8,
) -> PowerPlan:
    """:func:`suite_power` now, and the first number of tests that reaches ``target``.

    Args:
        n_tests: Distinct tests the suite compares now.
        win_rate: Assumed true chance that an untied test favours ON.
        tie_rate: Observed or assumed chance that a test is tied.
        alpha: As in the suite's ``lift:``.
        sidedness: As in the suite's ``lift:``.
        min_lift: As in the suite's ``lift:``.
        min_tests: Fewest tests before any verdict but ``underpowered``.
        target: The power wanted.

    Returns:
        The plan.
    """
    _check_rate("target", target)

    def power(n: int) -> float:
        return suite_power(
            n,
            win_rate=win_rate,
            tie_rate=tie_rate,
            alpha=alpha,
            sidedness=sidedness,
            min_lift=min_lift,
            min_tests=min_tests,
        )

    now = power(n_tests)
    needed: int | None = n_tests if now >= target else None
    # Past these, more tests cannot help: no wins to find, or an expected lift below min_lift.
    reachable = win_rate > 0.5 and tie_rate < 1 and (1 - tie_rate) * (2 * win_rate - 1) > min_lift
    if needed is None and reachable:
        needed = next(
            (n for n in range(n_tests + 1, max(n_tests, SEARCH_LIMIT) + 1) if power(n) >= target),
            None,
        )
    return PowerPlan(
        n_tests=n_tests,
        win_rate=win_rate,
        tie_rate=tie_rate,
        alpha=alpha,
        sidedness=sidedness_word(sidedness),
        min_lift=min_lift,
        target=target,
        power=now,
        tests_needed=needed,
    )


def observed_tie_rate(a: int, b: int, c: int, d: int) -> Fraction | None:
    """Share of compared tests whose vote did not change: ``(a + d) / n``; None when n is 0."""
    n = a + b + c + d
    return Fraction(a + d, n) if n else None
