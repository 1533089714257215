"""``skilleval run``: run a suite, write its run directory, and gate by exit code."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import click

from skilleval.cli.options import (
    emit_json,
    filter_option,
    jobs_option,
    json_option,
    model_option,
    plugin_options,
)
from skilleval.errors import UsageError
from skilleval.exitcodes import ExitCode
from skilleval.plugins.manager import PluginManager
from skilleval.report import terminal
from skilleval.report.outputs import (
    check_matrix_output,
    check_output_path,
    write_matrix,
    write_output,
)
from skilleval.report.progress import progress_reporter
from skilleval.results.model import Run
from skilleval.results.write import iter_run, matrix_json
from skilleval.runner.resume import read_manifest
from skilleval.runner.run import NoTestsSelected, RunOptions, run_suite
from skilleval.runner.rundir import RunDir, home_dir
from skilleval.runner.shard import Shard, parse_shard, recorded_costs
from skilleval.suite.load import Overrides, load_suite
from skilleval.suite.model import Suite
from skilleval.util.collector import promote
from skilleval.util.scrub import printable, without_surrogates


@click.command()
@click.argument(
    "suite_file",
    metavar="SUITE",
    required=False,
    type=click.Path(exists=True, path_type=Path),
)
@model_option(
    "--model",
    help="default, a .gguf path, hf:OWNER/REPO:QUANT, ollama:NAME, lmstudio:NAME or echo "
    "(overrides `model:`).",
)
@model_option(
    "--judge-model",
    "judge_model",
    help="The grader for llm-rubric/llm-assert: any --model value (overrides `judge:`).",
)
@click.option("--trials", type=click.IntRange(min=1), help="Trials per test (distribution mode).")
@click.option("--seed", type=click.IntRange(min=0), help="Base seed (overrides `decoding.seed`).")
@filter_option
@jobs_option(None, " Default 1, or the suite's evaluateOptions.maxConcurrency.")
@click.option("--no-cache", is_flag=True, help="Call the model even when a cached reply exists.")
@click.option(
    "--no-judge-check",
    is_flag=True,
    help="Skip measuring the judge on the judge-fitness set (done once per judge model, "
    "then cached); reports then say the judge was not checked.",
)
@click.option(
    "-o",
    "--output",
    "outputs",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Also write results here; the extension picks the format (repeatable).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print only the final verdict line.")
@click.option(
    "--resume",
    "resume",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Finish this interrupted run directory without redoing finished work.",
)
@click.option("--force", is_flag=True, help="With --resume: resume even if the suite changed.")
@click.option(
    "--shard",
    "shard",
    metavar="K/N",
    callback=lambda _ctx, _param, value: _shard(value),
    help="Run only the K-th of N parts of the tests (1 <= K <= N), split by test and "
    "balanced by cost; put the parts together with `skilleval merge`.",
)
@click.option(
    "--shard-durations",
    "shard_durations",
    type=click.Path(exists=True, path_type=Path),
    help="With --shard: balance the parts by the durations recorded in this earlier run "
    "directory (or its results.jsonl) instead of by prompt length.",
)
@plugin_options
@json_option
@click.pass_context
def run(
    ctx: click.Context,
    suite_file: Path | None,
    model: str | None,
    judge_model: str | None,
    trials: int | None,
    seed: int | None,
    filters: tuple[str, ...],
    jobs: int | None,
    no_cache: bool,
    no_judge_check: bool,
    outputs: tuple[Path, ...],
    quiet: bool,
    resume: Path | None,
    force: bool,
    shard: Shard | None,
    shard_durations: Path | None,
    plugins_dir: tuple[Path, ...],
    no_entry_points: bool,
    as_json: bool,
) -> None:
    """Run SUITE and report; the exit code tells CI whether its gate passed.

    The first time a judge model grades a run, it is first measured on the judge-fitness set
    (suites/judge-fitness.yaml); the result is cached per judge model and shown in every
    report. A judge no better than chance makes the model tier "unqualified".
    """
    if suite_file is None:
        if resume is None:
            raise click.UsageError("give a SUITE to run, or --resume RUN_DIR")
        suite_file = _suite_of(resume)
    overrides = Overrides(
        model=model,
        judge=judge_model,
        trials=trials,
        seed=seed,
        plugin_dirs=plugins_dir,
        entry_points=not no_entry_points,
    )
    suite, registry = load_suite(suite_file, overrides)
    if shard_durations is not None and shard is None:
        raise click.UsageError("--shard-durations balances shards: give --shard K/N with it")
    costs = None
    if shard is not None and shard_durations is not None:
        try:
            costs = recorded_costs(shard_durations)
        except UsageError as exc:
            raise click.UsageError(str(exc)) from None
    promote()  # the suite lives as long as the run: see util/collector.py
    # The suite's own run settings (promptfoo's outputPath, evaluateOptions); the command
    # line wins.
    outputs = outputs or suite.outputs
    jobs = jobs or suite.jobs or 1
    no_cache = no_cache or not suite.use_cache
    for note in suite.notes:
        click.echo(note, err=True)
    if len(suite.models) > 1:
        if shard is not None:
            raise click.UsageError(
                "--shard splits a run of one model: give `--model` to shard one of them"
            )
        if resume is not None:
            raise click.UsageError(
                "--resume finishes one model's run: give that model's run directory with "
                "`--model` set to it, or run the suite again"
            )
        for out in outputs:
            check_matrix_output(out, registry)
        with environment(suite.env):
            _run_matrix(
                ctx,
                suite,
                registry,
                filters,
                jobs,
                no_cache,
                outputs,
                quiet,
                as_json,
                no_judge_check,
            )
        return
    for out in outputs:
        # Checked before the run, so a typo costs nothing; after loading, so that a plugin's
        # output format counts.
        check_output_path(out, registry)
    try:
        with (
            progress_reporter(0, enabled=not quiet and not as_json) as progress,
            environment(suite.env),
        ):
            options = RunOptions(
                home=home_dir(),
                filters=filters,
                jobs=jobs,
                use_cache=not no_cache,
                progress=progress,
                resume=resume,
                force=force,
                warn=lambda message: click.echo(f"warning: {printable(message)}", err=True),
                judge_check=not no_judge_check,
                notice=None if quiet else lambda message: click.echo(printable(message), err=True),
                shard=shard,
                shard_costs=costs,
                overrides={"model": model, "judge": judge_model, "trials": trials, "seed": seed},
            )
            outcome = run_suite(suite, options)
    except NoTestsSelected:
        click.echo(f"no tests match {', '.join(filters)}", err=True)
        ctx.exit(ExitCode.NO_TESTS)
    run = outcome.run
    if shard is not None and not quiet:
        count = run.suite.tests
        click.echo(
            f"shard {shard}: {count} test{'' if count == 1 else 's'}"
            + (" (an empty shard: nothing to run, an empty part written)" if not count else ""),
            err=True,
        )
    # results.json is already written; an output that cannot be written is reported after
    # the others, and the run exits USAGE (2) rather than with the gate's code.
    if deliver(run, outcome.run_dir, outputs, registry, as_json=as_json, quiet=quiet):
        ctx.exit(ExitCode.USAGE)
    if shard is not None and not run.suite.tests and outcome.exit_code != ExitCode.INTERRUPTED:
        if not quiet:  # the report above reads its gate on no tests; say it does not count
            click.echo(
                f"shard {shard}: no tests, so no gate here (exit 0); `skilleval merge` gates "
                "the whole run",
                err=True,
            )
        ctx.exit(ExitCode.OK)  # nothing to judge here: the merged run gates
    ctx.exit(outcome.exit_code)


@contextlib.contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
    """The suite's ``env:`` set for the run, and the previous values put back after it."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


def deliver(
    run: Run,
    run_dir: RunDir,
    outputs: Sequence[Path],
    registry: PluginManager,
    *,
    as_json: bool,
    quiet: bool,
    where: str = "results",
) -> list[str]:
    """Write a finished run's report and ``-o`` outputs, print it (the JSON document on
    stdout with ``--json``, the terminal report or its headline on stderr) and say where it
    is; return the outputs that could not be written, each already said."""
    unwritten: list[str] = []
    for target, jsonl in [(run_dir.root / "report.html", None)] + [
        (out, run_dir.jsonl_path) for out in outputs
    ]:
        try:
            write_output(run, target, jsonl, registry)
        except UsageError as exc:
            unwritten.append(str(exc))
    if as_json:
        # Streamed a record at a time: the document of a large run is never one string.
        for piece in iter_run(run):
            sys.stdout.write(without_surrogates(piece))
        sys.stdout.flush()
    if quiet:
        # The full report's last line, without building the rest of it.
        click.echo(terminal.headline(run).splitlines()[-1], err=True)
    else:
        click.echo(terminal.render_terminal(run, color=_color()), err=True)
        click.echo(f"{where}: {run_dir.root}", err=True)
    for message in unwritten:
        click.echo(f"error: {message}", err=True)
    return unwritten


def _color() -> bool:
    """ANSI styles on stderr: only on a terminal, and never under NO_COLOR."""
    return sys.stderr.isatty() and not os.environ.get("NO_COLOR")


def _run_matrix(
    ctx: click.Context,
    suite: Suite,
    registry: PluginManager,
    filters: tuple[str, ...],
    jobs: int,
    no_cache: bool,
    outputs: tuple[Path, ...],
    quiet: bool,
    as_json: bool,
    no_judge_check: bool = False,
) -> None:
    """Every model of the suite, one after another, then the side-by-side report."""
    # lazy: start-up time (a suite of one model, the usual case, needs none of it)
    from skilleval.report.matrix import render_matrix_terminal
    from skilleval.runner.matrix import run_matrix

    def started(index: int, count: int, label: str) -> None:
        if not quiet and not as_json:
            click.echo(f"model {index + 1}/{count}: {label}", err=True)

    try:
        with progress_reporter(0, enabled=not quiet and not as_json) as progress:
            options = RunOptions(
                home=home_dir(),
                filters=filters,
                jobs=jobs,
                use_cache=not no_cache,
                progress=progress,
                warn=lambda message: click.echo(f"warning: {printable(message)}", err=True),
                judge_check=not no_judge_check,
                notice=None if quiet else lambda message: click.echo(printable(message), err=True),
            )
            outcome = run_matrix(suite, options, started)
    except NoTestsSelected:
        click.echo(f"no tests match {', '.join(filters)}", err=True)
        ctx.exit(ExitCode.NO_TESTS)
    matrix = outcome.matrix
    unwritten: list[str] = []
    for done in outcome.runs:
        if done is not None:
            try:
                write_output(done.run, done.run_dir.root / "report.html", None, registry)
            except UsageError as exc:
                unwritten.append(str(exc))
    for target in [outcome.path / "report.html", *outputs]:
        try:
            write_matrix(matrix, target, registry)
        except UsageError as exc:
            unwritten.append(str(exc))
    if as_json:
        emit_json(matrix_json(matrix))
    text = render_matrix_terminal(matrix)
    click.echo(text.splitlines()[-1] if quiet else text, err=True)
    if not quiet:
        click.echo(f"side by side: {outcome.path}", err=True)
    for message in unwritten:
        click.echo(f"error: {message}", err=True)
    ctx.exit(ExitCode.USAGE if unwritten else outcome.exit_code)


def _shard(value: str | None) -> Shard | None:
    """``--shard``'s value, or a usage error that says what is expected."""
    if value is None:
        return None
    try:
        return parse_shard(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _suite_of(run_dir: Path) -> Path:
    try:
        return Path(read_manifest(run_dir)["suite"])
    except UsageError as exc:
        raise click.UsageError(str(exc)) from None
