"""``skilleval power``: the chance that a suite shows a skill helps, and the tests it needs."""

from __future__ import annotations

from pathlib import Path

import click

from skilleval import stats
from skilleval.cli.options import emit_json, json_option, plugin_options
from skilleval.errors import SkillevalError, UsageError
from skilleval.exitcodes import ExitCode
from skilleval.results.blocks import Lift
from skilleval.results.load import load_run, resolve_run
from skilleval.runner.analysis import lift_tests
from skilleval.runner.rundir import home_dir
from skilleval.stats.power import SEARCH_LIMIT
from skilleval.suite.load import Overrides, load_suite
from skilleval.util.frozen import frozen

ASSUMED_TIE_RATE = 0.5
"""Share of tests assumed to pass or fail alike ON and OFF when no run says otherwise."""


@frozen
class TieRate:
    """The tie rate used, and where it came from."""

    value: float
    source: str
    """``given``, ``observed`` or ``assumed``."""
    run: Path | None = None
    tied: int = 0
    compared: int = 0


def _rate(_ctx: click.Context, _param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not 0 <= value <= 1:
        raise click.BadParameter(f"must be between 0 and 1, got {value}")
    return value


def _lift(results: Path, *, strict: bool) -> Lift | None:
    """The run's ON/OFF comparison, or None when it has none.

    A run named with ``--run`` that cannot be loaded is an error; one found by looking for the
    suite's last run is passed over, since another version of skilleval may have written it.
    """
    try:
        run = load_run(results, on_warning=lambda _message: None)
    except SkillevalError:
        if strict:
            raise
        return None
    return run.lift if run.lift is not None and run.lift.n else None


def _suite_path(results: Path) -> str | None:
    try:
        return load_run(results, on_warning=lambda _message: None).suite.path
    except SkillevalError:
        return None


def _last_run(display: str) -> Path | None:
    """The newest results file under the runs folder written for this suite, if any."""
    runs = home_dir() / "runs"
    if not runs.is_dir():
        return None
    # runs/latest is a link to one of the others.
    found = [
        p
        for p in runs.glob("*/results.json")
        if not p.parent.is_symlink() and _suite_path(p) == display
    ]
    return max(found, key=lambda p: p.stat().st_mtime, default=None)


def _tie_rate(given: float | None, run: Path | None, display: str) -> TieRate:
    if given is not None:
        return TieRate(given, "given")
    results = resolve_run(run) if run is not None else _last_run(display)
    lift = _lift(results, strict=run is not None) if results is not None else None
    if results is None or lift is None:
        if run is not None:
            raise UsageError(f"{results}: the run has no ON/OFF comparison to take a tie rate from")
        return TieRate(ASSUMED_TIE_RATE, "assumed")
    tied = lift.a + lift.d
    return TieRate(tied / lift.n, "observed", results, tied, lift.n)


def _percent(x: float) -> str:
    return f"{x:.0%}" if x >= 0.01 or x == 0 else "<1%"


def render(plan: stats.PowerPlan, tie: TieRate, display: str) -> str:
    """The plan in three or four plain sentences."""
    if tie.source == "observed":
        where = f"observed in {tie.run}: {tie.tied} of {tie.compared} tests tied"
    elif tie.source == "given":
        where = "given"
    else:
        where = "assumed; no earlier run of this suite to observe it in"
    lines = [
        f"{display}: {plan.n_tests} distinct tests compared between ON and OFF "
        f"({plan.sidedness}, α = {plan.alpha:g}"
        + (f", min_lift {plan.min_lift:g}" if plan.min_lift else "")
        + ")",
        f"tie rate {plan.tie_rate:.2f} ({where})",
        f"if the skill truly wins {plan.win_rate:.0%} of the tests it changes, a run says "
        f"`helps` with probability {_percent(plan.power)}",
    ]
    if plan.tests_needed is None:
        lines.append(
            f"no suite of up to {SEARCH_LIMIT} tests reaches {plan.target:.0%} "
            "at this win and tie rate"
        )
    elif plan.tests_to_add == 0:
        lines.append(f"that meets the {plan.target:.0%} target")
    else:
        lines.append(
            f"reaching {plan.target:.0%} takes {plan.tests_needed} tests: add "
            f"{plan.tests_to_add} distinct tests (more trials of the same tests do not help)"
        )
    return "\n".join(lines)


@click.command()
@click.argument(
    "file", metavar="SUITE", type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "--win-rate",
    type=float,
    default=0.8,
    show_default=True,
    callback=_rate,
    help="True share of the tests the skill changes that it changes for the better.",
)
@click.option(
    "--tie-rate",
    type=float,
    default=None,
    callback=_rate,
    help="Share of tests that pass or fail alike ON and OFF "
    f"[default: observed in the suite's last run, else {ASSUMED_TIE_RATE}].",
)
@click.option(
    "--target",
    type=float,
    default=0.8,
    show_default=True,
    callback=_rate,
    help="The chance of a `helps` verdict wanted.",
)
@click.option(
    "--run",
    "run",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="A run directory or results.json to observe the tie rate in (default: the last run).",
)
@plugin_options
@json_option
@click.pass_context
def power(
    ctx: click.Context,
    file: Path,
    win_rate: float,
    tie_rate: float | None,
    target: float,
    run: Path | None,
    plugins_dir: tuple[Path, ...],
    no_entry_points: bool,
    as_json: bool,
) -> None:
    """How likely SUITE is to show that a skill helps, and how many tests it needs.

    Counts the suite's distinct ON/OFF tests and, for a skill that truly wins WIN-RATE of the
    tests it changes, gives the chance of a `helps` verdict under the suite's `lift:`
    settings, and how many tests reach TARGET. Runs no model.
    """
    overrides = Overrides(plugin_dirs=plugins_dir, entry_points=not no_entry_points)
    suite, _ = load_suite(file, overrides)
    if not {"on", "off"} <= set(suite.arms):
        raise UsageError(f"{suite.display}: no ON/OFF comparison to plan for (needs a `skill:`)")
    tie = _tie_rate(tie_rate, run, suite.display)
    plan = stats.plan_power(
        len(lift_tests(suite.tests)),
        win_rate=win_rate,
        tie_rate=tie.value,
        alpha=suite.lift.alpha,
        sidedness=suite.lift.sidedness,
        min_lift=suite.lift.min_lift,
        target=target,
    )
    if as_json:
        emit_json(
            plan.to_json()
            | {
                "suite": suite.display,
                "tie_rate_source": tie.source,
                "run": None if tie.run is None else str(tie.run),
            }
        )
    else:
        click.echo(render(plan, tie, suite.display), err=True)
    ctx.exit(ExitCode.OK)
