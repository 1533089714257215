"""``skilleval merge``: put the shards of one run together and gate the whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from skilleval.cli.options import json_option, plugin_options
from skilleval.cli.run_cmd import deliver
from skilleval.exitcodes import ExitCode
from skilleval.report.outputs import check_output_path
from skilleval.runner.merge import merge_runs
from skilleval.runner.rundir import home_dir
from skilleval.suite.load import Overrides, load_suite
from skilleval.suite.model import Suite
from skilleval.util.collector import paused


@click.command()
@click.argument(
    "parts",
    metavar="RUN_DIR...",
    nargs=-1,
    required=True,
    type=click.Path(path_type=Path),
)
@click.option(
    "-o",
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The merged run directory to write (new or empty).",
)
@click.option(
    "--suite",
    "suite_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The suite the shards ran, when it is not at the path they recorded (another "
    "checkout); its digest must match theirs.",
)
@click.option(
    "--output",
    "outputs",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Also write the merged results here; the extension picks the format (repeatable).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print only the final verdict line.")
@plugin_options
@json_option
@click.pass_context
def merge(
    ctx: click.Context,
    parts: tuple[Path, ...],
    out: Path,
    suite_file: Path | None,
    outputs: tuple[Path, ...],
    quiet: bool,
    plugins_dir: tuple[Path, ...],
    no_entry_points: bool,
    as_json: bool,
) -> None:
    """Merge the run directories of `skilleval run --shard K/N` (all N of them) into one run
    at OUT, recompute every statistic over the union, and gate it: the exit code is the
    gate's, as for `run`.

    The parts must come from the same suite (its digest), model, decoding, seed and
    skilleval version; otherwise nothing is written.
    """
    registries: list[Any] = []

    def load(path: Path, recorded: dict[str, Any]) -> Suite:
        overrides = Overrides(
            model=recorded.get("model"),
            judge=recorded.get("judge"),
            trials=recorded.get("trials"),
            seed=recorded.get("seed"),
            plugin_dirs=plugins_dir,
            entry_points=not no_entry_points,
        )
        suite, registry = load_suite(path, overrides)
        registries.append(registry)
        return suite

    # A merge builds one large run, keeps it to the end and then exits: the cycle collector
    # would walk its records again and again and free nothing (util/collector.py), about a
    # fifth of the time of a large merge.
    with paused():
        outcome = merge_runs(parts, out, load, suite_file, home_dir())
        registry = registries[0]
        for target in outputs:
            check_output_path(target, registry)
        unwritten = deliver(
            outcome.run,
            outcome.run_dir,
            outputs,
            registry,
            as_json=as_json,
            quiet=quiet,
            where=f"merged {len(parts)} shards",
        )
    ctx.exit(ExitCode.USAGE if unwritten else outcome.exit_code)
