"""``skilleval compare``: what changed between two runs, and whether B regressed."""

from __future__ import annotations

from pathlib import Path

import click

from skilleval.cli.options import emit_json, json_option
from skilleval.report.compare import compare as compare_runs
from skilleval.report.compare import render_text
from skilleval.results.load import load_run


def _warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


@click.command()
@click.argument("run_a", metavar="RUN_A", type=click.Path(path_type=Path))
@click.argument("run_b", metavar="RUN_B", type=click.Path(path_type=Path))
@json_option
@click.pass_context
def compare(ctx: click.Context, run_a: Path, run_b: Path, as_json: bool) -> None:
    """Compare run B against run A (run directories or results files).

    Exits 1 when B regresses on a regression suite: a test that passed in A does not pass in
    B, or B's pass rate is lower.
    """
    result = compare_runs(load_run(run_a, on_warning=_warn), load_run(run_b, on_warning=_warn))
    if as_json:
        emit_json(result.to_json())
        for message in result.warnings:
            _warn(message)
    else:
        click.echo(render_text(result), err=True)
    ctx.exit(result.exit_code)
