"""Options shared by several commands."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from skilleval.util.scrub import without_surrogates

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


def filter_option(fn: F) -> F:
    """``-k/--filter``: run only the tests whose id matches (``run``, ``watch``)."""
    return click.option(
        "-k",
        "--filter",
        "filters",
        multiple=True,
        help="Run only tests whose id matches (exact, glob or substring; repeatable).",
    )(fn)


def jobs_option(default: int | None, default_help: str = "") -> Callable[[F], F]:
    """``-j/--jobs``, the parallel requests (``run``, ``watch``); ``default`` None leaves the
    number to the command, which ``default_help`` then explains."""
    return click.option(
        "-j",
        "--jobs",
        type=click.IntRange(min=1),
        default=default,
        show_default=default is not None,
        help="Parallel requests for providers that allow it (the OpenAI provider); above 1, the "
        "requests an in-process model decodes together, unless model.parallel is set."
        + default_help,
    )


def emit_json(data: Any) -> None:
    """Write exactly one JSON document to stdout."""
    # A lone surrogate (from a suite's own "\\udc00") cannot be written as UTF-8: U+FFFD.
    sys.stdout.write(without_surrogates(json.dumps(data, ensure_ascii=False, indent=2)) + "\n")
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


def fitness_options(role: str, what: str) -> Callable[[F], F]:
    """The options judge-check and router-check share: the model under test, its seed,
    a limit on the cases, and skipping the cache. ``role`` is ``judge`` or ``router``."""

    def add(fn: F) -> F:
        fn = click.option(
            "--no-cache", is_flag=True, help="Ask the model again instead of the cache."
        )(fn)
        fn = click.option(
            "--limit",
            type=click.IntRange(min=1),
            default=None,
            help=f"{what} only the first N (a quick look, not a verdict).",
        )(fn)
        fn = click.option(
            "--seed", type=int, default=0, show_default=True, help=f"The {role}'s fixed seed."
        )(fn)
        fn = click.option(
            f"--{role}-model",
            default="default",
            show_default=True,
            metavar="default|PATH.gguf|echo",
            help=f"The {role} to test: the embedded model, a GGUF file, or echo (a constant {role}).",
        )(fn)
        return fn

    return add
