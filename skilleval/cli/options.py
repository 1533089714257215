"""Options shared by several commands."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def plugin_options(fn: F) -> F:
    fn = click.option(
        "--plugins-dir",
        "plugins_dir",
        multiple=True,
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        help="Another folder of plugins (repeatable).",
    )(fn)
    fn = click.option(
        "--no-entry-points", is_flag=True, help="Ignore plugins from installed packages."
    )(fn)
    return fn


def json_option(fn: F) -> F:
    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        help="Print one JSON document on stdout; everything else goes to stderr.",
    )(fn)


def emit_json(data: Any) -> None:
    """Write exactly one JSON document to stdout."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def _refuse_scripted(_ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and value.strip() == "scripted":
        raise click.BadParameter(
            "the scripted model answers from the `responses:` written in a suite's "
            "`model: {provider: scripted, responses: [...]}`, which a command line cannot give; "
            "write it in the suite",
            param=param,
        )
    return value


def model_option(*names: str, help: str) -> Callable[[F], F]:
    """A ``--model``-like option: default, a .gguf path or a provider's name, never scripted."""
    return click.option(*names, callback=_refuse_scripted, help=help)
