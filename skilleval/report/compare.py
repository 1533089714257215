"""Compare two runs from their results files alone: what changed from A to B, and is it worse?

Tests are paired by test id and arm. Pass rates are recomputed over the tests both runs share,
so a run of a larger suite is compared like for like; lift and trigger figures are each run's
own. B *regresses* when, on the primary arm, a test that passed in A does not pass in B, or
B's pass rate is lower than A's. On a regression suite that is exit code 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from skilleval.report import view
from skilleval.report.compare_model import (
    Change,
    Comparison,
    Delta,
    RunRef,
    SettingChange,
    TestChange,
    TierChange,
)
from skilleval.report.compare_text import render_text
from skilleval.report.view import Row
from skilleval.results.model import ArmSummary, Run, Tally, Trigger
from skilleval.results.summary import summarize

__all__ = [
    "Change",
    "Comparison",
    "Delta",
    "RunRef",
    "SettingChange",
    "TestChange",
    "TierChange",
    "compare",
    "render_text",
]

_EPS = 1e-9


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
        return dict.fromkeys(("accuracy", "precision", "recall", "f1", "auroc"))
    return {
        "accuracy": trigger.accuracy,
        "precision": trigger.precision,
        "recall": trigger.recall,
        "f1": trigger.f1,
        # Threshold-free: a router can rank better without choosing differently.
        "auroc": trigger.auroc.value if trigger.auroc is not None else None,
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
