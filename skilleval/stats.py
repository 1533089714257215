"""Statistics for skill evaluations, as pure functions over counts.

Nothing here touches models, files or the clock, and nothing imports scipy: every estimator is
computed from binomial coefficients with exact rational arithmetic and converted to ``float``
only at the edge. The tests cross-check the p-values against ``scipy.stats.binomtest``.

Sections:

* Reliability over repeated trials: :func:`pass_at_k`, :func:`pass_hat_k`, :func:`reliability`.
* Paired ON/OFF comparison: :func:`majority`, :func:`paired_counts`, :func:`mcnemar_exact`,
  :func:`sign_test_greater`, :func:`wilson`, :func:`newcombe_paired`,
  :func:`min_wins_for_significance`, :func:`can_reach_significance`, :func:`lift_analysis`.
* Triggering and routing: :func:`trigger_metrics`, :func:`confusion_matrix`.

Notation for paired outcomes, one pair per distinct test: ``a`` both pass, ``b`` only ON (skill
loaded) passes, ``c`` only OFF passes, ``d`` both fail, ``n = a + b + c + d``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

Sidedness = Literal["two-sided", "greater"]
LiftVerdict = Literal["helps", "hurts", "no evidence", "underpowered"]

Z95 = 1.959963984540054
"""The 0.975 quantile of the standard normal: the z of a two-sided 95% interval."""

_SIDEDNESS: tuple[Sidedness, ...] = ("two-sided", "greater")

__all__ = [
    "Z95",
    "ConfusionMatrix",
    "LiftResult",
    "LiftVerdict",
    "PairedCounts",
    "Reliability",
    "ReliabilityPoint",
    "Sidedness",
    "TestReliability",
    "TriggerMetrics",
    "can_reach_significance",
    "confusion_matrix",
    "lift_analysis",
    "majority",
    "mcnemar_exact",
    "min_wins_for_significance",
    "newcombe_paired",
    "paired_counts",
    "pass_at_k",
    "pass_hat_k",
    "reliability",
    "sign_test_greater",
    "trigger_metrics",
    "wilson",
]


# --------------------------------------------------------------------------- helpers


def _check_counts(n: int, c: int) -> None:
    if n < 0 or not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def _check_sidedness(sidedness: str) -> None:
    if sidedness not in _SIDEDNESS:
        raise ValueError(f"sidedness must be 'two-sided' or 'greater', got {sidedness!r}")


def _decimal(x: float) -> Fraction:
    # A threshold typed as 0.1 means one tenth, not the nearest binary float (which is slightly
    # larger and would make an exact lift of 1/10 fail a ">= 0.1" check).
    return Fraction(repr(float(x)))


def _check_alpha(alpha: float) -> Fraction:
    exact = _decimal(alpha)
    if not 0 < exact < 1:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha}")
    return exact


def _round(x: float) -> float:
    # Six significant digits rather than six decimals, so that tiny p-values survive.
    return float(f"{x:.6g}")


def _exact(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


def _frac_json(x: Fraction | None) -> dict[str, Any] | None:
    if x is None:
        return None
    return {"value": _round(float(x)), "exact": _exact(x)}


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _fmt_p(p: float) -> str:
    return "p<0.0001" if p < 0.0001 else f"p={p:.3g}"


def _upper_tail(m: int, k: int) -> Fraction:
    """P[X >= k] for X ~ Bin(m, 1/2), exactly."""
    if k <= 0:
        return Fraction(1)
    if k > m:
        return Fraction(0)
    return Fraction(sum(math.comb(m, i) for i in range(k, m + 1)), 2**m)


def _p_two_sided(b: int, c: int) -> Fraction:
    return min(Fraction(1), 2 * _upper_tail(b + c, max(b, c)))


def _p_greater(b: int, c: int) -> Fraction:
    return _upper_tail(b + c, b)


def _check_discordant(b: int, c: int) -> None:
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")


# --------------------------------------------------------------------------- pass@k and pass^k


def _pass_at(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def _pass_hat(n: int, c: int, k: int) -> Fraction:
    return Fraction(math.comb(c, k), math.comb(n, k))


def pass_at_k(n: int, c: int, k: int) -> Fraction | None:
    """Unbiased estimate of the chance that at least one of k trials passes.

    Computes ``1 - C(n-c, k) / C(n, k)`` exactly, from Chen et al. 2021, "Evaluating Large
    Language Models Trained on Code" (arXiv:2107.03374), eq. 1. With ``k = 1`` this is exactly
    ``c / n``. It is not the plug-in ``1 - (1 - c/n)**k``, which is biased.

    Args:
        n: Trials run for the test.
        c: Trials that passed.
        k: Trials the estimate is about.

    Returns:
        The estimate, or ``None`` when fewer than ``k`` trials were run (not computable).

    Raises:
        ValueError: If the counts are impossible or ``k < 1``.
    """
    _check_counts(n, c)
    _check_k(k)
    return _pass_at(n, c, k) if n >= k else None


def pass_hat_k(n: int, c: int, k: int) -> Fraction | None:
    """Unbiased estimate of the chance that all of k trials pass (pass^k).

    Computes ``C(c, k) / C(n, k)`` exactly, from Yao et al. 2024, "τ-bench: A Benchmark for
    Tool-Agent-User Interaction in Real-World Domains" (arXiv:2406.12045). Sampling k of the n
    trials without replacement makes it unbiased for ``p**k``; the plug-in ``(c/n)**k``
    overstates it for ``k >= 2``.

    Args:
        n: Trials run for the test.
        c: Trials that passed.
        k: Trials the estimate is about.

    Returns:
        The estimate, or ``None`` when fewer than ``k`` trials were run (not computable).

    Raises:
        ValueError: If the counts are impossible or ``k < 1``.
    """
    _check_counts(n, c)
    _check_k(k)
    return _pass_hat(n, c, k) if n >= k else None


@dataclass(frozen=True, slots=True)
class TestReliability:
    """One test's repeated-trial record and its full pass@k / pass^k curves."""

    __test__ = False  # the name starts with "Test"; keep pytest from collecting it

    name: str
    n: int
    """Trials run."""
    c: int
    """Trials passed."""
    pass_at: tuple[Fraction, ...]
    """pass@k for k = 1..n (index 0 is k = 1)."""
    pass_hat: tuple[Fraction, ...]
    """pass^k for k = 1..n."""

    @property
    def flaky(self) -> bool:
        """Whether the trials disagree (some passed, some failed)."""
        return 0 < self.c < self.n

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "n": self.n,
            "c": self.c,
            "flaky": self.flaky,
            "pass_at_k": [
                {"k": k, "value": _round(float(v)), "exact": _exact(v)}
                for k, v in enumerate(self.pass_at, 1)
            ],
            "pass_hat_k": [
                {"k": k, "value": _round(float(v)), "exact": _exact(v)}
                for k, v in enumerate(self.pass_hat, 1)
            ],
        }


@dataclass(frozen=True, slots=True)
class ReliabilityPoint:
    """The suite-level pass@k and pass^k for one k: the mean over tests with at least k trials."""

    k: int
    pass_at_k: Fraction | None
    """``None`` when no test has k trials."""
    pass_hat_k: Fraction | None
    tests_counted: int
    """Tests with at least k trials, which are the ones averaged."""
    tests_skipped: int
    """Tests with fewer than k trials, left out of this k's mean."""

    def to_json(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "pass_at_k": _frac_json(self.pass_at_k),
            "pass_hat_k": _frac_json(self.pass_hat_k),
            "tests_counted": self.tests_counted,
            "tests_skipped": self.tests_skipped,
        }


@dataclass(frozen=True, slots=True)
class Reliability:
    """Per-test curves, the suite mean for each requested k, and the flaky tests."""

    tests: tuple[TestReliability, ...]
    aggregate: tuple[ReliabilityPoint, ...]
    flaky: tuple[str, ...]
    """Names of tests whose trials disagree (0 < c < n), in input order."""

    def at(self, k: int) -> ReliabilityPoint | None:
        """The aggregate point for ``k``, or ``None`` if it was not requested."""
        return next((p for p in self.aggregate if p.k == k), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "tests": [t.to_json() for t in self.tests],
            "aggregate": [p.to_json() for p in self.aggregate],
            "flaky": list(self.flaky),
        }


def reliability(
    per_test: Mapping[str, tuple[int, int]], ks: Iterable[int] | None = None
) -> Reliability:
    """Summarise repeated trials: pass@k and pass^k per test and averaged over tests.

    Per-test values follow :func:`pass_at_k` (Chen et al. 2021) and :func:`pass_hat_k` (Yao et
    al. 2024). The suite value for a k is the plain mean of the per-test estimates, as both
    papers do, taken only over tests that ran at least k trials; the rest are counted in
    ``tests_skipped`` rather than silently treated as failures.

    Args:
        per_test: Test name to ``(n, c)``: trials run and trials passed.
        ks: The k values to aggregate. Defaults to 1 up to the largest n.

    Returns:
        The per-test curves, one aggregate point per k (sorted, deduplicated) and the names of
        flaky tests.

    Raises:
        ValueError: If any counts are impossible or a k is below 1.
    """
    tests = []
    for name, (n, c) in per_test.items():
        _check_counts(n, c)
        at = tuple(_pass_at(n, c, k) for k in range(1, n + 1))
        hat = tuple(_pass_hat(n, c, k) for k in range(1, n + 1))
        tests.append(TestReliability(name=name, n=n, c=c, pass_at=at, pass_hat=hat))

    if ks is None:
        wanted = list(range(1, max((t.n for t in tests), default=0) + 1))
    else:
        wanted = sorted(set(ks))
        for k in wanted:
            _check_k(k)

    points = []
    for k in wanted:
        counted = [t for t in tests if t.n >= k]
        if counted:
            mean_at: Fraction | None = sum((t.pass_at[k - 1] for t in counted), Fraction(0)) / len(
                counted
            )
            mean_hat: Fraction | None = sum(
                (t.pass_hat[k - 1] for t in counted), Fraction(0)
            ) / len(counted)
        else:
            mean_at = mean_hat = None
        points.append(
            ReliabilityPoint(
                k=k,
                pass_at_k=mean_at,
                pass_hat_k=mean_hat,
                tests_counted=len(counted),
                tests_skipped=len(tests) - len(counted),
            )
        )
    return Reliability(
        tests=tuple(tests),
        aggregate=tuple(points),
        flaky=tuple(t.name for t in tests if t.flaky),
    )


# --------------------------------------------------------------------------- paired ON/OFF


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


@dataclass(frozen=True, slots=True)
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
    _check_discordant(b, c)
    return float(_p_two_sided(b, c))


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
    _check_discordant(b, c)
    return float(_p_greater(b, c))


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
    _check_counts(n, x)
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


def newcombe_paired(a: int, b: int, c: int, d: int, z: float = Z95) -> tuple[float, float]:
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
        ``(lo, hi)`` for ``p_on - p_off``, inside [-1, 1]; ``(-1.0, 1.0)`` when ``n == 0``.

    Raises:
        ValueError: If a count is negative or ``z`` is not positive.
    """
    counts = PairedCounts(a, b, c, d)
    n = counts.n
    if n == 0:
        return -1.0, 1.0
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


def _min_wins(n_discordant: int, alpha: Fraction, sidedness: Sidedness) -> int | None:
    if sidedness == "greater":
        candidates = range(n_discordant + 1)
        p_of = _p_greater
    else:
        # A two-sided win must favour ON, so it needs more than half of the votes.
        candidates = range(n_discordant // 2 + 1, n_discordant + 1)
        p_of = _p_two_sided
    for wins in candidates:
        if p_of(wins, n_discordant - wins) <= alpha:
            return wins
    return None


def min_wins_for_significance(
    n_discordant: int, alpha: float = 0.05, sidedness: Sidedness = "two-sided"
) -> int | None:
    """Fewest ON wins among ``n_discordant`` discordant tests that reach ``p <= alpha``.

    Uses the exact tests of :func:`mcnemar_exact` (two-sided) or :func:`sign_test_greater`
    (``"greater"``). At α = 0.05 the first reachable n is 5 one-sided (5 of 5, p = 1/32) and
    6 two-sided (6 of 6, p = 1/32), as tabulated in the dotnet/skills eval-quality notes.

    Args:
        n_discordant: Tests whose outcome differs between ON and OFF.
        alpha: Significance level, compared exactly as the decimal written.
        sidedness: ``"two-sided"`` or ``"greater"`` (one-sided, ON better).

    Returns:
        The minimum number of wins, or ``None`` if no outcome is significant.

    Raises:
        ValueError: If ``n_discordant`` is negative, or ``alpha`` or ``sidedness`` is invalid.
    """
    if n_discordant < 0:
        raise ValueError(f"n_discordant must be non-negative, got {n_discordant}")
    _check_sidedness(sidedness)
    return _min_wins(n_discordant, _check_alpha(alpha), sidedness)


def can_reach_significance(
    n_discordant: int, alpha: float = 0.05, sidedness: Sidedness = "two-sided"
) -> bool:
    """Whether any split of ``n_discordant`` discordant tests could give ``p <= alpha``.

    See :func:`min_wins_for_significance`; the answer is the same for a win as for a loss.

    Args:
        n_discordant: Tests whose outcome differs between ON and OFF.
        alpha: Significance level.
        sidedness: ``"two-sided"`` or ``"greater"``.

    Returns:
        ``False`` when even a clean sweep would not be significant.
    """
    return min_wins_for_significance(n_discordant, alpha, sidedness) is not None


def _min_discordant(alpha: Fraction, sidedness: Sidedness) -> int:
    # A clean sweep of m has p = 2^-m (one-sided) or 2^(1-m) (two-sided), so this terminates.
    m = 0
    while _min_wins(m, alpha, sidedness) is None:
        m += 1
    return m


@dataclass(frozen=True, slots=True)
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
    """Exact sign test, H1: OFF better (``P[X >= c]``); decides "hurts" under ``greater``."""
    ci95: tuple[float, float]
    """Newcombe 95% interval for the lift."""
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
            "lift": None if lift is None else _round(lift),
            "lift_exact": None if self.lift_exact is None else _exact(self.lift_exact),
            "p_two_sided": _round(self.p_two_sided),
            "p_one_sided": _round(self.p_one_sided),
            "p_one_sided_reverse": _round(self.p_one_sided_reverse),
            "ci95": [_round(self.ci95[0]), _round(self.ci95[1])],
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
    sidedness: Sidedness = "two-sided",
    min_tests: int = 5,
) -> LiftResult:
    """Decide whether a skill helps, hurts, or shows no evidence either way.

    Lift is ``(b - c) / n`` (Overfit's ``LiftSignificance``); significance comes from the exact
    McNemar test (two-sided) or the exact sign test (``"greater"``), and the interval from
    :func:`newcombe_paired`. The gate follows dotnet/skills: repeated trials are collapsed to
    one vote per test beforehand, and too few distinct tests is reported, not judged.

    Verdicts, checked in this order:

    * ``underpowered``: fewer than ``min_tests`` tests, or so few discordant tests that no
      split of them could reach ``p <= alpha``.
    * ``helps``: significant in ON's favour and ``lift >= min_lift``.
    * ``hurts``: significant in OFF's favour. Under ``"greater"`` the one-sided test only looks
      for help, so harm is judged by the mirror one-sided test (H1: OFF better) at the same
      alpha. No ``min_lift`` applies: a significant regression is always reported.
    * ``no evidence``: anything else, including a significant win smaller than ``min_lift``.

    Args:
        pairs: ``(on_passed, off_passed)`` per distinct test (see :func:`majority`), or an
            already tallied :class:`PairedCounts`.
        alpha: Significance level, compared exactly as the decimal written.
        min_lift: Smallest lift worth calling help, compared exactly as the decimal written.
        sidedness: ``"two-sided"`` (default) or ``"greater"``.
        min_tests: Fewest distinct tests needed before any verdict other than underpowered.

    Returns:
        The counts, lift, p-values, interval, verdict and a one-sentence reason.

    Raises:
        ValueError: If ``alpha``, ``sidedness`` or ``min_tests`` is invalid.
    """
    _check_sidedness(sidedness)
    alpha_x = _check_alpha(alpha)
    min_lift_x = _decimal(min_lift)
    if min_tests < 0:
        raise ValueError(f"min_tests must be non-negative, got {min_tests}")
    counts = pairs if isinstance(pairs, PairedCounts) else paired_counts(pairs)
    a, b, c, d, n = counts.a, counts.b, counts.c, counts.d, counts.n
    m = b + c

    lift_x = Fraction(b - c, n) if n else None
    p_two = _p_two_sided(b, c)
    p_on = _p_greater(b, c)
    p_off = _p_greater(c, b)
    if sidedness == "two-sided":
        p_help = p_hurt = p_two
    else:
        p_help, p_hurt = p_on, p_off
    side = "two-sided" if sidedness == "two-sided" else "one-sided"

    verdict: LiftVerdict
    tests_word = "test" if n == 1 else "tests"
    if n < min_tests:
        verdict = "underpowered"
        reason = (
            f"only {n} distinct {tests_word} compared; at least {min_tests} are needed "
            f"before the skill can be judged"
        )
    elif _min_wins(m, alpha_x, sidedness) is None:
        verdict = "underpowered"
        need = _min_discordant(alpha_x, sidedness)
        changed = "none" if m == 0 else f"only {m}"
        reason = (
            f"{changed} of {n} tests changed outcome between ON and OFF (b={b}, c={c}); "
            f"at least {need} are needed for any result to reach p ≤ {alpha:g} ({side})"
        )
    else:
        assert lift_x is not None  # n >= min_tests and m > 0 imply n > 0
        lift_f = float(lift_x)
        if b > c:
            lead = f"{b} of {m} discordant tests favour ON (b={b}, c={c})"
        elif c > b:
            lead = f"{c} of {m} discordant tests favour OFF (b={b}, c={c})"
        else:
            lead = f"the {m} discordant tests split evenly (b={b}, c={c})"
        if b > c and p_help <= alpha_x:
            stat = f"{_fmt_p(float(p_help))} ≤ {alpha:g} ({side})"
            if lift_x >= min_lift_x:
                verdict = "helps"
                reason = f"{lead}, {stat} and lift {_fmt(lift_f)} ≥ min_lift {min_lift:g}"
            else:
                verdict = "no evidence"
                reason = f"{lead}, {stat}, but lift {_fmt(lift_f)} is below min_lift {min_lift:g}"
        elif c > b and p_hurt <= alpha_x:
            verdict = "hurts"
            reason = f"{lead}, {_fmt_p(float(p_hurt))} ≤ {alpha:g} ({side}); lift {_fmt(lift_f)}"
        else:
            verdict = "no evidence"
            p_shown = p_help if b >= c else p_hurt
            reason = f"{lead}, {_fmt_p(float(p_shown))} > {alpha:g} ({side})"

    return LiftResult(
        n=n,
        a=a,
        b=b,
        c=c,
        d=d,
        lift_exact=lift_x,
        p_two_sided=float(p_two),
        p_one_sided=float(p_on),
        p_one_sided_reverse=float(p_off),
        ci95=newcombe_paired(a, b, c, d),
        alpha=alpha,
        min_lift=min_lift,
        min_tests=min_tests,
        sidedness=sidedness,
        verdict=verdict,
        reason=reason,
    )


# --------------------------------------------------------------------------- triggering


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


@dataclass(frozen=True, slots=True)
class TriggerMetrics:
    """Binary classification counts for "should the skill fire?" and the usual rates.

    A rate is ``None`` when its denominator is zero (e.g. precision with no predicted
    triggers), never a division error and never a made-up 0 or 1.
    """

    tp: int
    """Expected to trigger and did."""
    fp: int
    """Triggered when it should not have."""
    tn: int
    """Stayed quiet, as expected."""
    fn: int
    """Should have triggered and did not."""

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.tn + self.fn

    @property
    def accuracy(self) -> float | None:
        return _ratio(self.tp + self.tn, self.n)

    @property
    def precision(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float | None:
        # 2TP / (2TP + FP + FN) equals the harmonic mean when both are defined, and is still
        # defined (as 0) when precision is undefined but there were misses.
        return _ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn)

    def to_json(self) -> dict[str, Any]:
        def r(x: float | None) -> float | None:
            return None if x is None else _round(x)

        return {
            "tp": self.tp,
            "fp": self.fp,
            "tn": self.tn,
            "fn": self.fn,
            "n": self.n,
            "accuracy": r(self.accuracy),
            "precision": r(self.precision),
            "recall": r(self.recall),
            "f1": r(self.f1),
        }


def trigger_metrics(rows: Iterable[tuple[bool, bool]]) -> TriggerMetrics:
    """Count ``(expected_trigger, did_trigger)`` rows into a confusion table.

    Precision, recall and F1 are the standard information-retrieval definitions (van
    Rijsbergen, "Information Retrieval", 2nd ed., 1979, ch. 7).

    Args:
        rows: One ``(expected, actual)`` pair per test run.

    Returns:
        The counts; rates are properties on the result.
    """
    tp = fp = tn = fn = 0
    for expected, did in rows:
        if expected and did:
            tp += 1
        elif did:
            fp += 1
        elif expected:
            fn += 1
        else:
            tn += 1
    return TriggerMetrics(tp, fp, tn, fn)


@dataclass(frozen=True, slots=True)
class ConfusionMatrix:
    """Routing outcomes: rows are the expected label, columns the label chosen."""

    labels: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]
    """``counts[i][j]``: expected ``labels[i]``, chose ``labels[j]``."""

    def count(self, expected: str, chosen: str) -> int:
        return self.counts[self.labels.index(expected)][self.labels.index(chosen)]

    @property
    def total(self) -> int:
        return sum(sum(row) for row in self.counts)

    @property
    def accuracy(self) -> float | None:
        """Share of rows routed to the expected label; ``None`` with no rows."""
        return _ratio(sum(self.counts[i][i] for i in range(len(self.labels))), self.total)

    def one_vs_rest(self, label: str) -> TriggerMetrics:
        """Binary metrics for one label: "expected ``label``" against "chose ``label``"."""
        i = self.labels.index(label)
        tp = self.counts[i][i]
        row = sum(self.counts[i])
        col = sum(r[i] for r in self.counts)
        return TriggerMetrics(tp=tp, fp=col - tp, tn=self.total - row - col + tp, fn=row - tp)

    def to_json(self) -> dict[str, Any]:
        return {"labels": list(self.labels), "counts": [list(r) for r in self.counts]}


def confusion_matrix(
    rows: Iterable[tuple[str, str]], labels: Sequence[str] | None = None
) -> ConfusionMatrix:
    """Tabulate ``(expected_label, chosen_label)`` rows, e.g. skill names plus ``"none"``.

    Args:
        rows: One ``(expected, chosen)`` pair per routing decision.
        labels: Row and column order. Labels seen in ``rows`` but missing here are appended in
            sorted order, so no decision is dropped. Defaults to all seen labels, sorted.

    Returns:
        The matrix.

    Raises:
        ValueError: If ``labels`` repeats a label.
    """
    data = list(rows)
    given = list(labels or ())
    if len(set(given)) != len(given):
        raise ValueError(f"labels must be distinct, got {given}")
    seen = {x for pair in data for x in pair}
    order = given + sorted(seen - set(given))
    index = {label: i for i, label in enumerate(order)}
    grid = [[0] * len(order) for _ in order]
    for expected, chosen in data:
        grid[index[expected]][index[chosen]] += 1
    return ConfusionMatrix(labels=tuple(order), counts=tuple(tuple(r) for r in grid))
