"""``skilleval lint``: structural checks on suites that catch an eval that proves nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from skilleval.cli.options import emit_json, json_option, plugin_options
from skilleval.exitcodes import ExitCode
from skilleval.lint import lint_findings
from skilleval.lint.finding import Finding
from skilleval.suite.load import Overrides


def _counts(findings: list[Finding]) -> dict[str, int]:
    return {
        "error": sum(f.severity == "error" for f in findings),
        "warning": sum(f.severity == "warning" for f in findings),
        "silenced": sum(f.silenced is not None for f in findings),
    }


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@click.command()
@click.argument(
    "files",
    metavar="SUITE...",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, path_type=Path),
)
@click.option("--strict", is_flag=True, help="Fail on warnings too, not only on errors.")
@plugin_options
@json_option
@click.pass_context
def lint(
    ctx: click.Context,
    files: tuple[Path, ...],
    strict: bool,
    plugins_dir: tuple[Path, ...],
    no_entry_points: bool,
    as_json: bool,
) -> None:
    """Find defects that make an eval lie, without a model (exit 4 on errors, else 0).

    Every finding has a check id (docs/lint.md). A suite silences a check with
    `lint: {ignore: [{id: SE202, reason: "..."}]}`; silenced findings still show, with
    their reason, and never fail the command.
    """
    overrides = Overrides(plugin_dirs=plugins_dir, entry_points=not no_entry_points)
    report: list[dict[str, Any]] = []
    failing = 0
    for file in files:
        findings = lint_findings(file, overrides)
        counts = _counts(findings)
        fails = counts["error"] + (counts["warning"] if strict else 0)
        failing += fails
        report.append(
            {
                "path": str(file),
                "ok": fails == 0,
                "counts": counts,
                "findings": [f.to_json() for f in findings],
            }
        )
        if as_json:
            continue
        for finding in findings:
            click.echo(finding.render(), err=True)
        parts = [_plural(counts["error"], "error"), _plural(counts["warning"], "warning")]
        if counts["silenced"]:
            parts.append(f"{counts['silenced']} silenced")
        click.echo(f"{file}: {', '.join(parts)}", err=True)
    if as_json:
        emit_json({"ok": failing == 0, "strict": strict, "files": report})
    ctx.exit(ExitCode.INVALID if failing else ExitCode.OK)
