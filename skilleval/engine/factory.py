"""Build the provider a suite asks for, through the provider's registration."""

from __future__ import annotations

from pathlib import Path

from skilleval.engine.base import ModelSpec, Provider, ProviderContext
from skilleval.errors import Diagnostic, Location, PluginError


def create_provider(spec: ModelSpec, *, home: Path, jobs: int = 1) -> Provider:
    """A provider for ``spec``; nothing is loaded until its first call.

    Raises:
        PluginError: The registered factory returned something that is not a provider.
    """
    made = spec.provider.factory(spec.config, ProviderContext(home=home, jobs=max(1, jobs)))
    if not isinstance(made, Provider):
        code = getattr(spec.provider.factory, "__code__", None)
        where = Location(code.co_filename, code.co_firstlineno, 1) if code else Location("?")
        raise PluginError(
            [
                Diagnostic(
                    where,
                    f"provider '{spec.kind}' returned {type(made).__name__}, which lacks "
                    "identity(), complete(), cache_salt(), close() or max_concurrency",
                )
            ]
        )
    return made
