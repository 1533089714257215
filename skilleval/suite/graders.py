"""promptfoo's grader settings, read as skilleval's ``judge:``.

promptfoo picks the model that grades ``llm-rubric`` and its kin from an assertion's
``provider``, then the test's ``options.provider``, then ``defaultTest.options.provider``.
skilleval grades a suite with one judge, so every such setting must name the same model; it
then stands for ``judge:``. A provider id becomes a skilleval model as follows:

- ``echo``, ``default`` and the names of registered providers: themselves;
- ``file://model.gguf`` or a path ending in ``.gguf``: that file, relative to the suite;
- ``openai:chat:NAME`` (or ``openai:NAME``) with ``config.apiBaseUrl`` (or ``apiHost``):
  the OpenAI-compatible server there, its key read from ``config.apiKeyEnvar`` if set;
- ``ollama:chat:NAME`` (or ``ollama:NAME``): Ollama's OpenAI-compatible endpoint on
  ``config.apiBaseUrl`` or http://localhost:11434.

Anything else (a cloud id without a server address, a key written into the file, a setting
the judge cannot honour) is refused with the nearest supported form.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from skilleval.util import fileref

_OPENAI = re.compile(r"^openai:(?:chat:)?(?P<model>[^:]+)$")
_OLLAMA = re.compile(r"^ollama:(?:chat:)?(?P<model>[^:]+)$")
_OLLAMA_URL = "http://localhost:11434"
_ALTERNATIVE = (
    "write `openai:chat:NAME` with `config: {apiBaseUrl: http://HOST/v1}` for an"
    " OpenAI-compatible server, `file://model.gguf` for a local model, or set `judge:`"
)
_IGNORED = frozenset({"temperature"})
"""Settings a grader may carry that the judge already satisfies (it always decodes greedily)."""


@dataclass(frozen=True, slots=True)
class Grader:
    """A promptfoo grader read as a ``judge:`` value (what :func:`parse_model` takes)."""

    judge: Any
    """A string (a provider name or a model path) or a provider mapping."""

    def key(self) -> str:
        return repr(sorted(self.judge.items())) if isinstance(self.judge, dict) else self.judge


def read_grader(raw: Any, provider_names: frozenset[str]) -> Grader | str:
    """The judge a promptfoo provider setting names, or why it cannot be one."""
    config: Mapping[str, Any] = {}
    if isinstance(raw, Mapping):
        if "id" not in raw or not isinstance(raw["id"], str):
            return "a grader `provider:` mapping needs an `id:` (a provider id string)"
        extra = sorted(set(raw) - {"id", "config", "label"})
        if extra:
            return f"'{extra[0]}' is not read from a grader's provider; {_ALTERNATIVE}"
        config = raw.get("config") or {}
        if not isinstance(config, Mapping):
            return "a grader's `config:` must be a mapping"
        raw = raw["id"]
    if not isinstance(raw, str) or not raw.strip():
        return f"a grader `provider:` is a provider id or {{id, config}}; {_ALTERNATIVE}"
    ident = raw.strip()
    if ident in provider_names or ident == "default":
        return _plain(ident, config)
    path = fileref.parse(ident).path if fileref.is_ref(ident) else ident
    if path.lower().endswith(".gguf"):
        return _plain(path, config)
    for pattern, default_url in ((_OPENAI, None), (_OLLAMA, _OLLAMA_URL)):
        found = pattern.match(ident)
        if found:
            return _server(ident, found["model"], config, default_url)
    return (
        f"grader '{ident}' is not a model skilleval can run: the judge is a local model or"
        f" an OpenAI-compatible server; {_ALTERNATIVE}"
    )


def _plain(ident: str, config: Mapping[str, Any]) -> Grader | str:
    unknown = _unknown(config, set())
    return unknown or Grader(ident)


def _server(
    ident: str, model: str, config: Mapping[str, Any], default_url: str | None
) -> Grader | str:
    if "apiKey" in config:
        return (
            "a grader's `apiKey` is not read from the suite: put the key in an environment"
            " variable and name it with `apiKeyEnvar`"
        )
    unknown = _unknown(config, {"apiBaseUrl", "apiHost", "apiKeyEnvar"})
    if unknown:
        return unknown
    url = config.get("apiBaseUrl")
    if url is None and config.get("apiHost"):
        url = f"https://{config['apiHost']}/v1"
    if url is None and default_url is not None:
        url = f"{default_url}/v1"
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return (
            f"grader '{ident}' needs `config.apiBaseUrl` (an http:// or https:// address):"
            " skilleval's judge runs on a server you name, never a default cloud endpoint"
        )
    judge: dict[str, Any] = {"provider": "openai", "base_url": url.rstrip("/"), "model": model}
    if config.get("apiKeyEnvar"):
        judge["api_key_env"] = str(config["apiKeyEnvar"])
    return Grader(judge)


def _unknown(config: Mapping[str, Any], allowed: set[str]) -> str | None:
    for key in sorted(config):
        if key in allowed:
            continue
        if key in _IGNORED and config[key] in (0, 0.0):
            continue  # the judge is greedy already
        return (
            f"grader setting '{key}' is not carried over: the judge's settings are those of"
            " `judge:` (it always decodes greedily); remove it or set `judge:` yourself"
        )
    return None
