"""The questions a skill eval answers, computed from records: does it trigger, does it help,
is the help real, and is it reliable. All arithmetic lives in :mod:`skilleval.stats`."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from skilleval import stats
from skilleval.runner.arms import NONE, TriggerResult
from skilleval.runner.records import Record
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


def lift(
    suite: Suite, tests: Sequence[TestCase], records: Sequence[Record]
) -> dict[str, Any] | None:
    """Paired ON/OFF analysis over the tests meant to trigger, or None without both arms.

    The test runs on each test's pass rates (:func:`stats.lift_from_trials`), so a test is
    compared whenever both arms have a scored trial, even when a majority vote would tie."""
    if not {"on", "off"} <= set(suite.arms):
        return None
    rows = []
    counts: list[tuple[tuple[int, int], tuple[int, int]]] = []
    excluded: list[str] = []
    for test in lift_tests(tests):
        on, off = votes(records, test.id, "on"), votes(records, test.id, "off")
        rows.append({"test_id": test.id, "on": on, "off": off})
        pair = scored(records, test.id, "on"), scored(records, test.id, "off")
        if pair[0][0] and pair[1][0]:
            counts.append(pair)
        else:
            excluded.append(test.id)
    result = stats.lift_from_trials(
        counts, alpha=suite.lift.alpha, min_lift=suite.lift.min_lift, sidedness=suite.lift.sidedness
    )
    out = result.to_json()
    out["tests"] = rows
    out["excluded"] = excluded
    return out


def trigger(suite: Suite, results: Sequence[TriggerResult]) -> dict[str, Any] | None:
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
    out = metrics.to_json()
    cm = matrix.to_json()
    out["labels"] = cm.get("labels")
    out["matrix"] = cm.get("counts")
    out["tests"] = [r.to_json(name) for r in scored]
    out["misrouted"] = [r.test_id for r in decided if (r.chosen == name) != bool(r.expected)]
    out["errors"] = [r.test_id for r in scored if r.chosen is None]
    return out


def reliability(suite: Suite, records: Sequence[Record]) -> dict[str, Any] | None:
    """pass@k and pass^k per arm, when tests ran more than one trial."""
    if suite.trials < 2:
        return None
    out: dict[str, Any] = {}
    for arm in suite.arms:
        per_test: dict[str, tuple[int, int]] = {}
        for r in records:
            if r.arm != arm:  # an error counts as a trial that did not pass
                continue
            n, c = per_test.get(r.test_id, (0, 0))
            per_test[r.test_id] = (n + 1, c + (r.status == "pass"))
        if per_test:
            out[arm] = stats.reliability(per_test).to_json()
    return out or None


_COMPARISON = re.compile(r"^\s*(>=|>|<=|<|==)\s*([0-9.]+)\s*$")


def compare(expression: str, actual: float | None) -> bool:
    """Evaluate a gate condition such as ``">= 0.9"`` against a measured value."""
    match = _COMPARISON.match(expression)
    if match is None or actual is None:
        return False
    op, bound = match.group(1), float(match.group(2))
    return {
        ">=": actual >= bound,
        ">": actual > bound,
        "<=": actual <= bound,
        "<": actual < bound,
        "==": actual == bound,
    }[op]


def gate_checks(
    suite: Suite,
    primary: Mapping[str, Any],
    lift_block: Mapping[str, Any] | None,
    trigger_block: Mapping[str, Any] | None,
    errors: int,
) -> list[dict[str, Any]]:
    """Every gate condition with what was required and what was measured."""
    checks: list[dict[str, Any]] = []
    rate = primary.get("pass_rate")
    if suite.type == "regression":
        checks.append(
            {
                "name": "pass_rate",
                "required": f">= {suite.threshold}",
                "actual": rate,
                "passed": rate is not None and rate >= suite.threshold,
            }
        )
    gate = suite.gate
    if "pass_rate" in gate:
        checks.append(
            {
                "name": "pass_rate",
                "required": gate["pass_rate"],
                "actual": rate,
                "passed": compare(gate["pass_rate"], rate),
            }
        )
    if "lift" in gate:
        verdict = lift_block.get("verdict") if lift_block else None
        want = gate["lift"]
        ok = verdict == "helps" if want == "helps" else verdict not in (None, "hurts")
        checks.append({"name": "lift", "required": want, "actual": verdict, "passed": ok})
    if "trigger_accuracy" in gate:
        acc = trigger_block.get("accuracy") if trigger_block else None
        checks.append(
            {
                "name": "trigger_accuracy",
                "required": gate["trigger_accuracy"],
                "actual": acc,
                "passed": compare(gate["trigger_accuracy"], acc),
            }
        )
    if "max_errors" in gate:
        checks.append(
            {
                "name": "max_errors",
                "required": f"<= {gate['max_errors']}",
                "actual": errors,
                "passed": errors <= int(gate["max_errors"]),
            }
        )
    return checks
