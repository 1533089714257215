"""Reliability over repeated trials: pass@k, pass^k, per test and for the suite.

The suite curve is averaged over one fixed set of tests for every k, and a trial that ended
in an error counts as a trial that did not pass. Together these make the curve behave as the
quantities it estimates must: pass@k never falls and pass^k never rises as k grows, and a
test that never passed has pass@k = 0 for every k.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from skilleval.stats._exact import check_counts, check_k, exact_text, frac_json, rounded
from skilleval.util.frozen import frozen


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
    check_counts(n, c)
    check_k(k)
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
    check_counts(n, c)
    check_k(k)
    return _pass_hat(n, c, k) if n >= k else None


@frozen
class TestReliability:
    """One test's repeated-trial record and its full pass@k / pass^k curves."""

    __test__ = False  # the name starts with "Test"; keep pytest from collecting it

    name: str
    n: int
    """Trials run, errors included."""
    c: int
    """Trials passed."""
    pass_at: tuple[Fraction, ...]
    """pass@k for k = 1..n (index 0 is k = 1)."""
    pass_hat: tuple[Fraction, ...]
    """pass^k for k = 1..n."""

    @property
    def flaky(self) -> bool:
        """Whether the trials disagree (some passed, some did not)."""
        return 0 < self.c < self.n

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "n": self.n,
            "c": self.c,
            "flaky": self.flaky,
            "pass_at_k": [
                {"k": k, "value": rounded(float(v)), "exact": exact_text(v)}
                for k, v in enumerate(self.pass_at, 1)
            ],
            "pass_hat_k": [
                {"k": k, "value": rounded(float(v)), "exact": exact_text(v)}
                for k, v in enumerate(self.pass_hat, 1)
            ],
        }


@frozen
class ReliabilityPoint:
    """The suite-level pass@k and pass^k for one k, over the curve's fixed set of tests."""

    k: int
    pass_at_k: Fraction | None
    """``None`` when the curve's set of tests is empty or ``k`` is past its shortest record."""
    pass_hat_k: Fraction | None
    tests_counted: int
    """Tests averaged: the same set for every k of the curve."""
    tests_skipped: int
    """Tests left out of the whole curve, because they ran fewer trials than its largest k."""

    def to_json(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "pass_at_k": frac_json(self.pass_at_k),
            "pass_hat_k": frac_json(self.pass_hat_k),
            "tests_counted": self.tests_counted,
            "tests_skipped": self.tests_skipped,
        }


@frozen
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
    papers do, over **one fixed set of tests for the whole curve**: the tests that ran at least
    as many trials as the curve's largest k. A test with fewer is left out of every point and
    counted in ``tests_skipped``, so no point of the curve is averaged over a different set
    from its neighbours. By default the curve stops at the shortest record, so every test
    that ran is counted.

    Error rule: pass ``n`` as every trial run, errors included, and ``c`` as the passes. An
    error then counts as a trial that did not pass, which can only lower pass@k and pass^k
    against leaving the trial out; a test that never passed has pass@k = 0 for every k.

    Args:
        per_test: Test name to ``(n, c)``: trials run and trials passed.
        ks: The k values to aggregate. Defaults to 1 up to the smallest n above 0.

    Returns:
        The per-test curves, one aggregate point per k (sorted, deduplicated) and the names of
        flaky tests.

    Raises:
        ValueError: If any counts are impossible or a k is below 1.
    """
    tests = []
    for name, (n, c) in per_test.items():
        check_counts(n, c)
        at = tuple(_pass_at(n, c, k) for k in range(1, n + 1))
        hat = tuple(_pass_hat(n, c, k) for k in range(1, n + 1))
        tests.append(TestReliability(name=name, n=n, c=c, pass_at=at, pass_hat=hat))

    if ks is None:
        wanted = list(range(1, min((t.n for t in tests if t.n > 0), default=0) + 1))
    else:
        wanted = sorted(set(ks))
        for k in wanted:
            check_k(k)

    largest = max(wanted, default=1)
    counted = [t for t in tests if t.n >= largest]
    points = []
    for k in wanted:
        mean_at: Fraction | None = None
        mean_hat: Fraction | None = None
        if counted:
            mean_at = sum((t.pass_at[k - 1] for t in counted), Fraction(0)) / len(counted)
            mean_hat = sum((t.pass_hat[k - 1] for t in counted), Fraction(0)) / len(counted)
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


def reliability_from_outcomes(
    per_test: Mapping[str, Iterable[str]], ks: Iterable[int] | None = None
) -> Reliability:
    """:func:`reliability` from each test's trial statuses, applying the error rule.

    Args:
        per_test: Test name to its trials' statuses: ``"pass"``, ``"fail"`` or ``"error"``.
            Every trial counts towards ``n``; only ``"pass"`` counts towards ``c``.
        ks: As for :func:`reliability`.

    Returns:
        As :func:`reliability`.
    """
    counts: dict[str, tuple[int, int]] = {}
    for name, statuses in per_test.items():
        seen = list(statuses)
        counts[name] = (len(seen), sum(1 for s in seen if s == "pass"))
    return reliability(counts, ks)
