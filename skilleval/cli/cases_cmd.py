"""``skilleval cases``: a run's failures written as candidate tests, never into the suite."""

from __future__ import annotations

from pathlib import Path

import click

from skilleval.cases.build import Made, header, make_cases, to_json
from skilleval.cases.emit import cases_text, suite_text, write_checked
from skilleval.cli.options import emit_json, json_option
from skilleval.errors import UsageError
from skilleval.results.records import ARMS


def _warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


@click.command()
@click.argument("run", metavar="RUN", type=click.Path(path_type=Path))
@click.option(
    "--suite",
    "suite_file",
    type=click.Path(exists=True, path_type=Path),
    help="The suite the run came from, when it is no longer at the path the run recorded.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a complete suite: the source suite's settings and only the new cases.",
)
@click.option("--force", is_flag=True, help="Replace the output file if it exists.")
@click.option(
    "--arm",
    "arms",
    multiple=True,
    type=click.Choice(list(ARMS)),
    help="Make cases from this arm's failing outputs (repeatable; default: every arm but off).",
)
@json_option
def cases(
    run: Path,
    suite_file: Path | None,
    output: Path | None,
    force: bool,
    arms: tuple[str, ...],
    as_json: bool,
) -> None:
    """Write candidate tests from the failures of the run RUN (a run directory, `runs/latest`
    or a results file).

    Each failing test becomes one case: a misrouted prompt carries the `should_trigger` it
    was meant to have, a failing output the assertions that failed, as the suite writes them.
    Judge errors, judge replies that copy the rubric prompt's example and other errors are
    notes, not cases. Each case is
    tagged `from-failure`, named after its record (TEST/ARM/TRIAL) and checked against
    the suite for near-duplicates. The cases are printed as YAML; with -o they are written as
    a suite of their own, checked to load before it is saved. The suite is never edited.
    """
    if output is not None and output.suffix.lower() not in (".yaml", ".yml"):
        raise UsageError(f"-o writes a YAML suite: give a .yaml or .yml file, not {output}")
    if output is not None and output.exists() and not force:
        raise UsageError(f"{output} exists; give --force to replace it, or another --output")
    made = make_cases(run, suite_file, arms, _warn)
    written: int | None = None
    if output is not None:
        if made.foreign:
            raise UsageError(
                f"{made.suite_file} is not a skilleval suite, so -o cannot copy its settings; "
                "write it as one with `skilleval import`, or print the cases without -o"
            )
        if output.resolve() == made.suite_file.resolve():
            raise UsageError(f"{output} is the suite itself; cases never edit it: give another -o")
        if made.cases:
            text = suite_text(made.doc, made.cases, made.flags, output, header(made))
            written = write_checked(text, output)
    if as_json:
        emit_json(to_json(made, output if written is not None else None, written))
    elif output is None and made.cases:
        target = made.suite_file if made.suite_file.is_dir() else made.suite_file.parent
        click.echo(cases_text(made.cases, made.flags, target, header(made)), nl=False)
    for note in made.notes:
        if not as_json:
            click.echo(f"note: {note.origin}: {note.kind}: {note.message}", err=True)
    if not as_json:
        _summary(made, output, written)


def _summary(made: Made, output: Path | None, written: int | None) -> None:
    flagged = sum(1 for c in made.cases if made.flags.get(c.id))
    n, m = len(made.cases), len(made.notes)
    line = f"{n} case{'s' if n != 1 else ''}, {m} note{'s' if m != 1 else ''}"
    if flagged:
        line += f"; {flagged} to check (near-duplicates or the skill's words: see the comments)"
    if not made.cases:
        line += f": nothing in run {made.run.run_id} failed in a way that makes a case"
    click.echo(line, err=True)
    if written is not None and output is not None:
        tests = f"{written} test{'s' if written != 1 else ''}"
        click.echo(f"wrote {output} ({tests}; it loads on its own)", err=True)
