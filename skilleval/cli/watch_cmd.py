"""``skilleval watch``: run suites, then re-run the affected ones on every save."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from skilleval.cli.options import filter_option, jobs_option, model_option, plugin_options
from skilleval.exitcodes import ExitCode
from skilleval.suite.load import Overrides
from skilleval.watch import Outcome, Watcher, WatchOptions


@click.command()
@click.argument(
    "suite_files",
    metavar="SUITE...",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, path_type=Path),
)
@model_option(
    "--model",
    help="default, a .gguf path, hf:OWNER/REPO:QUANT, ollama:NAME, lmstudio:NAME or echo "
    "(overrides `model:`).",
)
@filter_option
@jobs_option(1)
@click.option(
    "--no-initial-run", is_flag=True, help="Only validate at start; run on the first change."
)
@click.option(
    "--debounce",
    type=click.FloatRange(min=0.0),
    default=0.3,
    show_default=True,
    help="Seconds of quiet after a change before re-running (a save fires several events).",
)
@click.option(
    "--once",
    is_flag=True,
    help="Check and run each SUITE once, as at start, then exit with the code `run` would give.",
)
@click.option(
    "--no-judge-check",
    is_flag=True,
    help="Skip measuring the judge on the judge-fitness set (done once per judge model).",
)
@plugin_options
@click.pass_context
def watch(
    ctx: click.Context,
    suite_files: tuple[Path, ...],
    model: str | None,
    filters: tuple[str, ...],
    jobs: int,
    no_initial_run: bool,
    debounce: float,
    once: bool,
    no_judge_check: bool,
    plugins_dir: tuple[Path, ...],
    no_entry_points: bool,
) -> None:
    """Run each SUITE, then re-run it whenever a file it reads changes; Ctrl-C stops."""
    # Plugins are re-imported after every edit: a .pyc written now could shadow the next edit
    # when both land in the same second with the same size, and it litters plugin folders.
    sys.dont_write_bytecode = True
    overrides = Overrides(model=model, plugin_dirs=plugins_dir, entry_points=not no_entry_points)
    options = WatchOptions(
        overrides=overrides,
        filters=filters,
        jobs=jobs,
        debounce_s=debounce,
        judge_check=not no_judge_check,
    )
    watcher = Watcher(list(suite_files), options)
    try:
        outcomes = watcher.start(initial_run=not no_initial_run)
        if once:
            ctx.exit(once_code(outcomes))
        watcher.serve()
    except KeyboardInterrupt:
        click.echo("\nstopped", err=True)
    finally:
        watcher.close()
    ctx.exit(ExitCode.OK)


def once_code(outcomes: list[Outcome]) -> ExitCode:
    """The exit code of ``watch --once``: the worst of the suites' codes, as `run` gives them."""
    codes = [ExitCode.OK]
    for outcome in outcomes:
        if outcome.kind == "invalid":
            codes.append(ExitCode.INVALID)
        elif outcome.kind == "no_tests":
            codes.append(ExitCode.NO_TESTS)
        elif outcome.kind == "failed":
            codes.append(ExitCode.RUNTIME)
        elif outcome.run is not None:
            codes.append(ExitCode(outcome.run.exit_code))
    return max(codes)
