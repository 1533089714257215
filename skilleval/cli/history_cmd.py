"""``skilleval history``: the past runs of a suite, and its tests that saturated."""

from __future__ import annotations

from pathlib import Path

import click

from skilleval.cli.options import emit_json, json_option
from skilleval.errors import UsageError
from skilleval.exitcodes import ExitCode
from skilleval.report.history import collect, render_text
from skilleval.runner.rundir import home_dir
from skilleval.userfile import display_path


@click.command()
@click.argument("file", metavar="SUITE", type=click.Path(path_type=Path))
@json_option
@click.pass_context
def history(ctx: click.Context, file: Path, as_json: bool) -> None:
    """List the past runs of SUITE, oldest first, from the runs folder.

    Shows each run's date, verdict, pass rate per arm, lift and its verdict, and the trigger
    recall; then the capability tests whose pass^k was 1 in each of their last 3 runs, ready
    to move into a regression suite. Runs no model.
    """
    runs_dir = home_dir() / "runs"
    suite = display_path(file)
    found = collect(runs_dir, suite)
    if not found.runs and not file.is_file():
        raise UsageError(f"{file}: no such suite, and no runs of it recorded")
    if as_json:
        emit_json(found.to_json() | {"runs_dir": str(runs_dir)})
    else:
        click.echo(render_text(found), err=True)
    for skipped in found.skipped:
        click.echo(f"note: {skipped.text}", err=True)
    ctx.exit(ExitCode.OK)
