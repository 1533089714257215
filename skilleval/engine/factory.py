"""Build the provider a suite asks for, through the provider's registration."""

from __future__ import annotations

from pathlib import Path

from skilleval.engine.base import Checked, ModelSpec, Provider, ProviderContext
from skilleval.errors import (
    Diagnostic,
    Location,
    ModelDownloadError,
    PluginError,
    ProviderError,
    ServerUnreachable,
    SkillevalError,
    SuiteError,
)


def create_provider(spec: ModelSpec, *, home: Path, jobs: int = 1) -> Provider:
    """A provider for ``spec``; nothing is loaded until its first call.

    Raises:
        ProviderError: The provider cannot be set up (a missing key, a bad URL …).
        PluginError: A plugin's factory raised something else, or returned something that is
            not a provider.
    """
    factory = spec.provider.factory
    code = factory.__code__
    where = Location(code.co_filename, code.co_firstlineno, 1)
    try:
        made = factory(spec.config, ProviderContext(home=home, jobs=max(1, jobs)))
    except SkillevalError:
        raise
    except Exception as exc:
        # Whoever wrote it, a factory that raises is reported at its line.
        message = f"provider '{spec.kind}' failed to start: {type(exc).__name__}: {exc}"
        raise PluginError([Diagnostic(where, message)]) from exc
    if not isinstance(made, Provider):
        message = (
            f"provider '{spec.kind}' returned {type(made).__name__}, which lacks "
            "identity(), complete(), cache_salt(), close() or max_concurrency"
        )
        raise PluginError([Diagnostic(where, message)])
    return made


def check_model(provider: Provider, spec: ModelSpec) -> None:
    """Stop before a run if its model cannot load: a mistake in the suite, not in a test.

    A missing file, a file that is not a model, a runtime that is not installed, or a server
    on this machine that is not running would otherwise make every test an error. Providers
    that cannot tell without loading (a remote server, a plugin without ``check()``) are not
    asked; their failures stay per-call errors.

    Raises:
        SuiteError: At the ``model:`` (or ``judge:``) line, or ``command line`` for ``--model``.
        ModelDownloadError: A hub model could not be fetched: the run failed, not the suite;
            the message starts with the ``model:`` line.
        ServerUnreachable: A local server accepts no connection (exit 3, likewise).
    """
    if not isinstance(provider, Checked):
        return
    try:
        provider.check()
    except ModelDownloadError as exc:
        raise ModelDownloadError(f"{spec.where}: {exc}") from None
    except ServerUnreachable as exc:
        raise ServerUnreachable(f"{spec.where}: {exc}") from None
    except ProviderError as exc:
        raise SuiteError([Diagnostic(spec.where, str(exc))]) from None
