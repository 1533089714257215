"""The side-by-side judge's fitness: measured the first time a judge compares arms, then kept.

A run with a ``side-by-side`` assertion asks, before it grades, whether its judge prefers the
good output of each pair of the judge-fitness set when it sees the two side by side, the
places swapped on a second call (:mod:`skilleval.runner.sidebyside_check`). The share of pairs
where the good output was preferred is its fitness, with a Wilson interval over pairs; the
judge is qualified when that interval lies above chance (0.5). A tie, a preference for the bad
output and an error all count against it.

The outcome is kept beside the other judges' in ``<home>/judge-fitness.json``, under the
llm-rubric judge's key (:func:`~skilleval.runner.judgefit.memo_key`: the judge model, its
seed unless greedy, the fitness set and the judge prompts) with the side-by-side prompt's
digest and this rule's version added, so a changed prompt or rule is measured again.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from pathlib import Path
from typing import Final

from skilleval.api import Judge
from skilleval.results.model import JudgeFitness
from skilleval.runner.judgecheck import Pair, load_pairs
from skilleval.runner.judgefit import (
    SKIPPED,
    Notice,
    kept_or_measured,
    memo_key,
    own_counters,
    set_label,
)
from skilleval.runner.sidebyside_check import SideBySideReport, run_side_by_side_check
from skilleval.shipped import package_files
from skilleval.stats.fitness import CHANCE, above_chance, figure_words, wilson_mean
from skilleval.suite.model import Suite

RULE_VERSION: Final = 1
"""Part of the memo key: raise it when the measurement or its rule changes."""

TYPE: Final = "side-by-side"


def uses_side_by_side(suite: Suite) -> bool:
    """Whether any test of ``suite`` has a side-by-side assertion."""
    return any(a.spec.name == TYPE for t in suite.tests for a in t.every_assert)


def side_by_side_fitness(
    judge: Judge,
    home: Path,
    *,
    seed: int,
    check: bool = True,
    notice: Notice | None = None,
    pairs: list[Pair] | None = None,
) -> JudgeFitness:
    """The side-by-side judge's fitness: kept from an earlier measurement, else measured.

    Args:
        judge: The judge the run compares arms with.
        home: skilleval's home, where the measurement is kept.
        seed: The judge's seed (part of the key unless the judge is greedy).
        check: False skips the measurement: the result says the judge was not checked.
        notice: Where to say that a measurement starts and how it ended.
        pairs: Compare these instead of the whole fitness set (tests); the result is then
            neither read from nor kept in the home.
    """
    if not check:
        return JudgeFitness(status="not checked", reason=f"side-by-side {SKIPPED}")
    say = notice or (lambda _message: None)
    key = None if pairs is not None else memo_key_side_by_side(judge, seed)
    return kept_or_measured(
        home, key, "side-by-side judge fitness", say, lambda: _measure(judge, seed, say, pairs)
    )


def _measure(judge: Judge, seed: int, say: Notice, pairs: list[Pair] | None) -> JudgeFitness:
    """Compare the fitness pairs (``pairs``, else the shipped set) side by side."""
    todo = pairs if pairs is not None else load_pairs()
    say(
        f"side-by-side judge fitness: comparing {len(todo)} known-good and known-bad pairs "
        "(twice each, the places swapped); this runs once per judge model "
        "(--no-judge-check skips it)"
    )
    start = time.perf_counter()
    report = run_side_by_side_check(own_counters(judge, seed), todo)
    fitness = from_side_report(
        report, time.perf_counter() - start, set_label() if pairs is None else None
    )
    say(fitness.reason)
    return fitness


def from_side_report(
    report: SideBySideReport, seconds: float, fitness_set: str | None = None
) -> JudgeFitness:
    """The fitness a side-by-side check shows: the share of pairs where the good output was
    preferred (a tie, the bad output or an error is not), its interval and its status."""
    measured = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    pairs = len(report.outcomes)
    errors = report.count("error")
    if not pairs or errors == pairs:
        why = next((o.reason for o in report.outcomes if o.reason), "no pair was compared")
        return JudgeFitness(
            status="error",
            reason=f"side-by-side judge fitness unknown: the judge could not run: {why}",
            fitness_set=fitness_set,
            measured_at=measured,
            seconds=round(seconds, 3),
        )
    good = report.count("good")
    accuracy = good / pairs
    ci = wilson_mean(accuracy, pairs)
    assert ci is not None
    qualified = above_chance(ci)
    words = figure_words("preference for the good output", accuracy, ci, pairs, "pairs")
    status: Final = "qualified" if qualified else "unqualified"
    return JudgeFitness(
        status=status,
        reason=f"{status} side-by-side judge: {words} (ties {report.count('tie')}, bad "
        f"preferred {report.count('bad')}, the two calls disagreed on {report.split})",
        fitness=accuracy,
        ci95=ci,
        error_rate=errors / pairs,
        pairs=pairs,
        outputs=2 * pairs,
        correct=good,
        errors=errors,
        chance=CHANCE,
        fitness_set=fitness_set,
        measured_at=measured,
        seconds=round(seconds, 3),
    )


def memo_key_side_by_side(judge: Judge, seed: int) -> str | None:
    """The memo key of the side-by-side measurement; None when the judge has no identity."""
    base = memo_key(judge, seed, verdict=False)  # it grades no rubric
    if base is None:
        return None
    prompt = package_files("skilleval.judge") / "templates" / "side_by_side.j2"
    digest = hashlib.sha256(prompt.read_bytes()).hexdigest()[:16]
    return f"{base}|side-by-side={digest}|rule={RULE_VERSION}"
