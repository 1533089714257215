"""``skilleval report``: render a finished (or broken-off) run again, in any output format."""

from __future__ import annotations

from pathlib import Path

import click

from skilleval.cli.options import emit_json, json_option, plugin_options
from skilleval.errors import UsageError
from skilleval.exitcodes import ExitCode
from skilleval.plugins.registry import default_registry
from skilleval.report.outputs import check_output_path, write_output
from skilleval.results.load import JSONL_NAME, load_run, resolve_run


def _warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


@click.command()
@click.argument("run", metavar="RUN", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    "outputs",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Write here; the extension picks the format (repeatable). Default: RUN/report.html.",
)
@plugin_options
@json_option
@click.pass_context
def report(
    ctx: click.Context,
    run: Path,
    outputs: tuple[Path, ...],
    plugins_dir: tuple[Path, ...],
    no_entry_points: bool,
    as_json: bool,
) -> None:
    """Render RUN (a run directory, runs/latest, or a results file) as a report."""
    formats = default_registry([(p, None) for p in plugins_dir], entry_points=not no_entry_points)
    for out in outputs:
        check_output_path(out, formats)
    source = resolve_run(run)
    loaded = load_run(source, on_warning=_warn)
    targets = list(outputs) or [source.parent / "report.html"]
    jsonl = source.parent / JSONL_NAME
    written: list[Path] = []
    unwritten: list[str] = []
    for target in targets:
        try:
            write_output(loaded, target, jsonl if jsonl.is_file() else None, formats)
        except UsageError as exc:
            unwritten.append(str(exc))
            continue
        written.append(target)
        click.echo(f"wrote {target}", err=True)
    if as_json:
        emit_json(
            {
                "run_id": loaded.run_id,
                "status": loaded.status,
                "source": str(source),
                "written": [str(t) for t in written],
            }
        )
    for message in unwritten:
        click.echo(f"error: {message}", err=True)
    if unwritten:
        ctx.exit(ExitCode.USAGE)
