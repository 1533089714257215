"""``skilleval import promptfoo``: write a promptfoo config as a skilleval suite."""

from __future__ import annotations

from pathlib import Path

import click

from skilleval.errors import Diagnostic, DiagnosticsError, SuiteError, UsageError
from skilleval.exitcodes import ExitCode
from skilleval.lint.promptfoo import value_differences
from skilleval.promptfoo.differences import pattern_differences
from skilleval.promptfoo.importer import import_config
from skilleval.suite.checked_write import save_if_it_loads
from skilleval.suite.yamlio import load_yaml, parse_yaml, yaml_data


@click.group("import")
def import_group() -> None:
    """Write another tool's config or eval file as a skilleval suite."""


@import_group.command("promptfoo")
@click.argument(
    "config", metavar="CONFIG", type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the suite (default: suite.yaml beside CONFIG).",
)
@click.option("--force", is_flag=True, help="Replace the output file if it exists.")
@click.pass_context
def promptfoo(ctx: click.Context, config: Path, output: Path | None, force: bool) -> None:
    """Write the promptfoo CONFIG as a skilleval suite, once it validates.

    The suite keeps the config's comments, reads its providers as `models:` and its grader
    as `judge:`, and says in comments what changed meaning. What cannot be carried over is
    listed here and in the suite's header.
    """
    target = output or config.with_name("suite.yaml")
    if target.resolve() == config.resolve():
        raise UsageError(f"{target} is the config itself; give another --output")
    if target.exists() and not force:
        raise UsageError(f"{target} exists; give --force to replace it, or another --output")
    # The config is read by skilleval's own reader first, so that a broken file gets
    # positioned messages (and a file that is not text, a plain one).
    doc = load_yaml(config, strict=False)
    if doc.problems:
        raise SuiteError(doc.problems)
    try:
        imported = import_config(config, yaml_data, target.resolve().parent)
    except (ValueError, OSError) as exc:
        raise UsageError(f"cannot import {config}: {exc}") from None
    try:
        # Parsed before it is written: a suite that is not even YAML is never left behind.
        parse_yaml(imported.text, str(target))
    except DiagnosticsError as exc:
        raise SuiteError(
            [
                Diagnostic(
                    d.where, f"the suite written from {config} would be invalid: {d.message}"
                )
                for d in exc.diagnostics
            ]
        ) from None
    for line in imported.left_out:
        click.echo(f"not carried over: {line}", err=True)
    for difference in pattern_differences(doc):
        click.echo(str(Diagnostic(difference.where, difference.message, "warning")), err=True)
    for where, message in value_differences(doc):
        click.echo(str(Diagnostic(where, message, "warning")), err=True)
    _save(ctx, imported.text, target)


def _save(ctx: click.Context, text: str, target: Path) -> None:
    """Write the suite once it loads where it goes; otherwise say why, and write nothing."""
    try:
        saved = save_if_it_loads(text, target)
    except SuiteError as exc:
        click.echo(str(exc), err=True)
        click.echo(f"{target} was not written: the suite would not load", err=True)
        ctx.exit(ExitCode.INVALID)
    click.echo(f"wrote {target}", err=True)
    for note in saved.notes:
        click.echo(note, err=True)
    click.echo(f"{saved.display}: ok ({len(saved.suite.tests)} tests)", err=True)


_FORMAT_HELP = {
    "skill-creator": "skill-creator's evals/evals.json",
    "triggers": "a trigger set ([{query, should_trigger}] and its wrappings)",
    "vally": "a dotnet/skills Vally spec (eval.yaml)",
    "pai": "a PAI suite (cases:) or task file (graders:)",
    "skill": "a skill folder: its SKILL.md and every eval file in it",
}


def _foreign_command(name: str) -> click.Command:
    @click.command(
        name, help=f"Write {_FORMAT_HELP[name]} as a skilleval suite, once it validates."
    )
    @click.argument("path", metavar="PATH", type=click.Path(exists=True, path_type=Path))
    @click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Where to write the suite (default: suite.yaml beside PATH).",
    )
    @click.option("--force", is_flag=True, help="Replace the output file if it exists.")
    @click.pass_context
    def command(ctx: click.Context, path: Path, output: Path | None, force: bool) -> None:
        _import_foreign(ctx, name, path, output, force)

    return command


def _import_foreign(
    ctx: click.Context, name: str, path: Path, output: Path | None, force: bool
) -> None:
    from skilleval.suite import formats  # lazy: start-up time
    from skilleval.suite.formats.emit import write_suite  # lazy: start-up time

    if name == "skill" and not path.is_dir():
        raise UsageError(f"{path} is not a folder; `import skill` takes a skill folder")
    if name != "skill" and path.is_dir():
        raise UsageError(f"{path} is a folder; give the {name} file, or use `import skill`")
    default = (path if path.is_dir() else path.parent) / "suite.yaml"
    target = output or default
    if target.exists() and target.resolve() == path.resolve():
        raise UsageError(f"{target} is the file itself; give another --output")
    if target.exists() and not force:
        raise UsageError(f"{target} exists; give --force to replace it, or another --output")
    translated: formats.Translated | None
    if path.is_dir():
        translated = formats.read_folder(path)
    else:
        doc = load_yaml(path, strict=False)
        if doc.problems:
            raise SuiteError(doc.problems)
        translated = formats.read_file(path, doc, only=name)
        if translated is None:
            found = formats.detect(doc.data)
            seen = f"it reads as {found[0]} ({found[1]})" if found else "it matches no format"
            raise UsageError(f"{path} is not {_FORMAT_HELP[name]}: {seen}")
    command = f"skilleval import {name} {path.name}"
    imported = write_suite(translated, target, command)
    for line in imported.detected:
        click.echo(f"read {line}", err=True)
    for warning in imported.warnings:
        click.echo(warning, err=True)
    _save(ctx, imported.text, target)


for _name in _FORMAT_HELP:
    import_group.add_command(_foreign_command(_name))
