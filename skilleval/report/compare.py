"""Compare two runs from their results files alone: what changed from A to B, and is it worse?

Tests are paired by test id and arm. Pass rates are recomputed over the tests both runs share,
so a run of a larger suite is compared like for like; lift and trigger figures are each run's
own. B *regresses* when, on the primary arm, a test that passed in A does not pass in B, or
B's pass rate is lower than A's. On a regression suite that is exit code 1.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tabulate import tabulate

from skilleval.exitcodes import ExitCode
from skilleval.report import view
from skilleval.report.view import Row
from skilleval.results.model import ArmSummary, Run, Tally, Trigger
from skilleval.results.summary import summarize

Change = Literal[
    "newly_failing", "newly_passing", "still_failing", "unchanged", "only_in_a", "only_in_b"
]

_EPS = 1e-9


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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


def _ref(run: Run) -> RunRef:
    return RunRef(
        run_id=run.run_id,
        suite=run.suite.path,
        status=run.status,
        model=view.model_label(run.environment.model) if run.environment else None,
        verdict=view.verdict(run).label,
    )


def _change(before: Row | None, after: Row | None) -> Change:
    if before is None:
        return "only_in_b"
    if after is None:
        return "only_in_a"
    if before.status == "pass" and after.status != "pass":
        return "newly_failing"
    if before.status != "pass" and after.status == "pass":
        return "newly_passing"
    return "unchanged" if after.status == "pass" else "still_failing"


def _outputs(row: Row | None) -> tuple[str, ...]:
    return tuple(r.output for r in row.records) if row else ()


def _test_changes(run_a: Run, run_b: Run) -> list[TestChange]:
    rows_a = {(r.test_id, r.arm): r for r in view.rows(run_a)}
    rows_b = {(r.test_id, r.arm): r for r in view.rows(run_b)}
    keys = list(rows_a) + [k for k in rows_b if k not in rows_a]
    changes = []
    for key in keys:
        before, after = rows_a.get(key), rows_b.get(key)
        kind = _change(before, after)
        out_a, out_b = _outputs(before), _outputs(after)
        changed = before is not None and after is not None and out_a != out_b
        changes.append(
            TestChange(
                test_id=key[0],
                arm=key[1],
                change=kind,
                before=before.status if before else None,
                after=after.status if after else None,
                output_changed=changed,
                outputs_a=out_a if changed else (),
                outputs_b=out_b if changed else (),
                reasons_b=tuple(after.reasons(limit=3)) if after and after.status != "pass" else (),
            )
        )
    return changes


def _shared_summary(run: Run, shared: set[str], arms: Sequence[str]) -> Mapping[str, ArmSummary]:
    records = [r for r in run.records if r.test_id in shared]
    return summarize(records, arms).arms


def _tiers(run_a: Run, run_b: Run, shared: set[str], arms: Sequence[str]) -> list[TierChange]:
    sa, sb = _shared_summary(run_a, shared, arms), _shared_summary(run_b, shared, arms)
    out = []
    for arm in arms:
        a, b = sa[arm], sb[arm]
        figures: list[tuple[str, Tally | ArmSummary, Tally | ArmSummary]] = [("tests", a, b)]
        figures += [(tier, a.tier(tier), b.tier(tier)) for tier in view.TIERS]
        for name, ta, tb in figures:
            delta = Delta(name, ta.pass_rate, tb.pass_rate)
            out.append(
                TierChange(
                    arm=arm,
                    tier=name,
                    a=ta.pass_rate,
                    b=tb.pass_rate,
                    change=delta.change,
                    a_counts=(ta.passed, ta.passed + ta.failed),
                    b_counts=(tb.passed, tb.passed + tb.failed),
                )
            )
    return out


def _lift(a: Run, b: Run) -> list[Delta] | None:
    la, lb = a.lift, b.lift
    if la is None and lb is None:
        return None
    ci_a = (la.ci95 if la else None) or (None, None)
    ci_b = (lb.ci95 if lb else None) or (None, None)
    return [
        Delta("lift", la.lift if la else None, lb.lift if lb else None),
        Delta("ci95_low", ci_a[0], ci_b[0]),
        Delta("ci95_high", ci_a[1], ci_b[1]),
        Delta("p_two_sided", la.p_two_sided if la else None, lb.p_two_sided if lb else None),
    ]


def _trigger_rates(trigger: Trigger | None) -> dict[str, float | None]:
    if trigger is None:
        return dict.fromkeys(("accuracy", "precision", "recall", "f1"))
    return {
        "accuracy": trigger.accuracy,
        "precision": trigger.precision,
        "recall": trigger.recall,
        "f1": trigger.f1,
    }


def _trigger(a: Run, b: Run) -> list[Delta] | None:
    if a.trigger is None and b.trigger is None:
        return None
    ra, rb = _trigger_rates(a.trigger), _trigger_rates(b.trigger)
    return [Delta(k, ra[k], rb[k]) for k in ra]


def _settings(a: Run, b: Run) -> list[SettingChange]:
    def pick(run: Run) -> dict[str, str | int | None]:
        env = run.environment
        model = env.model if env else None
        judge = run.judge.model if run.judge else None
        return {
            "model": view.model_label(model) if model else None,
            "model sha256": model.sha256 if model else None,
            "decoding": view.decoding_label(run) if env else None,
            "trials": env.trials if env else None,
            "skill digest": run.skill.digest if run.skill else None,
            "judge": view.model_label(judge) if judge else None,
            "skilleval": run.skilleval,
        }

    pa, pb = pick(a), pick(b)
    out = []
    for name, va in pa.items():
        vb = pb[name]
        if va != vb and va is not None and vb is not None:
            out.append(SettingChange(name, va, vb))
    return out


def _primary(a: Run, b: Run, warnings: list[str]) -> str | None:
    arms_a, arms_b = view.arms(a), view.arms(b)
    pa, pb = view.primary_arm(a), view.primary_arm(b)
    if pa != pb:
        warnings.append(f"the primary arms differ (A: {pa}, B: {pb}); judging on B's")
    for arm in (pb, pa):
        if arm in arms_a and arm in arms_b:
            return arm
    return None


def _fell(figure: TierChange | None) -> bool:
    if figure is None or figure.a is None or figure.b is None:
        return False
    return figure.b < figure.a - _EPS


def compare(a: Run, b: Run) -> Comparison:
    """Compare run B against run A.

    Args:
        a: The baseline run.
        b: The new run.

    Returns:
        Per-test changes, per-tier pass rates over the shared tests, lift and trigger changes,
        changed settings, warnings, and whether B regressed.
    """
    warnings: list[str] = []
    path_a, path_b = a.suite.path, b.suite.path
    tests_a = {r.test_id for r in a.records}
    tests_b = {r.test_id for r in b.records}
    shared = tests_a & tests_b
    if path_a and path_b and path_a != path_b:
        warnings.append(
            f"the runs are of different suites ({path_a} and {path_b}); "
            f"comparing the {len(shared)} test(s) they share"
        )
    for label, run in (("A", a), ("B", b)):
        if run.status != "complete":
            warnings.append(f"run {label} is {run.status}: it may lack results")
    primary = _primary(a, b, warnings)
    arms = [arm for arm in view.arms(b) if arm in view.arms(a)]
    if not arms:
        warnings.append("the runs share no arm, so no test can be compared")
    changes = _test_changes(a, b)
    tiers = _tiers(a, b, shared, arms)
    regressions = []
    lost = [t for t in changes if t.change == "newly_failing" and t.arm == primary]
    if lost:
        names = ", ".join(t.test_id for t in lost[:5]) + (" …" if len(lost) > 5 else "")
        regressions.append(f"{len(lost)} test(s) passed in A and do not pass in B: {names}")
    overall = next((t for t in tiers if t.arm == primary and t.tier == "tests"), None)
    if overall is not None and _fell(overall):
        regressions.append(
            f"the {primary} pass rate fell from {view.pct(overall.a, 1)} "
            f"to {view.pct(overall.b, 1)}"
        )
    suite_type = b.suite.type or a.suite.type
    lift_a, lift_b = a.lift, b.lift
    return Comparison(
        a=_ref(a),
        b=_ref(b),
        primary_arm=primary,
        shared_tests=len(shared),
        tests=changes,
        tiers=tiers,
        lift=_lift(a, b),
        lift_verdicts=(
            lift_a.verdict if lift_a else None,
            lift_b.verdict if lift_b else None,
        )
        if lift_a or lift_b
        else None,
        trigger=_trigger(a, b),
        settings=_settings(a, b),
        warnings=warnings,
        regressions=regressions,
        gating=suite_type != "capability",
    )


# --------------------------------------------------------------------------- text


def _snippet(before: str, after: str, width: int = 6) -> list[str]:
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=1)
    lines = [d for d in diff if not d.startswith(("---", "+++", "@@"))]
    cut = [f"      {line[:117] + '…' if len(line) > 118 else line}" for line in lines[:width]]
    if len(lines) > width:
        cut.append(f"      … {len(lines) - width} more changed line(s)")
    return cut


def _delta_row(d: Delta, as_pct: bool = True) -> list[str]:
    fmt = (lambda v: view.pct(v, 1)) if as_pct else view.num
    return [
        d.name,
        fmt(d.before),
        fmt(d.after),
        view.signed_pct(d.change) if as_pct else view.num(d.change),
    ]


def render_text(c: Comparison) -> str:
    """The human report of a comparison."""
    out = [
        f"A  {c.a.run_id}  {c.a.suite or ''}  ({c.a.verdict})",
        f"B  {c.b.run_id}  {c.b.suite or ''}  ({c.b.verdict})",
    ]
    out += [f"warning: {w}" for w in c.warnings]
    for s in c.settings:
        out.append(f"changed: {s.name} {s.a} → {s.b}")
    out.append("")
    table = [
        [t.arm, t.tier, view.pct(t.a, 1), view.pct(t.b, 1), view.signed_pct(t.change)]
        for t in c.tiers
        if t.a is not None or t.b is not None
    ]
    if table:
        out.append(f"pass rates over the {c.shared_tests} shared test(s):")
        out.append(tabulate(table, headers=["arm", "tier", "A", "B", "change"], tablefmt="simple"))
        out.append("")
    if c.lift is not None:
        verdicts = c.lift_verdicts or (None, None)
        out.append(f"lift: verdict {verdicts[0] or '—'} → {verdicts[1] or '—'}")
        rows = [_delta_row(d) for d in c.lift[:3]] + [_delta_row(c.lift[3], as_pct=False)]
        out.append(tabulate(rows, headers=["", "A", "B", "change"], tablefmt="simple"))
        out.append("")
    if c.trigger is not None:
        out.append("trigger:")
        out.append(
            tabulate(
                [_delta_row(d) for d in c.trigger],
                headers=["", "A", "B", "change"],
                tablefmt="simple",
            )
        )
        out.append("")
    for change, title in (("newly_failing", "newly failing"), ("newly_passing", "newly passing")):
        found = c.by_change(change)  # type: ignore[arg-type]
        out.append(f"{title} ({len(found)})" + (":" if found else ""))
        for t in found:
            out.append(f"  {t.test_id} [{t.arm}] {t.before} → {t.after}")
            out += [f"      {r}" for r in t.reasons_b]
    changed = [t for t in c.tests if t.output_changed]
    out.append(f"changed outputs ({len(changed)})" + (":" if changed else ""))
    for t in changed[:20]:
        out.append(f"  {t.test_id} [{t.arm}]")
        out += _snippet("\n".join(t.outputs_a), "\n".join(t.outputs_b))
    if len(changed) > 20:
        out.append(f"  … and {len(changed) - 20} more")
    only_a, only_b = c.by_change("only_in_a"), c.by_change("only_in_b")
    if only_a or only_b:
        out.append(f"only in A: {len(only_a)} · only in B: {len(only_b)}")
    out.append("")
    if c.regressed:
        tail = "" if c.gating else " (capability suite: reported only)"
        out.append("REGRESSION" + tail + ": " + "; ".join(c.regressions))
    else:
        out.append("no regression")
    return "\n".join(out)
