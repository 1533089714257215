"""The ``model:``, ``judge:`` and ``decoding:`` sections: which provider, configured how.

A provider declares its own config schema, defaults and checks where it is registered (see
:class:`~skilleval.plugins.markers.ProviderType`). This module only knows the shorthands a
suite may write instead of a mapping, and hands the mapping to the registered provider.

Shorthands: nothing or ``default`` is the embedded model; a registered provider's name
(``echo``, ``scripted`` …) is that provider with no settings; any other string is a GGUF path.
A mapping without ``provider:`` picks the provider whose ``implied_by`` key it has
(``base_url`` → openai, ``path`` → gguf).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from skilleval.errors import Diagnostic, DiagnosticsError, Location
from skilleval.plugins.manager import PluginManager
from skilleval.plugins.markers import ProviderType
from skilleval.suite import files as filerefs
from skilleval.suite.defaults import written
from skilleval.suite.schema import validate
from skilleval.suite.yamlio import Document

Mode = Literal["deterministic", "distribution"]

DEFAULT_PROVIDER = "gguf"
"""What ``model: default``, an absent ``model:`` and a bare path mean."""


@dataclass(frozen=True, slots=True)
class Decoding:
    """How tokens are chosen. Recorded beside every score."""

    mode: Mode = "deterministic"
    seed: int = 0
    temperature: float = 0.8
    """Used in distribution mode only; deterministic mode is greedy."""
    top_p: float = 0.95
    """Used in distribution mode only."""
    max_tokens: int = 256

    def sampling(self, trial: int) -> tuple[float, float, int]:
        """(temperature, top_p, seed) for trial ``trial``: greedy, or sampled with seed base+i."""
        if self.mode == "deterministic":
            return 0.0, 1.0, self.seed
        return self.temperature, self.top_p, self.seed + trial

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode, "seed": self.seed, "max_tokens": self.max_tokens}
        if self.mode == "distribution":
            out |= {"temperature": self.temperature, "top_p": self.top_p}
        else:
            out |= {"temperature": 0.0, "greedy": True}
        return out


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """Which model to run and how: a registered provider and the config it read.

    ``config`` is whatever the provider's ``configure`` returned (a dict when it has none); a
    config with a ``to_json()`` method chooses what the results record of it.
    """

    provider: ProviderType
    config: Any = None
    label: str = ""
    """How the model was written, for messages (``default``, a path, a URL)."""
    where: Location = field(default=Location("command line"), compare=False)
    """The ``model:`` (or ``judge:``) line, for a model that turns out not to load."""

    @property
    def kind(self) -> str:
        """The provider's registered name."""
        return self.provider.name

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"provider": self.kind, "label": self.label}
        describe = getattr(self.config, "to_json", None)
        if callable(describe):
            out |= describe()
        elif isinstance(self.config, Mapping) and self.config:
            out["config"] = dict(self.config)
        return out


@dataclass
class _Context:
    """A provider's view of its mapping while it configures itself (a ConfigContext)."""

    base_dir: Path
    where: Location
    doc: Document | None
    at: list[str | int]
    reader: filerefs.Reader
    diags: list[Diagnostic] = field(default_factory=list)

    def _at(self, key: str | None) -> Location:
        if key is None or self.doc is None:
            return self.where
        return self.doc.at([*self.at, key])

    def error(self, message: str, key: str | None = None) -> None:
        self.diags.append(Diagnostic(self._at(key), message))

    def read_ref(self, ref: str, key: str) -> Any:
        try:
            return self.reader.value(ref, self.base_dir, self._at(key))
        except DiagnosticsError as exc:
            self.diags.extend(exc.diagnostics)
            return None


def provider_names(manager: PluginManager) -> str:
    """The registered providers as a sentence fragment: ``echo, gguf, openai or scripted``."""
    names = manager.names("provider")
    return " or ".join([", ".join(names[:-1]), names[-1]]) if len(names) > 1 else "".join(names)


def parse_model(
    raw: Any,
    *,
    key: str,
    where: Location,
    doc: Document | None,
    manager: PluginManager,
    base_dir: Path,
    reader: filerefs.Reader,
    path: Sequence[str | int] | None = None,
) -> tuple[ModelSpec | None, list[Diagnostic]]:
    """Read a ``model:`` or ``judge:`` value.

    Args:
        raw: The value as written (a string or a mapping), or None when absent.
        key: ``model`` or ``judge``, for messages.
        where: The value's position (or ``command line`` for an option).
        doc: The suite document when the value came from it, for key positions.
        manager: The registered providers.
        base_dir: The folder relative paths are relative to: the suite's for a value
            written in it, the current directory for one given on the command line.
        reader: Reads ``file://`` values and records the files read.
        path: Where the value is in ``doc``, when not at the top-level ``key``
            (``["models", 1]``).

    Returns:
        The spec (None when it cannot be built) and every problem found, positioned.
    """
    at: list[str | int] = list(path) if path is not None else [key]
    if raw is None or raw == "default":
        raw = {"provider": DEFAULT_PROVIDER, "path": "default"}
        doc = None
    elif isinstance(raw, str):
        if raw.startswith(("http://", "https://")):
            message = f"to use a server, write `{key}: {{provider: openai, base_url: {raw}, model: NAME}}`"
            return None, [Diagnostic(where, message)]
        named = manager.provider(raw) is not None
        raw = {"provider": raw} if named else {"provider": DEFAULT_PROVIDER, "path": raw}
        doc = None
    mapping: dict[str, Any] = dict(raw)
    name = mapping.pop("provider", None)
    if name is None:
        name = next((p.name for p in manager.providers() if p.implied_by in mapping), None)
    if name is None:
        implied = [f"`{p.implied_by}:`" for p in manager.providers() if p.implied_by]
        message = f"`{key}:` needs `provider:` ({provider_names(manager)})"
        message += f" or {' or '.join(implied)}" if implied else ""
        return None, [Diagnostic(where, message)]
    provider = manager.provider(str(name))
    if provider is None:
        bad = doc.at([*at, "provider"]) if doc else where
        return None, [Diagnostic(bad, manager.unknown("provider", str(name)))]
    diags = _check_keys(provider, mapping, at, where, doc)
    if diags:
        return None, diags
    ctx = _Context(base_dir, where, doc, at, reader)
    config = provider.configure(mapping, ctx) if provider.configure else mapping
    if ctx.diags:
        return None, ctx.diags
    label = getattr(config, "label", None)
    return ModelSpec(provider, config, str(label) if label else provider.name), []


def _check_keys(
    provider: ProviderType,
    mapping: Mapping[str, Any],
    at: list[str | int],
    where: Location,
    doc: Document | None,
) -> list[Diagnostic]:
    """Keys the provider does not take, then the values against its schema."""
    allowed = provider.properties()
    diags = [
        Diagnostic(
            doc.key_at([*at, extra]) if doc else where,
            f"'{extra}' does not apply to the {provider.name} provider",
        )
        for extra in sorted(set(mapping) - set(allowed))
    ]
    if diags:
        return diags
    schema = {**dict(provider.schema or {}), "additionalProperties": True}
    if doc is not None:
        return validate(doc.sub(at), schema, what=f"the {provider.name} provider")
    # A shorthand (`model: NAME`, `--model NAME`) has no positions inside it.
    from jsonschema import Draft202012Validator  # lazy: start-up time

    return [
        Diagnostic(where, f"the {provider.name} provider: {error.message}")
        for error in Draft202012Validator(schema).iter_errors(dict(mapping))
    ]


def parse_decoding(doc: Document, seed: int | None) -> tuple[Decoding, list[Diagnostic]]:
    """Read ``decoding:``; ``seed`` (from the command line) wins over ``decoding.seed``."""
    raw = doc.data.get("decoding") or {}
    given = written(
        raw,
        {"mode": str, "seed": int, "temperature": float, "top_p": float, "max_tokens": int},
    )
    if seed is not None:
        given["seed"] = seed
    dec = Decoding(**given)
    diags: list[Diagnostic] = []
    if dec.mode == "deterministic" and ("temperature" in raw or "top_p" in raw):
        key = "temperature" if "temperature" in raw else "top_p"
        diags.append(
            Diagnostic(
                doc.key_at(["decoding", key]),
                f"`{key}` only applies in distribution mode; deterministic mode is greedy",
            )
        )
    return dec, diags
