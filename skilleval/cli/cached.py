"""The response-cached provider the model-checking commands build (judge-check,
router-check, overfit), kept apart from the shared options so that other commands do not
import the engine and the cache."""

from __future__ import annotations

import click

from skilleval.engine.cache import CachingProvider, open_cache
from skilleval.engine.factory import create_provider
from skilleval.runner.rundir import home_dir
from skilleval.suite.model_config import ModelSpec


def warn(message: str) -> None:
    """A warning for people, on stderr."""
    click.echo(f"warning: {message}", err=True)


def cached_provider(spec: ModelSpec, *, use_cache: bool) -> CachingProvider:
    """The provider for ``spec`` behind the response cache, opened the way ``run`` opens it:
    a read-only cache is a warning, a damaged one a clear error."""
    home = home_dir()
    cache = open_cache(home / "cache.db", warn) if use_cache else None
    return CachingProvider(create_provider(spec, home=home), cache, warn)
