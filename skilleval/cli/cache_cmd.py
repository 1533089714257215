"""``skilleval cache``: inspect or empty the response cache, and the prompt prefixes kept
beside it (``<home>/kv``, see ``engine/prefix_store.py``)."""

from __future__ import annotations

from pathlib import Path

import click

from skilleval.cli.options import emit_json, json_option
from skilleval.engine.cache import ResponseCache
from skilleval.engine.prefix_store import kept_prefixes, remove_kept_prefixes
from skilleval.runner.rundir import home_dir


def _path(path: Path | None) -> Path:
    return path or home_dir() / "cache.db"


@click.group()
def cache() -> None:
    """Inspect or empty the response cache (.skilleval/cache.db) and the evaluated prompt
    prefixes kept beside it (.skilleval/kv)."""


@cache.command()
@click.option("--path", type=click.Path(dir_okay=False, path_type=Path), help="Another cache file.")
@json_option
def info(path: Path | None, as_json: bool) -> None:
    """Show where the cache is, how many replies it holds and its size."""
    target = _path(path)
    if not target.exists():
        data = {"path": str(target), "entries": 0, "size_bytes": 0, "exists": False}
    else:
        with ResponseCache(target) as store:
            data = {**store.info().to_json(), "exists": True}
    prefixes, prefix_bytes = kept_prefixes(target.parent)
    data["prefixes"] = {
        "path": str(target.parent / "kv"),
        "entries": prefixes,
        "size_bytes": prefix_bytes,
    }
    if as_json:
        emit_json(data)
        return
    if not data["exists"]:
        click.echo(f"no cache yet at {target}", err=True)
    else:
        click.echo(
            f"{data['path']}: {data['entries']} replies, {data['size_bytes']:,} bytes", err=True
        )
    if prefixes:
        click.echo(
            f"{target.parent / 'kv'}: {prefixes} evaluated prompt prefixes, {prefix_bytes:,} bytes",
            err=True,
        )


@cache.command()
@click.option("--path", type=click.Path(dir_okay=False, path_type=Path), help="Another cache file.")
@json_option
def clear(path: Path | None, as_json: bool) -> None:
    """Delete every cached reply and every kept prompt prefix."""
    target = _path(path)
    removed = 0
    if target.exists():
        with ResponseCache(target) as store:
            removed = store.clear()
    prefixes = remove_kept_prefixes(target.parent)
    if as_json:
        emit_json({"path": str(target), "removed": removed, "removed_prefixes": prefixes})
    else:
        click.echo(f"removed {removed} cached replies from {target}", err=True)
        if prefixes:
            click.echo(f"removed {prefixes} kept prompt prefixes", err=True)
