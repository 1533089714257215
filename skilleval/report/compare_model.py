"""The typed result of comparing two runs: per-test changes, figures and settings, A and B."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from skilleval.exitcodes import ExitCode
from skilleval.util.frozen import frozen

__all__ = [
    "Change",
    "Comparison",
    "Delta",
    "RunRef",
    "SettingChange",
    "TestChange",
    "TierChange",
]

Change = Literal[
    "newly_failing", "newly_passing", "still_failing", "unchanged", "only_in_a", "only_in_b"
]


@frozen
class TestChange:
    """One test × arm in A and in B."""

    __test__ = False  # the name starts with "Test"; keep pytest from collecting it

    test_id: str
    arm: str
    change: Change
    before: str | None
    """A's status (pass, fail, error), or None when A did not run it."""
    after: str | None
    output_changed: bool
    outputs_a: tuple[str, ...] = ()
    outputs_b: tuple[str, ...] = ()
    reasons_b: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "test_id": self.test_id,
            "arm": self.arm,
            "change": self.change,
            "before": self.before,
            "after": self.after,
            "output_changed": self.output_changed,
        }
        if self.output_changed:
            out |= {"outputs_a": list(self.outputs_a), "outputs_b": list(self.outputs_b)}
        if self.reasons_b:
            out["reasons_b"] = list(self.reasons_b)
        return out


@frozen
class Delta:
    """One figure in A and in B."""

    name: str
    before: float | None
    after: float | None

    @property
    def change(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return round(self.after - self.before, 6)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "a": self.before, "b": self.after, "change": self.change}


@frozen
class RunRef:
    """Which run one side of the comparison is."""

    run_id: str
    suite: str | None
    status: str
    model: str | None
    verdict: str

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "suite": self.suite,
            "status": self.status,
            "model": self.model,
            "verdict": self.verdict,
        }


@frozen
class TierChange:
    """One arm's pass rate (overall or one tier) over the shared tests, in A and in B."""

    arm: str
    tier: str
    a: float | None
    b: float | None
    change: float | None
    a_counts: tuple[int, int]
    b_counts: tuple[int, int]

    def to_json(self) -> dict[str, Any]:
        return {
            "arm": self.arm,
            "tier": self.tier,
            "a": self.a,
            "b": self.b,
            "change": self.change,
            "a_counts": list(self.a_counts),
            "b_counts": list(self.b_counts),
        }


@frozen
class SettingChange:
    """A setting that differs between the runs."""

    name: str
    a: str | int
    b: str | int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "a": self.a, "b": self.b}


@dataclass
class Comparison:
    """Everything ``skilleval compare`` reports."""

    a: RunRef
    b: RunRef
    primary_arm: str | None
    shared_tests: int
    tests: list[TestChange]
    tiers: list[TierChange]
    lift: list[Delta] | None
    lift_verdicts: tuple[str | None, str | None] | None
    trigger: list[Delta] | None
    settings: list[SettingChange]
    warnings: list[str] = field(default_factory=list)
    regressions: list[str] = field(default_factory=list)
    gating: bool = True
    """B's suite is a regression suite, so a regression fails the exit code."""

    @property
    def regressed(self) -> bool:
        return bool(self.regressions)

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.GATE_FAILED if self.regressed and self.gating else ExitCode.OK

    def by_change(self, change: Change) -> list[TestChange]:
        return [t for t in self.tests if t.change == change]

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "warnings": self.warnings,
            "primary_arm": self.primary_arm,
            "shared_tests": self.shared_tests,
            "regressed": self.regressed,
            "regressions": self.regressions,
            "gating": self.gating,
            "exit_code": int(self.exit_code),
            "counts": {
                c: len(self.by_change(c))
                for c in ("newly_failing", "newly_passing", "still_failing", "unchanged")
            }
            | {"output_changed": sum(1 for t in self.tests if t.output_changed)},
            "tests": [
                t.to_json() for t in self.tests if t.change != "unchanged" or t.output_changed
            ],
            "tiers": [t.to_json() for t in self.tiers],
            "lift": None
            if self.lift is None
            else {
                "figures": [d.to_json() for d in self.lift],
                "verdict": {"a": self.lift_verdicts[0], "b": self.lift_verdicts[1]}
                if self.lift_verdicts
                else None,
            },
            "trigger": None if self.trigger is None else [d.to_json() for d in self.trigger],
            "settings": [c.to_json() for c in self.settings],
        }
