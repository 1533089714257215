"""``skilleval report``: render a finished (or broken-off) run again, in any output format."""

from __future__ import annotations

from pathlib import Path

import click

from skilleval.assertions.registry import default_registry
from skilleval.cli.options import emit_json, json_option, plugin_options
from skilleval.report.load import JSONL_NAME, load_run, resolve_run
from skilleval.report.outputs import check_output_path, write_output


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
def report(
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
    doc = load_run(source, on_warning=_warn)
    targets = list(outputs) or [source.parent / "report.html"]
    jsonl = source.parent / JSONL_NAME
    for target in targets:
        write_output(doc, target, jsonl if jsonl.is_file() else None, formats)
        click.echo(f"wrote {target}", err=True)
    if as_json:
        emit_json(
            {
                "run_id": doc.get("run_id"),
                "status": doc.get("status"),
                "source": str(source),
                "written": [str(t) for t in targets],
            }
        )
