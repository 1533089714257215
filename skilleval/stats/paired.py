"""The paired ON/OFF comparison on distinct tests: votes, the 2×2 table and exact tests.

Two exact tests of "the skill changes nothing": McNemar's (two-sided) and the sign test
(one-sided) on the tests whose single vote changed, and, for several trials per side, a
paired permutation test on each test's pass rates, which keeps what a majority vote throws
away (a 1–1 split, or 3 of 3 against 2 of 3).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction

from skilleval.stats._exact import (
    SidednessArg,
    check_alpha,
    check_discordant,
    min_wins,
    p_greater,
    p_two_sided,
    sidedness_word,
)
from skilleval.util.frozen import frozen


def majority(votes: Sequence[bool]) -> bool | None:
    """Collapse one side's repeated trials of a test into a single pass/fail.

    Repeated trials measure reliability, not extra independent tests, so a paired comparison
    must see one outcome per test and side (the rule used by the dotnet/skills sign-test gate).

    Tie rule: an even split, and an empty list, give ``None`` ("undecided"). Undecided tests
    carry no direction, so callers leave them out of :func:`paired_counts` and report them,
    rather than guessing a fail (which would bias the comparison against whichever side tied).

    Args:
        votes: One boolean per trial, ``True`` for a pass.

    Returns:
        ``True`` if strictly more than half passed, ``False`` if strictly more than half
        failed, otherwise ``None``.
    """
    passed = sum(1 for v in votes if v)
    failed = len(votes) - passed
    if passed == failed:
        return None
    return passed > failed


@frozen
class PairedCounts:
    """The 2×2 table of paired ON/OFF outcomes over distinct tests."""

    a: int
    """Both ON and OFF pass."""
    b: int
    """ON passes, OFF fails: the skill helped."""
    c: int
    """ON fails, OFF passes: the skill hurt."""
    d: int
    """Both fail."""

    def __post_init__(self) -> None:
        if min(self.a, self.b, self.c, self.d) < 0:
            raise ValueError(f"counts must be non-negative, got {self}")

    @property
    def n(self) -> int:
        """Distinct tests."""
        return self.a + self.b + self.c + self.d

    @property
    def discordant(self) -> int:
        """Tests whose outcome changed between ON and OFF (``b + c``)."""
        return self.b + self.c

    def to_json(self) -> dict[str, int]:
        return {"a": self.a, "b": self.b, "c": self.c, "d": self.d, "n": self.n}


def paired_counts(pairs: Iterable[tuple[bool, bool]]) -> PairedCounts:
    """Tally ``(on_passed, off_passed)`` pairs, one per distinct test, into a 2×2 table.

    Args:
        pairs: One ``(on, off)`` pair per test, each already collapsed with :func:`majority`.

    Returns:
        The counts ``a``, ``b``, ``c``, ``d``.
    """
    a = b = c = d = 0
    for on, off in pairs:
        if on and off:
            a += 1
        elif on:
            b += 1
        elif off:
            c += 1
        else:
            d += 1
    return PairedCounts(a, b, c, d)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar test on the discordant pairs.

    Under no effect, ``b ~ Bin(b + c, 1/2)``; the p-value is
    ``min(1, 2 * P[X >= max(b, c)])``. McNemar, "Note on the sampling error of the difference
    between correlated proportions or percentages", Psychometrika 12 (1947) 153–157; the exact
    binomial form is the one Overfit's ``LiftSignificance`` uses.

    Args:
        b: Tests only ON passed.
        c: Tests only OFF passed.

    Returns:
        The p-value; 1.0 when there are no discordant pairs.

    Raises:
        ValueError: If a count is negative.
    """
    check_discordant(b, c)
    return float(p_two_sided(b, c))


def sign_test_greater(b: int, c: int) -> float:
    """One-sided exact sign test that ON beats OFF: ``P[X >= b]``, ``X ~ Bin(b + c, 1/2)``.

    This is the exact binomial sign test (Dixon & Mood, "The statistical sign test", JASA 41
    (1946) 557–566) on the discordant pairs, as in the dotnet/skills gate with ties dropped.

    Args:
        b: Tests only ON passed (wins).
        c: Tests only OFF passed (losses).

    Returns:
        The p-value; 1.0 when there are no discordant pairs.

    Raises:
        ValueError: If a count is negative.
    """
    check_discordant(b, c)
    return float(p_greater(b, c))


def min_wins_for_significance(
    n_discordant: int, alpha: float = 0.05, sidedness: SidednessArg = "two-sided"
) -> int | None:
    """Fewest ON wins among ``n_discordant`` discordant tests that reach ``p <= alpha``.

    Uses the exact tests of :func:`mcnemar_exact` (two-sided) or :func:`sign_test_greater`
    (``"one-sided"``). At α = 0.05 the first reachable n is 5 one-sided (5 of 5, p = 1/32) and
    6 two-sided (6 of 6, p = 1/32), as tabulated in the dotnet/skills eval-quality notes.

    Args:
        n_discordant: Tests whose outcome differs between ON and OFF.
        alpha: Significance level, compared exactly as the decimal written.
        sidedness: ``"two-sided"`` or ``"one-sided"`` (ON better; ``"greater"`` also accepted).

    Returns:
        The minimum number of wins, or ``None`` if no outcome is significant.

    Raises:
        ValueError: If ``n_discordant`` is negative, or ``alpha`` or ``sidedness`` is invalid.
    """
    if n_discordant < 0:
        raise ValueError(f"n_discordant must be non-negative, got {n_discordant}")
    return min_wins(n_discordant, check_alpha(alpha), sidedness_word(sidedness))


def can_reach_significance(
    n_discordant: int, alpha: float = 0.05, sidedness: SidednessArg = "two-sided"
) -> bool:
    """Whether any split of ``n_discordant`` discordant tests could give ``p <= alpha``.

    See :func:`min_wins_for_significance`; the answer is the same for a win as for a loss.

    Args:
        n_discordant: Tests whose outcome differs between ON and OFF.
        alpha: Significance level.
        sidedness: ``"two-sided"`` or ``"one-sided"``.

    Returns:
        ``False`` when even a clean sweep would not be significant.
    """
    return min_wins_for_significance(n_discordant, alpha, sidedness) is not None


@frozen
class PermutationP:
    """Exact p-values of the paired permutation test; see :func:`paired_permutation_test`."""

    two_sided: Fraction
    greater: Fraction
    """H1: ON better."""
    less: Fraction
    """H1: OFF better."""
    discordant: int
    """Tests whose two pass rates differ: the only ones that carry information."""


def paired_permutation_test(differences: Sequence[Fraction]) -> PermutationP:
    """Exact paired permutation (sign-flip) test on per-test differences.

    Each difference is one test's ON pass rate minus its OFF pass rate. If the skill changes
    nothing, ON and OFF are exchangeable within a test, so each difference is as likely to
    have the opposite sign. The statistic is their sum; the p-value counts the 2^m sign
    patterns of the m non-zero differences that give a sum at least as extreme (Fisher, "The
    Design of Experiments", 1935, §21; Pitman, JRSS Suppl. 4 (1937) 119–130). It is exact at
    any sample size, and with one trial per side (differences of -1, 0 or 1) it is exactly the
    sign test, and its two-sided form exactly McNemar's.

    The distribution is counted by subset sums over the differences scaled to integers, so
    the cost grows with the number of tests times the sum of the scaled differences: small
    for equal trials per side, larger when errors leave odd trial counts.

    Args:
        differences: One difference per test, each in [-1, 1].

    Returns:
        Two-sided (``|sum|`` at least the observed), greater and less p-values.

    Raises:
        ValueError: If a difference is outside [-1, 1].
    """
    nonzero = [Fraction(x) for x in differences if x != 0]
    for x in nonzero:
        if not -1 <= x <= 1:
            raise ValueError(f"a difference of pass rates lies in [-1, 1], got {x}")
    m = len(nonzero)
    if m == 0:
        return PermutationP(Fraction(1), Fraction(1), Fraction(1), 0)
    scale = math.lcm(*(x.denominator for x in nonzero))
    sizes = [int(abs(x) * scale) for x in nonzero]
    observed = int(sum(nonzero) * scale)
    total = sum(sizes)
    # ways[s]: sign patterns whose positive differences add up to s; their sum is 2s - total.
    ways = [1] + [0] * total
    for size in sizes:
        ways = [w + (ways[s - size] if s >= size else 0) for s, w in enumerate(ways)]
    greater = sum(w for s, w in enumerate(ways) if 2 * s - total >= observed)
    less = sum(w for s, w in enumerate(ways) if 2 * s - total <= observed)
    extreme = sum(w for s, w in enumerate(ways) if abs(2 * s - total) >= abs(observed))
    den = 2**m
    return PermutationP(Fraction(extreme, den), Fraction(greater, den), Fraction(less, den), m)
