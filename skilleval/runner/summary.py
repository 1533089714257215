"""Aggregate records into the figures people read: pass rates per arm and per tier, kept apart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from skilleval.runner.records import Record


def _rate(passed: int, failed: int) -> float | None:
    total = passed + failed
    return round(passed / total, 6) if total else None


def tally(statuses: Sequence[str]) -> dict[str, Any]:
    passed = sum(1 for s in statuses if s == "pass")
    failed = sum(1 for s in statuses if s == "fail")
    errors = sum(1 for s in statuses if s == "error")
    return {
        "passed": passed,
        "failed": failed,
        "errors": errors,
        "total": len(statuses),
        "pass_rate": _rate(passed, failed),
    }


def arm_summary(records: Sequence[Record]) -> dict[str, Any]:
    """Overall and per-tier figures for one arm. Error results count in neither rate."""
    out = tally([r.status for r in records])
    out["tiers"] = {
        tier: tally([r.tiers[tier] for r in records if tier in r.tiers])
        for tier in ("deterministic", "model")
    }
    metrics: dict[str, list[float]] = {}
    for r in records:
        for name, value in r.metrics.items():
            metrics.setdefault(name, []).append(value)
    out["metrics"] = {k: round(sum(v) / len(v), 6) for k, v in sorted(metrics.items())}
    return out


def per_test(records: Sequence[Record]) -> list[dict[str, Any]]:
    """One row per test × arm: trials passed, failed and errored."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for r in records:
        row = rows.setdefault(
            (r.test_id, r.arm),
            {
                "test_id": r.test_id,
                "arm": r.arm,
                "passed": 0,
                "failed": 0,
                "errors": 0,
                "trials": 0,
            },
        )
        row["trials"] += 1
        row[{"pass": "passed", "fail": "failed", "error": "errors"}[r.status]] += 1
    return list(rows.values())


def summarize(records: Sequence[Record], arms: Sequence[str]) -> dict[str, Any]:
    by_arm = {arm: arm_summary([r for r in records if r.arm == arm]) for arm in arms}
    return {
        "arms": by_arm,
        "tests": per_test(records),
        "errors": sum(1 for r in records if r.status == "error"),
    }
