"""The gate: every condition with what was required and measured, and the exit code it gives."""

from __future__ import annotations

from skilleval.exitcodes import ExitCode
from skilleval.results.model import ArmSummary, Gate, GateCheck, JudgeFitness, Lift, Trigger
from skilleval.suite.model import Suite


def gate_checks(
    suite: Suite,
    primary: ArmSummary | None,
    lift_block: Lift | None,
    trigger_block: Trigger | None,
    errors: int,
    judge_fitness: JudgeFitness | None = None,
    side_by_side: JudgeFitness | None = None,
) -> list[GateCheck]:
    """Every gate condition with what was required and what was measured."""
    checks: list[GateCheck] = []
    rate = primary.pass_rate if primary is not None else None
    if suite.type == "regression":
        checks.append(
            GateCheck(
                "pass_rate",
                f">= {suite.threshold}",
                rate,
                rate is not None and rate >= suite.threshold,
            )
        )
    gate = suite.gate
    if gate.pass_rate is not None:
        checks.append(GateCheck("pass_rate", gate.pass_rate.text, rate, gate.pass_rate.holds(rate)))
    if gate.lift is not None:
        verdict = lift_block.verdict if lift_block else None
        ok = verdict == "helps" if gate.lift == "helps" else verdict not in (None, "hurts")
        checks.append(GateCheck("lift", gate.lift, verdict, ok))
    if gate.trigger_accuracy is not None:
        acc = trigger_block.accuracy if trigger_block else None
        checks.append(
            GateCheck(
                "trigger_accuracy",
                gate.trigger_accuracy.text,
                acc,
                gate.trigger_accuracy.holds(acc),
            )
        )
    if gate.judge_fitness is not None:
        measured = judge_fitness.fitness if judge_fitness is not None else None
        checks.append(
            GateCheck(
                "judge_fitness",
                gate.judge_fitness.text,
                measured,
                gate.judge_fitness.holds(measured),
            )
        )
    if gate.side_by_side_fitness is not None:
        measured = side_by_side.fitness if side_by_side is not None else None
        checks.append(
            GateCheck(
                "side_by_side_fitness",
                gate.side_by_side_fitness.text,
                measured,
                gate.side_by_side_fitness.holds(measured),
            )
        )
    if gate.max_errors is not None:
        checks.append(
            GateCheck("max_errors", f"<= {gate.max_errors}", errors, errors <= gate.max_errors)
        )
    return checks


def decide(
    suite: Suite,
    primary: ArmSummary | None,
    errors: int,
    interrupted: bool,
    lift_block: Lift | None,
    trigger_block: Trigger | None,
    *,
    judge_fitness: JudgeFitness | None = None,
    side_by_side: JudgeFitness | None = None,
) -> Gate:
    """Decide the exit code: an interrupted run, then errors, then the gate's checks."""
    checks = gate_checks(
        suite, primary, lift_block, trigger_block, errors, judge_fitness, side_by_side
    )
    fitnesses = {"judge_fitness": judge_fitness, "side_by_side_fitness": side_by_side}
    reasons = [_reason(c, fitnesses) for c in checks if not c.passed]
    max_errors = suite.gate.max_errors
    tolerated = max_errors is not None and errors <= max_errors
    if interrupted:
        code = ExitCode.INTERRUPTED
        reasons.insert(0, "the run was interrupted")
    elif errors and not tolerated:
        code = ExitCode.RUNTIME
        reasons.insert(0, f"{errors} result(s) are errors, so the scores are incomplete")
    elif any(not c.passed for c in checks):
        code = ExitCode.GATE_FAILED
    else:
        code = ExitCode.OK
    return Gate(
        type=suite.type,
        passed=code == ExitCode.OK,
        exit_code=int(code),
        checks=tuple(checks),
        reasons=tuple(reasons),
    )


def _reason(check: GateCheck, fitnesses: dict[str, JudgeFitness | None]) -> str:
    if check.name in fitnesses:
        fitness = fitnesses[check.name]
        if fitness is None or fitness.fitness is None:
            why = fitness.reason if fitness is not None else "no judge ran"
            return f"{check.name} was not measured ({why}), required {check.required}"
        ci = fitness.ci95
        interval = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci is not None else ""
        return f"{check.name} is {fitness.fitness:.2f}{interval}, required {check.required}"
    return f"{check.name} is {_shown(check.actual)}, required {check.required}"


def _shown(value: int | float | str | None) -> str:
    if isinstance(value, float):
        return f"{value:.1%}" if 0 <= value <= 1 else f"{value:g}"
    return "n/a" if value is None else str(value)
