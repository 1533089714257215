"""``skilleval plugins``: list every assertion type and where it comes from."""

from __future__ import annotations

from pathlib import Path

import click
from tabulate import tabulate

from skilleval.assertions.registry import default_registry
from skilleval.cli.options import emit_json, json_option, plugin_options
from skilleval.suite.load import Overrides, load_suite


@click.command()
@click.argument(
    "suite", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@plugin_options
@json_option
def plugins(
    suite: Path | None, plugins_dir: tuple[Path, ...], no_entry_points: bool, as_json: bool
) -> None:
    """List assertion types (built-in, installed, and from SUITE's plugin folders)."""
    overrides = Overrides(plugin_dirs=plugins_dir, entry_points=not no_entry_points)
    if suite is not None:
        _, registry = load_suite(suite, overrides)
    else:
        registry = default_registry(
            [(p, None) for p in plugins_dir], entry_points=not no_entry_points
        )
    listing = registry.listing()
    if as_json:
        emit_json(listing)
        return
    rows = [[t["name"], t["tier"], t["origin"], t["summary"]] for t in listing]
    click.echo(tabulate(rows, headers=["type", "tier", "origin", "summary"], tablefmt="simple"))
    click.echo(f"\n{len(listing)} types; prefix any with not- to negate it", err=True)
