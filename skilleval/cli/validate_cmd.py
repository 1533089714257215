"""``skilleval validate``: check suites without running anything."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import click

from skilleval.cli.options import emit_json, json_option, plugin_options
from skilleval.errors import DiagnosticsError
from skilleval.exitcodes import ExitCode
from skilleval.sandbox.pyfile import no_user_imports
from skilleval.suite.load import Overrides, load_suite


@click.command()
@click.argument(
    "files",
    metavar="SUITE...",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, path_type=Path),
)
@click.option(
    "--no-plugins",
    is_flag=True,
    help="Run no plugin code: read plugin folders' assertion types from their source, "
    "import no python tool, leave installed plugins out. For suites you did not write.",
)
@plugin_options
@json_option
@click.pass_context
def validate(
    ctx: click.Context,
    files: tuple[Path, ...],
    no_plugins: bool,
    plugins_dir: tuple[Path, ...],
    no_entry_points: bool,
    as_json: bool,
) -> None:
    """Check suites for every mistake at once, without calling a model (exit 0 or 4).

    Loading a suite imports its plugins and python tools, which runs their code; give
    --no-plugins to check a suite someone sent you without running any of it.
    """
    report: list[dict[str, Any]] = []
    for file in files:
        overrides = Overrides(
            plugin_dirs=plugins_dir,
            entry_points=not no_entry_points,
            plugin_code=not no_plugins,
        )
        try:
            with contextlib.nullcontext() if not no_plugins else no_user_imports():
                suite, _ = load_suite(file, overrides)
        except DiagnosticsError as exc:
            report.append(
                {
                    "path": str(file),
                    "ok": False,
                    "diagnostics": [d.to_json() for d in exc.diagnostics],
                }
            )
            if not as_json:
                click.echo(str(exc), err=True)
            continue
        report.append(
            {
                "path": str(file),
                "ok": True,
                "tests": len(suite.tests),
                "diagnostics": [],
                **({"warnings": list(suite.notes)} if suite.notes else {}),
            }
        )
        if not as_json:
            for note in suite.notes:
                click.echo(note, err=True)
            models = f", {len(suite.models)} models" if suite.models else ""
            click.echo(f"{suite.display}: ok ({len(suite.tests)} tests{models})", err=True)
        if suite.trials > 1 and suite.trials % 2 == 0:
            click.echo(
                f"{suite.display}: warning: trials: {suite.trials} is even, so a test's majority "
                "vote can tie; an odd number gives every test a clear vote (lint SE106)",
                err=True,
            )
    ok = all(r["ok"] for r in report)
    if as_json:
        emit_json({"ok": ok, "files": report})
    elif not ok:
        count = sum(len(r["diagnostics"]) for r in report)
        click.echo(f"{count} error{'s' if count != 1 else ''}", err=True)
    ctx.exit(ExitCode.OK if ok else ExitCode.INVALID)
