"""Aggregate records into the figures people read: pass rates per arm and per tier, kept apart."""

from __future__ import annotations

from collections.abc import Sequence

from skilleval.results.model import ArmSummary, Summary, Tally, TestRow
from skilleval.results.records import Record

TIERS: tuple[str, ...] = ("deterministic", "model")


def _rate(passed: int, failed: int) -> float | None:
    total = passed + failed
    return round(passed / total, 6) if total else None


def tally(statuses: Sequence[str]) -> Tally:
    passed = sum(1 for s in statuses if s == "pass")
    failed = sum(1 for s in statuses if s == "fail")
    errors = sum(1 for s in statuses if s == "error")
    return Tally(passed, failed, errors, len(statuses), _rate(passed, failed))


def arm_summary(records: Sequence[Record]) -> ArmSummary:
    """Overall and per-tier figures for one arm. Error results count in neither rate."""
    overall = tally([r.status for r in records])
    metrics: dict[str, list[float]] = {}
    for r in records:
        for name, value in r.metrics.items():
            metrics.setdefault(name, []).append(value)
    return ArmSummary(
        passed=overall.passed,
        failed=overall.failed,
        errors=overall.errors,
        total=overall.total,
        pass_rate=overall.pass_rate,
        tiers={tier: tally([r.tiers[tier] for r in records if tier in r.tiers]) for tier in TIERS},
        metrics={k: round(sum(v) / len(v), 6) for k, v in sorted(metrics.items())},
    )


def per_test(records: Sequence[Record]) -> tuple[TestRow, ...]:
    """One row per test × arm: trials passed, failed and errored."""
    counts: dict[tuple[str, str], list[int]] = {}
    for r in records:
        row = counts.setdefault((r.test_id, r.arm), [0, 0, 0])
        row[("pass", "fail", "error").index(r.status)] += 1
    return tuple(
        TestRow(test_id, arm, passed, failed, errors, passed + failed + errors)
        for (test_id, arm), (passed, failed, errors) in counts.items()
    )


def summarize(records: Sequence[Record], arms: Sequence[str]) -> Summary:
    return Summary(
        arms={arm: arm_summary([r for r in records if r.arm == arm]) for arm in arms},
        tests=per_test(records),
        errors=sum(1 for r in records if r.status == "error"),
    )
