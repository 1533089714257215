"""Does the skill help? The lift, its tests and interval, and the verdict with its reason.

:func:`lift_analysis` takes one vote per test and side; :func:`lift_from_trials` takes each
side's trial counts and tests the per-test pass rates, which keeps the information a
majority vote loses when a test runs several trials.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from skilleval.stats._exact import (
    Sidedness,
    SidednessArg,
    check_alpha,
    check_counts,
    decimal,
    exact_text,
    p_greater,
    p_two_sided,
    rounded,
    sidedness_word,
)
from skilleval.stats.intervals import newcombe_paired
from skilleval.stats.paired import PairedCounts, paired_counts, paired_permutation_test
from skilleval.stats.verdict import LiftVerdict, decide
from skilleval.stats.wording import lift_reason
from skilleval.util.frozen import frozen


@frozen
class LiftResult:
    """Whether loading the skill changed the pass rate, with the evidence behind the verdict."""

    n: int
    """Distinct tests compared."""
    a: int
    b: int
    c: int
    d: int
    lift_exact: Fraction | None
    """``(b - c) / n`` exactly; ``None`` when ``n == 0``."""
    p_two_sided: float
    """Exact McNemar, two-sided."""
    p_one_sided: float
    """Exact sign test, H1: ON better (``P[X >= b]``)."""
    p_one_sided_reverse: float
    """Exact sign test, H1: OFF better (``P[X >= c]``); decides "hurts" one-sided."""
    ci95: tuple[float, float] | None
    """Newcombe 95% interval for the lift; ``None`` when no test was compared."""
    alpha: float
    min_lift: float
    min_tests: int
    sidedness: Sidedness
    """The test the verdict used."""
    verdict: LiftVerdict
    reason: str
    """One sentence saying why the verdict was reached."""

    @property
    def lift(self) -> float | None:
        """``p_on - p_off = (b - c) / n`` as a float; ``None`` when ``n == 0``."""
        return None if self.lift_exact is None else float(self.lift_exact)

    @property
    def counts(self) -> PairedCounts:
        return PairedCounts(self.a, self.b, self.c, self.d)

    def to_json(self) -> dict[str, Any]:
        lift = self.lift
        return {
            "n": self.n,
            "a": self.a,
            "b": self.b,
            "c": self.c,
            "d": self.d,
            "lift": None if lift is None else rounded(lift),
            "lift_exact": None if self.lift_exact is None else exact_text(self.lift_exact),
            "p_two_sided": rounded(self.p_two_sided),
            "p_one_sided": rounded(self.p_one_sided),
            "p_one_sided_reverse": rounded(self.p_one_sided_reverse),
            "ci95": None if self.ci95 is None else [rounded(self.ci95[0]), rounded(self.ci95[1])],
            "alpha": self.alpha,
            "min_lift": self.min_lift,
            "min_tests": self.min_tests,
            "sidedness": self.sidedness,
            "verdict": self.verdict,
            "reason": self.reason,
        }


def lift_analysis(
    pairs: Iterable[tuple[bool, bool]] | PairedCounts,
    *,
    alpha: float = 0.05,
    min_lift: float = 0.0,
    sidedness: SidednessArg = "two-sided",
    min_tests: int = 5,
) -> LiftResult:
    """Decide whether a skill helps, hurts, or shows no evidence either way.

    Lift is ``(b - c) / n`` (Overfit's ``LiftSignificance``); significance comes from the exact
    McNemar test (two-sided) or the exact sign test (``"one-sided"``), and the interval from
    :func:`newcombe_paired`. The gate follows dotnet/skills: repeated trials are collapsed to
    one vote per test beforehand, and too few distinct tests is reported, not judged.

    Verdicts, checked in this order:

    * ``underpowered``: fewer than ``min_tests`` tests, or so few discordant tests that no
      split of them could reach ``p <= alpha``.
    * ``helps``: significant in ON's favour and ``lift >= min_lift``.
    * ``hurts``: significant in OFF's favour. Under ``"one-sided"`` the one-sided test only looks
      for help, so harm is judged by the mirror one-sided test (H1: OFF better) at the same
      alpha. No ``min_lift`` applies: a significant regression is always reported.
    * ``no evidence``: anything else, including a significant win smaller than ``min_lift``.

    Args:
        pairs: ``(on_passed, off_passed)`` per distinct test (see :func:`majority`), or an
            already tallied :class:`PairedCounts`.
        alpha: Significance level, compared exactly as the decimal written.
        min_lift: Smallest lift worth calling help, compared exactly as the decimal written.
        sidedness: ``"two-sided"`` (default) or ``"one-sided"`` (``"greater"`` is accepted
            as an older spelling; the result always says ``"one-sided"``).
        min_tests: Fewest distinct tests needed before any verdict other than underpowered.

    Returns:
        The counts, lift, p-values, interval, verdict and a one-sentence reason.

    Raises:
        ValueError: If ``alpha``, ``sidedness`` or ``min_tests`` is invalid.
    """
    counts = pairs if isinstance(pairs, PairedCounts) else paired_counts(pairs)
    lift = Fraction(counts.b - counts.c, counts.n) if counts.n else None
    return _result(
        counts,
        lift,
        p_two=p_two_sided(counts.b, counts.c),
        p_on=p_greater(counts.b, counts.c),
        p_off=p_greater(counts.c, counts.b),
        alpha=alpha,
        min_lift=min_lift,
        sidedness=sidedness,
        min_tests=min_tests,
    )


def lift_from_trials(
    per_test: Iterable[tuple[tuple[int, int], tuple[int, int]]],
    *,
    alpha: float = 0.05,
    min_lift: float = 0.0,
    sidedness: SidednessArg = "two-sided",
    min_tests: int = 5,
) -> LiftResult:
    """:func:`lift_analysis` on per-test pass rates instead of majority votes.

    Each test gives ``((n_on, c_on), (n_off, c_off))``: scored trials and passes per side
    (tests without a scored trial on both sides are left out by the caller). The reduction
    keeps every trial: the test's difference is ``c_on/n_on - c_off/n_off``, and the p-values
    come from the exact :func:`~skilleval.stats.paired.paired_permutation_test` on those
    differences. A 1–1 split is no longer discarded, and 3 of 3 against 2 of 3 counts for
    something. With one trial per side the result equals :func:`lift_analysis` exactly.

    The table and the lift are those of the per-test directions: ``b`` and ``c`` count the
    tests whose ON rate is above / below their OFF rate, ``a`` and ``d`` the tests with equal
    rates (``d`` when both are 0), and ``lift`` is ``(b - c) / n``, the share of tests ON
    does better on minus the share OFF does better on, with Newcombe's interval for it. With
    one trial per side these are the usual table, lift and interval. The verdict rules are
    those of :func:`lift_analysis`, with the ``b + c`` tests whose rates differ as the
    discordant ones: at least 5 (one-sided) or 6 (two-sided) are needed before any result is
    significant.

    Returns:
        As :func:`lift_analysis`.

    Raises:
        ValueError: If counts are impossible or a side has no trial, or as
            :func:`lift_analysis`.
    """
    diffs: list[Fraction] = []
    a = b = c = d = 0
    for (n_on, c_on), (n_off, c_off) in per_test:
        check_counts(n_on, c_on)
        check_counts(n_off, c_off)
        if n_on == 0 or n_off == 0:
            raise ValueError("each test needs at least one scored trial on both sides")
        diff = Fraction(c_on, n_on) - Fraction(c_off, n_off)
        diffs.append(diff)
        if diff > 0:
            b += 1
        elif diff < 0:
            c += 1
        elif c_on:
            a += 1
        else:
            d += 1
    test = paired_permutation_test(diffs)
    counts = PairedCounts(a, b, c, d)
    lift = Fraction(b - c, counts.n) if counts.n else None
    return _result(
        counts,
        lift,
        p_two=test.two_sided,
        p_on=test.greater,
        p_off=test.less,
        alpha=alpha,
        min_lift=min_lift,
        sidedness=sidedness,
        min_tests=min_tests,
    )


def _result(
    counts: PairedCounts,
    lift: Fraction | None,
    *,
    p_two: Fraction,
    p_on: Fraction,
    p_off: Fraction,
    alpha: float,
    min_lift: float,
    sidedness: SidednessArg,
    min_tests: int,
) -> LiftResult:
    side: Sidedness = sidedness_word(sidedness)
    alpha_x = check_alpha(alpha)
    if min_tests < 0:
        raise ValueError(f"min_tests must be non-negative, got {min_tests}")
    a, b, c, d = counts.a, counts.b, counts.c, counts.d
    p_help, p_hurt = (p_two, p_two) if side == "two-sided" else (p_on, p_off)
    interval = newcombe_paired(a, b, c, d)
    decision = decide(
        n=counts.n,
        b=b,
        c=c,
        lift=lift,
        p_help=p_help,
        p_hurt=p_hurt,
        alpha=alpha,
        alpha_exact=alpha_x,
        min_lift=min_lift,
        min_lift_exact=decimal(min_lift),
        min_tests=min_tests,
        sidedness=side,
        interval=interval,
    )
    return LiftResult(
        n=counts.n,
        a=a,
        b=b,
        c=c,
        d=d,
        lift_exact=lift,
        p_two_sided=float(p_two),
        p_one_sided=float(p_on),
        p_one_sided_reverse=float(p_off),
        ci95=interval,
        alpha=alpha,
        min_lift=min_lift,
        min_tests=min_tests,
        sidedness=side,
        verdict=decision.verdict,
        reason=lift_reason(decision),
    )
