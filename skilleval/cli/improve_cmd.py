"""``skilleval improve``: accept a skill edit only when held-out tests confirm it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from skilleval.cli.options import emit_json, json_option, model_option, plugin_options
from skilleval.errors import UsageError
from skilleval.exitcodes import ExitCode
from skilleval.improve import candidates as candidates_mod
from skilleval.improve import proposer as proposer_mod
from skilleval.improve import terminal
from skilleval.improve.loop import Settings
from skilleval.improve.run import Request, improve
from skilleval.improve.split import parse_fractions
from skilleval.runner.rundir import home_dir
from skilleval.suite.load import Overrides, load_suite
from skilleval.suite.model import Suite, TestCase
from skilleval.suite.model_config import ModelSpec
from skilleval.util.scrub import printable


def _fractions(
    _ctx: click.Context, _param: click.Parameter, value: str
) -> tuple[float, float, float]:
    try:
        return parse_fractions(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _grown(suite: Suite, grow: Path | None, overrides: Overrides) -> tuple[TestCase, ...]:
    """The ``--grow`` suite's tests, loaded by the normal loader; ids must be new."""
    if grow is None:
        return ()
    extra, _ = load_suite(grow, overrides)
    known = {t.id for t in suite.tests}
    clash = [t.id for t in extra.tests if t.id in known]
    if clash:
        raise UsageError(
            f"{extra.display}: test id{'s' if len(clash) > 1 else ''} "
            f"{', '.join(repr(c) for c in clash)} already in {suite.display}: give the grown "
            "tests ids of their own"
        )
    return extra.tests


def _folder_name(suite: Suite) -> str:
    """The default output folder's name: the suite's folder and file (most suites are
    called suite.yaml)."""
    return f"{suite.path.resolve().parent.name}-{suite.path.stem}"


def _proposer(suite_file: Path, suite: Suite, value: str, overrides: Overrides) -> ModelSpec:
    """``--proposer``: ``suite`` for the suite's own model, else any ``--model`` value, read
    as the suite loader reads a judge given on the command line."""
    if value == "suite":
        return suite.model
    spec = load_suite(suite_file, replace(overrides, judge=value))[0].judge
    assert spec is not None  # a judge given on the command line is always read
    return spec


@click.command()
@click.argument(
    "suite_file", metavar="SUITE", type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "--candidates",
    "folder",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A folder of candidate skills, one per subfolder (NAME/SKILL.md).",
)
@click.option(
    "--proposer",
    metavar="MODEL",
    help="A model that proposes edits from the training failures: `suite` for the suite's "
    "own model, or any --model value.",
)
@click.option(
    "--proposer-prompt",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Replace the proposer prompt that ships ($skill, $part and $failures are filled in).",
)
@click.option(
    "--grow",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A suite of extra tests (e.g. from `skilleval cases -o`), added to the train set only.",
)
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Rounds of propose, choose and confirm; α is split evenly over them.",
)
@click.option(
    "--max-candidates",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Candidates tried per round.",
)
@click.option(
    "--max-calls",
    type=click.IntRange(min=1),
    help="The most requests the loop plans to send (cached replies count too, so it stops "
    "at the same place whatever the cache holds).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
    help="The chance of accepting an edit that is no better, over all rounds "
    "[default: the suite's lift.alpha].",
)
@click.option(
    "--seed", type=click.IntRange(min=0), help="The split's seed [default: decoding.seed]."
)
@click.option(
    "--split",
    "fractions",
    default="40/20/40",
    show_default=True,
    callback=_fractions,
    help="TRAIN/SELECTION/CONFIRM shares of the suite's tests.",
)
@click.option(
    "-o",
    "--output-dir",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the report, SKILL.improved.md and the resumable state go "
    "[default: <home>/improve/<suite folder>-<suite name>].",
)
@click.option("--write", is_flag=True, help="Replace the suite's SKILL.md with an accepted edit.")
@model_option("--model", help="The model under test (overrides `model:`).")
@click.option("--no-cache", is_flag=True, help="Call the model even when a cached reply exists.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Parallel requests.")
@plugin_options
@json_option
@click.pass_context
def improve_cmd(
    ctx: click.Context,
    suite_file: Path,
    folder: Path | None,
    proposer: str | None,
    proposer_prompt: Path | None,
    grow: Path | None,
    rounds: int,
    max_candidates: int,
    max_calls: int | None,
    alpha: float | None,
    seed: int | None,
    fractions: tuple[float, float, float],
    out: Path | None,
    write: bool,
    model: str | None,
    no_cache: bool,
    jobs: int | None,
    plugins_dir: tuple[Path, ...],
    no_entry_points: bool,
    as_json: bool,
) -> None:
    """Try candidate edits of SUITE's skill; accept one only on held-out evidence.

    The tests are split once (seeded, stratified) into train, selection and confirmation
    sets. Candidates come from --candidates and --proposer; each is screened on train, the
    best on selection is chosen, and only that one is tested on the confirmation set, by the
    exact paired test a run uses, at α split over the rounds. The report goes to the output
    folder (improve.json, report.html); SKILL.md changes only with --write. Exit 0 when an
    edit was accepted, 1 when none was, 2 when the command cannot run (a suite without a
    skill, one too small to split), 4 for an invalid suite, 130 when interrupted (run it
    again to resume).
    """
    if folder is None and proposer is None:
        raise click.UsageError("give --candidates DIR, --proposer MODEL, or both")
    overrides = Overrides(model=model, plugin_dirs=plugins_dir, entry_points=not no_entry_points)
    suite, _ = load_suite(suite_file, overrides)
    if suite.skill is None:
        raise UsageError(f"{suite.display} has no `skill:`: there is nothing to improve")
    grown = _grown(suite, grow, overrides)
    full = replace(suite, tests=suite.tests + grown)
    spec = None if proposer is None else _proposer(suite_file, suite, proposer, overrides)
    settings = Settings(
        rounds=rounds,
        max_candidates=max_candidates,
        max_calls=max_calls,
        alpha=alpha if alpha is not None else suite.lift.alpha,
        min_lift=suite.lift.min_lift,
        jobs=jobs or suite.jobs or 1,
    )
    home = home_dir()
    request = Request(
        suite=full,
        out=out if out is not None else home / "improve" / _folder_name(suite),
        home=home,
        settings=settings,
        seed=seed if seed is not None else suite.decoding.seed,
        fractions=fractions,
        folder=folder,
        folder_candidates=candidates_mod.from_folder(folder) if folder is not None else (),
        grow=grow,
        grown=grown,
        proposer=spec,
        proposer_label=proposer,
        template=proposer_mod.read_template(proposer_prompt) if proposer else "",
        use_cache=not no_cache and suite.use_cache,
        write=write,
        warn=lambda message: click.echo(f"warning: {printable(message)}", err=True),
        notice=lambda message: None if as_json else click.echo(printable(message), err=True),
    )
    try:
        done = improve(request)
    except KeyboardInterrupt:
        click.echo(
            f"interrupted; what finished is kept in {request.out}: run the same command "
            "again to resume",
            err=True,
        )
        ctx.exit(ExitCode.INTERRUPTED)
    if as_json:
        emit_json(done.document | {"cost_this_run": done.cost})
    click.echo(terminal.render(done.document, done.cost, str(done.out / "report.html")), err=True)
    if done.written is not None:
        click.echo(f"wrote {done.written}", err=True)
    elif done.improved is not None:
        click.echo(
            f"the accepted skill: {done.improved} (use --write to replace SKILL.md)", err=True
        )
    ctx.exit(ExitCode.OK if done.document["decision"]["accepted"] else ExitCode.GATE_FAILED)
