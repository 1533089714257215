"""The ``model:``, ``judge:`` and ``decoding:`` sections: which provider, configured how.

A provider declares its own config schema, defaults and checks where it is registered (see
:class:`~skilleval.plugins.markers.ProviderType`). This module only knows the shorthands a
suite may write instead of a mapping, and hands the mapping to the registered provider.

Shorthands: nothing or ``default`` is the embedded model; a registered provider's name
(``echo``, ``scripted`` …) is that provider with no settings; ``ollama:NAME`` and
``lmstudio:NAME`` are the openai provider at that local server's OpenAI-compatible endpoint
(see :data:`LOCAL_SERVERS`); any other string is a GGUF path (``hf:…`` included, which the gguf
provider reads). A mapping without ``provider:`` picks the provider whose ``implied_by`` key it
has (``base_url`` → openai, ``path`` → gguf).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from skilleval.errors import Diagnostic, DiagnosticsError, Location
from skilleval.plugins.manager import PluginManager
from skilleval.plugins.markers import ProviderType
from skilleval.suite import files as filerefs
from skilleval.suite.defaults import written
from skilleval.suite.schema import is_valid, validate, validator_for
from skilleval.suite.yamlio import Document
from skilleval.util.frozen import frozen

Mode = Literal["deterministic", "distribution"]

DEFAULT_PROVIDER = "gguf"
"""What ``model: default``, an absent ``model:`` and a bare path mean."""


@frozen
class LocalServer:
    """A local model server that speaks the OpenAI API, named by a ``NAME:MODEL`` shorthand."""

    title: str
    port: int
    """Its default port on 127.0.0.1."""
    host_env: str | None = None
    """The server's own variable for where it listens (``host[:port]`` or a URL), if it has one."""
    url_env: str | None = None
    """A variable holding its base URL, as promptfoo reads it; wins over ``host_env``."""
    lists: str = ""
    """Where a user sees the model names it serves, for messages."""

    def base_url(self) -> str:
        """The ``/v1`` endpoint: ``url_env``'s or ``host_env``'s when set, else on 127.0.0.1."""
        url = (os.environ.get(self.url_env) or "").strip().rstrip("/") if self.url_env else ""
        if url:
            return url if url.endswith("/v1") else f"{url}/v1"
        given = (os.environ.get(self.host_env) or "").strip() if self.host_env else ""
        if not given:
            return f"http://127.0.0.1:{self.port}/v1"
        scheme, sep, rest = given.partition("://")
        if not sep:
            scheme, rest = "http", given
        hostport = rest.split("/", 1)[0]
        # Without a scheme the server's port is implied, as its own client reads the variable;
        # with one, the scheme's.
        if not sep and not _has_port(hostport):
            hostport = f"{hostport}:{self.port}"
        return f"{scheme}://{hostport}/v1"


def _has_port(hostport: str) -> bool:
    if hostport.startswith("["):  # [::1]:11434
        return "]:" in hostport
    return hostport.count(":") == 1


LOCAL_SERVERS: dict[str, LocalServer] = {
    "ollama": LocalServer(
        "Ollama", 11434, host_env="OLLAMA_HOST", url_env="OLLAMA_BASE_URL", lists="`ollama list`"
    ),
    "lmstudio": LocalServer("LM Studio", 1234, lists="`lms ls`"),
}
"""``ollama:NAME`` and ``lmstudio:NAME``: the openai provider at the server's default address.
Ollama's address follows ``OLLAMA_BASE_URL`` (as promptfoo's ids do, see ``provider_ids``) or
else ``OLLAMA_HOST`` (as its own client does); any other address is written out as
``{provider: openai, base_url: …, model: NAME}``."""


@frozen
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


@frozen
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
    tools: Mapping[str, Any] = field(default_factory=dict, compare=False)
    """A promptfoo provider's ``config.tools`` and ``config.functions``, files read: what its
    tool-call checks validate calls against (not sent to the model)."""

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
    label: str | None = None
    at: list[str | int] = list(path) if path is not None else [key]
    if raw is None or raw == "default":
        raw = {"provider": DEFAULT_PROVIDER, "path": "default"}
        doc = None
    elif isinstance(raw, str):
        if raw.startswith(("http://", "https://")):
            message = f"to use a server, write `{key}: {{provider: openai, base_url: {raw}, model: NAME}}`"
            return None, [Diagnostic(where, message)]
        shorthand = _local_server(raw, key, where)
        if isinstance(shorthand, Diagnostic):
            return None, [shorthand]
        if shorthand is not None:
            label = raw
            raw = shorthand
        else:
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
    label = label or getattr(config, "label", None)
    return ModelSpec(provider, config, str(label) if label else provider.name), []


def _local_server(raw: str, key: str, where: Location) -> dict[str, Any] | Diagnostic | None:
    """The openai mapping an ``ollama:NAME`` or ``lmstudio:NAME`` shorthand stands for."""
    prefix, sep, name = raw.partition(":")
    server = LOCAL_SERVERS.get(prefix) if sep else None
    if server is None:
        return None
    if prefix == "ollama" and name.startswith("chat:"):
        name = name.removeprefix("chat:")  # promptfoo's spelling of the same model
    if not name.strip():
        return Diagnostic(
            where,
            f"`{key}: {prefix}:` needs the model's name as {server.title} lists it "
            f"({server.lists}): `{key}: {prefix}:NAME`",
        )
    return {"provider": "openai", "base_url": server.base_url(), "model": name}


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
    if is_valid(schema, dict(mapping)):
        return []
    return [
        Diagnostic(where, f"the {provider.name} provider: {error.message}")
        for error in validator_for(schema).iter_errors(dict(mapping))
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
