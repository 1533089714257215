"""A model named on a command line (``--judge-model``, ``--router-model``): read into a
:class:`~skilleval.suite.model_config.ModelSpec`, and named in a command's report line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from skilleval.errors import Location
from skilleval.plugins import PluginManager
from skilleval.suite.files import Reader
from skilleval.suite.model_config import ModelSpec, parse_model

__all__ = ["judge_spec", "model_name"]


def judge_spec(raw: str, *, key: str = "judge", option: str = "--judge-model") -> ModelSpec:
    """``default`` (the embedded model), a built-in provider's name (``echo``), or a GGUF path.

    ``router-check`` reads its ``--router-model`` the same way, with its own key and option.
    """
    if raw.strip() == "scripted":
        raise click.UsageError(
            f"{option} scripted: the scripted model answers only from the `responses:` a "
            "suite writes under `model:`; give default, a .gguf path or echo"
        )
    builtins = PluginManager()
    builtins.load_builtins()
    spec, diags = parse_model(
        raw,
        key=key,
        where=Location(option),
        doc=None,
        manager=builtins,
        base_dir=Path.cwd(),
        reader=Reader(),
    )
    if spec is None:
        raise click.UsageError("; ".join(d.message for d in diags))
    return spec


def model_name(describe: dict[str, Any]) -> str:
    """The model a ``describe()`` names: its kind, name and short digest, or why it is unavailable."""
    model = describe.get("model") or {}
    if "error" in model:
        return f"unavailable ({model['error']})"
    name = f"{model.get('kind')} {model.get('name')}"
    sha = model.get("sha256")
    return f"{name} (sha256 {sha[:12]})" if sha else name
