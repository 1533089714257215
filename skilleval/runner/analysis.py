"""The questions a skill eval answers, computed from records: does it trigger, does it help,
is the help real, and is it reliable. All arithmetic lives in :mod:`skilleval.stats`; this
module turns its answers into the typed blocks of :mod:`skilleval.results.model`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from skilleval import stats
from skilleval.results.codec import decode
from skilleval.results.model import Lift, LiftRow, Reliability, Trigger
from skilleval.results.records import Record
from skilleval.runner.arms import NONE, TriggerResult
from skilleval.suite.model import Suite, TestCase


def lift_tests(tests: Sequence[TestCase]) -> list[TestCase]:
    """The tests lift is computed over: those meant to trigger (all, if none says)."""
    marked = [t for t in tests if t.should_trigger is not None]
    if not marked:
        return list(tests)
    return [t for t in tests if t.should_trigger]


def votes(records: Sequence[Record], test_id: str, arm: str) -> bool | None:
    """One vote per test and arm: the majority of its scored trials (errors are left out)."""
    outcomes = [
        r.status == "pass"
        for r in records
        if r.test_id == test_id and r.arm == arm and r.status != "error"
    ]
    if not outcomes:
        return None
    return stats.majority(outcomes)


def scored(records: Sequence[Record], test_id: str, arm: str) -> tuple[int, int]:
    """Scored trials and passes for one test and arm (errors are left out)."""
    outcomes = [
        r.status == "pass"
        for r in records
        if r.test_id == test_id and r.arm == arm and r.status != "error"
    ]
    return len(outcomes), sum(outcomes)


def lift(suite: Suite, tests: Sequence[TestCase], records: Sequence[Record]) -> Lift | None:
    """Paired ON/OFF analysis over the tests meant to trigger, or None without both arms.

    The test runs on each test's pass rates (:func:`stats.lift_from_trials`), so a test is
    compared whenever both arms have a scored trial, even when a majority vote would tie."""
    if not {"on", "off"} <= set(suite.arms):
        return None
    rows: list[LiftRow] = []
    counts: list[tuple[tuple[int, int], tuple[int, int]]] = []
    excluded: list[str] = []
    for test in lift_tests(tests):
        on, off = votes(records, test.id, "on"), votes(records, test.id, "off")
        rows.append(LiftRow(test.id, on, off))
        pair = scored(records, test.id, "on"), scored(records, test.id, "off")
        if pair[0][0] and pair[1][0]:
            counts.append(pair)
        else:
            excluded.append(test.id)
    result = stats.lift_from_trials(
        counts, alpha=suite.lift.alpha, min_lift=suite.lift.min_lift, sidedness=suite.lift.sidedness
    )
    # The estimator's own rounding and exact fractions are kept as it reports them.
    return replace(
        decode(
            Lift,
            {
                **result.to_json(),
                "tests": [],
                "excluded": excluded,
            },
        ),
        tests=tuple(rows),
    )


def trigger(suite: Suite, results: Sequence[TriggerResult]) -> Trigger | None:
    """Trigger accuracy, precision, recall and F1 for the skill, plus a routing confusion matrix."""
    if suite.skill is None:
        return None
    name = suite.skill.name
    scored = [r for r in results if r.expected is not None]
    if not scored:
        return None
    decided = [r for r in scored if r.chosen is not None]
    metrics = stats.trigger_metrics([(bool(r.expected), r.chosen == name) for r in decided])
    expected_labels = [name if r.expected else NONE for r in decided]
    matrix = stats.confusion_matrix(
        list(zip(expected_labels, [r.chosen or NONE for r in decided], strict=True)),
        labels=[*sorted({name, *(s.name for s in suite.distractors)}), NONE],
    )
    return replace(
        decode(
            Trigger,
            {
                **metrics.to_json(),
                "labels": list(matrix.labels),
                "matrix": [list(row) for row in matrix.counts],
                "tests": [],
                "misrouted": [r.test_id for r in decided if (r.chosen == name) != bool(r.expected)],
                "errors": [r.test_id for r in scored if r.chosen is None],
            },
        ),
        tests=tuple(r.outcome(name) for r in scored),
    )


def reliability(suite: Suite, records: Sequence[Record]) -> dict[str, Reliability] | None:
    """pass@k and pass^k per arm, when tests ran more than one trial."""
    if suite.trials < 2:
        return None
    out: dict[str, Reliability] = {}
    for arm in suite.arms:
        per_test: dict[str, tuple[int, int]] = {}
        for r in records:
            if r.arm != arm:  # an error counts as a trial that did not pass
                continue
            n, c = per_test.get(r.test_id, (0, 0))
            per_test[r.test_id] = (n + 1, c + (r.status == "pass"))
        if per_test:
            out[arm] = decode(Reliability, stats.reliability(per_test).to_json())
    return out or None
