"""``skilleval plugins``: list every registered plugin, of every kind, and where it comes from."""

from __future__ import annotations

from pathlib import Path

import click
from tabulate import tabulate

from skilleval.cli.options import emit_json, json_option, plugin_options
from skilleval.plugins import KIND_LABELS, Kind
from skilleval.plugins.registry import default_registry
from skilleval.suite.load import Overrides, load_suite

_HEADINGS: dict[Kind, str] = {
    "assertion": "assertion types",
    "provider": "providers",
    "reporter": "output formats",
    "tool_kind": "tool kinds",
    "lint_check": "lint checks",
}


@click.command()
@click.argument(
    "suite", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice(list(KIND_LABELS)),
    help="Only this kind (repeatable): assertion, provider, reporter or tool_kind.",
)
@plugin_options
@json_option
def plugins(
    suite: Path | None,
    kinds: tuple[Kind, ...],
    plugins_dir: tuple[Path, ...],
    no_entry_points: bool,
    as_json: bool,
) -> None:
    """List assertion types, providers, output formats and tool kinds.

    Built-in ones, installed ones, and those in SUITE's plugin folders.
    """
    overrides = Overrides(plugin_dirs=plugins_dir, entry_points=not no_entry_points)
    if suite is not None:
        _, registry = load_suite(suite, overrides)
    else:
        registry = default_registry(
            [(p, None) for p in plugins_dir], entry_points=not no_entry_points
        )
    chosen = kinds or tuple(KIND_LABELS)
    listing = registry.describe(chosen)
    if as_json:
        emit_json(listing)
        return
    blocks = []
    for kind in chosen:
        rows = [
            [
                p["name"] + (f" ({p['suffix']})" if "suffix" in p else ""),
                p.get("tier", ""),
                p["origin"],
                p["summary"],
            ]
            for p in listing
            if p["kind"] == kind
        ]
        headers = [_HEADINGS[kind], "tier" if kind == "assertion" else "", "origin", "summary"]
        if kind != "assertion":
            rows = [[r[0], r[2], r[3]] for r in rows]
            headers = [headers[0], "origin", "summary"]
        blocks.append(tabulate(rows, headers=headers, tablefmt="simple"))
    click.echo("\n\n".join(blocks))
    counts = ", ".join(f"{sum(p['kind'] == k for p in listing)} {_HEADINGS[k]}" for k in chosen)
    click.echo(f"\n{counts}; prefix any assertion type with not- to negate it", err=True)
