"""promptfoo's provider ids, read as skilleval model settings.

A promptfoo config names its models in ``providers:`` (or ``targets:``) with ids such as
``openai:chat:gpt-4o-mini`` or ``ollama:chat:llama3``. skilleval runs local models and
OpenAI-compatible servers, so each id becomes the ``model:`` value that means the same thing:

=================================  ===========================================================
id                                 skilleval model
=================================  ===========================================================
``echo``                           the echo provider
``file://m.gguf``, ``m.gguf``      that GGUF file, relative to the suite
``llama:PATH``                     that GGUF file
``openai:chat:NAME`` (``apiBaseUrl`` in ``config``)  that OpenAI-compatible server
``openai:NAME``, ``openai:chat:NAME`` (no base URL)  api.openai.com, when OPENAI_API_KEY is set
``ollama:NAME``, ``ollama:chat:NAME``                ollama's OpenAI-compatible endpoint
``anthropic:…``, ``google:…``, ``mistral:…`` …        the vendor's OpenAI-compatible endpoint,
                                                      when its key's variable is set
=================================  ===========================================================

promptfoo's own forms for the user's application run as skilleval's providers of the same
meaning: ``file://provider.py[:fn]`` (or ``python:provider.py``) as ``python``, ``exec:CMD`` as
``exec``, and ``http``/``https`` (or a URL as the id) as ``http``, each with its ``config``.

Anything else (a JavaScript provider, a hosted family skilleval does not call, a cloud id whose
key is not set) is refused by name with the nearest form skilleval runs; nothing is guessed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from skilleval.util.frozen import frozen

OLLAMA_URL = "http://127.0.0.1:11434/v1"
"""Where ollama serves its OpenAI-compatible API unless ``OLLAMA_BASE_URL`` says otherwise."""


@frozen
class CloudVendor:
    """A hosted API that speaks the OpenAI chat protocol, and the variable holding its key."""

    base_url: str
    key_env: str
    also: tuple[str, ...] = ()
    """Other variables promptfoo reads the key from, tried after ``key_env``."""


CLOUD: Mapping[str, CloudVendor] = {
    "openai": CloudVendor("https://api.openai.com/v1", "OPENAI_API_KEY"),
    "anthropic": CloudVendor("https://api.anthropic.com/v1", "ANTHROPIC_API_KEY"),
    "google": CloudVendor(
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "GOOGLE_API_KEY",
        ("GEMINI_API_KEY",),
    ),
    "vertex": CloudVendor(
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "GOOGLE_API_KEY",
        ("GEMINI_API_KEY",),
    ),
    "mistral": CloudVendor("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "groq": CloudVendor("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "deepseek": CloudVendor("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "openrouter": CloudVendor("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "togetherai": CloudVendor("https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "fireworks": CloudVendor("https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
    "perplexity": CloudVendor("https://api.perplexity.ai", "PERPLEXITY_API_KEY"),
    "xai": CloudVendor("https://api.x.ai/v1", "XAI_API_KEY"),
}


def with_config_env(top: Any) -> dict[str, str]:
    """The process's environment with a config's ``env:`` over it, as a run will have it:
    a key set there counts as set."""
    env = dict(os.environ)
    own = top.get("env") if isinstance(top, Mapping) else None
    if isinstance(own, Mapping):
        env.update({str(k): str(v) for k, v in own.items() if v is not None})
    return env


# The part after the vendor that names an API, not a model: `openai:chat:NAME`.
_API_KINDS = frozenset({"chat", "completion", "messages", "responses"})


@frozen
class Translated:
    """A provider id read as a model: the ``model:`` value, its column label, or why not."""

    model: str | dict[str, Any] | None
    label: str
    refusal: str | None = None
    uses_config: bool = False
    """The whole ``config`` is handed to the provider (the user's application reads it)."""
    missing_key: str | None = None
    """A hosted model read without its key (``need_keys=False``): the variables to set."""


_OPENAI_FORM = "`openai:chat:NAME` with `config: {apiBaseUrl: URL, apiKeyEnvar: VAR}`"

HOSTED_ELSEWHERE: Mapping[str, tuple[str, str]] = {
    "bedrock": (
        "AWS Bedrock",
        f"an OpenAI-compatible gateway in front of it ({_OPENAI_FORM}), or an `http` provider",
    ),
    "sagemaker": (
        "an AWS SageMaker endpoint",
        "an `http` provider with its URL, headers and `transformResponse`",
    ),
    "huggingface": (
        "Hugging Face's inference API",
        "the model's GGUF run locally (`model: hf:OWNER/REPO:QUANT`), or its OpenAI-compatible"
        f" router ({_OPENAI_FORM}, apiBaseUrl https://router.huggingface.co/v1)",
    ),
    "hf": (
        "Hugging Face's inference API",
        "the model's GGUF run locally (`model: hf:OWNER/REPO:QUANT`)",
    ),
    "cerebras": (
        "Cerebras' API",
        f"its OpenAI-compatible endpoint: {_OPENAI_FORM} with apiBaseUrl https://api.cerebras.ai/v1"
        " and apiKeyEnvar CEREBRAS_API_KEY",
    ),
    "adaline": (
        "Adaline's gateway",
        "the vendor's own id (`openai:chat:NAME`, `anthropic:messages:NAME` …)",
    ),
    "azure": ("Azure OpenAI", f"an OpenAI-compatible endpoint ({_OPENAI_FORM})"),
    "azureopenai": ("Azure OpenAI", f"an OpenAI-compatible endpoint ({_OPENAI_FORM})"),
    "replicate": (
        "Replicate's API",
        "an `http` provider with its URL, headers and `transformResponse`",
    ),
    "cohere": ("Cohere's API", f"its OpenAI-compatible endpoint ({_OPENAI_FORM})"),
    "watsonx": ("IBM watsonx", "an `http` provider with its URL, headers and `transformResponse`"),
    "cloudflare-ai": ("Cloudflare Workers AI", f"its OpenAI-compatible endpoint ({_OPENAI_FORM})"),
    "voyage": ("Voyage AI's embeddings", "an embedding model run locally (see docs/models.md)"),
}
"""Hosted families skilleval does not call, by id prefix: what they are, and the nearest form
it runs."""

HTTP_KEYS: Mapping[str, str] = {
    "url": "url",
    "method": "method",
    "headers": "headers",
    "body": "body",
    "queryParams": "query_params",
    "transformResponse": "transform_response",
    "responseParser": "transform_response",
    "validateStatus": "validate_status",
    "timeout": "timeout",
}
"""promptfoo's http settings skilleval's ``http`` provider reads, and its names for them."""

HTTP_REFUSED = frozenset(
    {
        "request",
        "transformRequest",
        "session",
        "sessionParser",
        "auth",
        "signatureAuth",
        "tls",
        "multipart",
        "useHttps",
    }
)
"""http settings that change the request and that skilleval's provider does not implement."""


ENTRY_KEYS = frozenset({"id", "label", "config", "prompts"})
"""The keys of a provider entry skilleval reads."""


def normalized(entry: Any) -> Any:
    """promptfoo's older form of an entry, ``{ID: {config: …}}``, as ``{id: ID, config: …}``;
    anything else as written."""
    if isinstance(entry, Mapping) and len(entry) == 1 and next(iter(entry)) not in ENTRY_KEYS:
        ((pid, rest),) = entry.items()
        return {"id": pid, **(rest if isinstance(rest, Mapping) else {})}
    return entry


def translate(
    entry: Any, env: Mapping[str, str] | None = None, *, need_keys: bool = True
) -> Translated:
    """Read one ``providers:`` entry (an id, or a mapping with ``id``, ``label``, ``config``).

    Args:
        entry: The entry as written.
        env: The environment to look up API keys and ``OLLAMA_BASE_URL`` in (the process's).
        need_keys: Refuse a hosted id whose key's variable is not set. ``import`` writes it
            out anyway, naming the variable, so that the run asks for the key.
    """
    env = os.environ if env is None else env
    entry = normalized(entry)
    config: Mapping[str, Any] = {}
    label = ""
    written = entry
    if isinstance(entry, Mapping):
        config = entry.get("config") or {}
        label = str(entry.get("label") or "")
        entry = entry.get("id")
        if not isinstance(config, Mapping):
            return Translated(None, label, "a provider's `config` must be a mapping of settings")
    if not isinstance(entry, str) or not entry:
        return Translated(None, label, _without_id(written))
    out = _translate_id(entry, config, env, need_keys)
    return Translated(out.model, label or out.label, out.refusal, out.uses_config, out.missing_key)


def _without_id(entry: Any) -> str:
    """Why an entry with no ``id`` is refused, naming what it holds instead."""
    what = "a provider needs an `id` (e.g. `echo` or `file://model.gguf`)"
    if not isinstance(entry, Mapping):
        return what
    for key in ("model", "provider", "name", "path"):
        value = entry.get(key)
        if isinstance(value, str) and value:
            return (
                f"this provider has no `id`: promptfoo does not read `{key}: {value}`; name"
                f" the provider by `id: {value}`"
            )
    others = sorted(str(k) for k in entry if k not in ENTRY_KEYS)
    if others:
        listed = ", ".join(f"`{k}`" for k in others)
        return f"this provider has no `id`, and {listed} is not a key of a provider; {what}"
    return what


def _translate_id(
    pid: str, config: Mapping[str, Any], env: Mapping[str, str], need_keys: bool
) -> Translated:
    if pid == "echo":
        return Translated("echo", "echo")
    if pid.startswith("file://") and pid.endswith(".gguf"):
        return Translated(pid.removeprefix("file://"), pid.removeprefix("file://"))
    if pid.endswith(".gguf") and ":" not in pid:
        return Translated(pid, pid)
    own = _own_application(pid, config)
    if own is not None:
        return own
    vendor, _, rest = pid.partition(":")
    if vendor in ("llama", "llama.cpp", "llamacpp") and rest.endswith(".gguf"):
        return Translated(rest, rest)
    parts = rest.split(":")
    name = ":".join(parts[1:]) if parts[0] in _API_KINDS and len(parts) > 1 else rest
    base = config.get("apiBaseUrl") or config.get("apiHost") or config.get("baseUrl")
    if vendor == "ollama" and name:
        url = str(base or env.get("OLLAMA_BASE_URL") or "").rstrip("/")
        url = f"{url}/v1" if url and not url.endswith("/v1") else (url or OLLAMA_URL)
        return Translated(_server(url, name, config), f"ollama:{name}")
    if vendor in CLOUD and name:
        if base:
            return Translated(_server(str(base), name, config), name)
        cloud = CLOUD[vendor]
        names = (cloud.key_env, *cloud.also)
        key_env = next((k for k in names if env.get(k)), cloud.key_env)
        if need_keys and not env.get(key_env):
            return Translated(
                None,
                name,
                f"`{pid}` is a hosted model and {' or '.join(names)} is not set; set it, or"
                " give `config: {apiBaseUrl: URL}` for a local OpenAI-compatible server, or use"
                " a local model (`file://model.gguf`)",
            )
        missing = None if env.get(key_env) else " or ".join(names)
        return Translated(_server(cloud.base_url, name, config, key_env), name, missing_key=missing)
    hint = "use `echo`, `file://model.gguf`, `ollama:chat:NAME` or `openai:chat:NAME` with `config: {apiBaseUrl: URL}`"
    if vendor in HOSTED_ELSEWHERE:
        what, nearest = HOSTED_ELSEWHERE[vendor]
        return Translated(
            None, pid, f"`{pid}` is {what}, which skilleval does not call; the nearest: {nearest}"
        )
    if vendor in ("file", "python", "exec", "webhook", "script", "golang", "ruby"):
        why = (
            f"`{pid}`: skilleval runs a Python provider (`file://provider.py`), an `exec:`"
            " command or an `http` endpoint as your own application; for anything else, "
        )
        return Translated(None, pid, why + "write a provider plugin (docs/plugins.md), or " + hint)
    return Translated(None, pid, f"`{pid}` is not a provider skilleval can run; {hint}")


_JS_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".mts")


def _own_application(pid: str, config: Mapping[str, Any]) -> Translated | None:
    """promptfoo's forms for the user's own application, as skilleval's providers; None for
    an id of another kind."""
    ref = pid.removeprefix("file://") if pid.startswith("file://") else None
    if ref is None and pid.startswith("python:"):
        ref = pid.removeprefix("python:")
    if ref is not None and ref.split(":")[0].endswith(".py"):
        path, _, function = ref.partition(":")
        model: dict[str, Any] = {"provider": "python", "path": path}
        if function:
            model["function"] = function
        if config:
            model["config"] = dict(config)
        return Translated(model, pid, uses_config=True)
    if ref is not None and ref.split(":")[0].endswith(_JS_SUFFIXES):
        return Translated(
            None,
            pid,
            f"`{pid}` is a JavaScript provider, which skilleval does not run; the nearest: the"
            " same code behind a Python provider (`file://provider.py`, promptfoo's"
            " call_api(prompt, options, context)) or an `exec:` command",
        )
    if pid.startswith("exec:"):
        command = pid.removeprefix("exec:").strip()
        if not command:
            return Translated(None, pid, "`exec:` needs a command after the colon")
        model = {"provider": "exec", "command": command}
        if config:
            model["config"] = dict(config)
        return Translated(model, pid, uses_config=True)
    if pid in ("http", "https") or pid.startswith(("http://", "https://")):
        return _http(pid, config)
    return None


def _http(pid: str, config: Mapping[str, Any]) -> Translated:
    """promptfoo's http provider as skilleval's ``http``."""
    refused = sorted(k for k in config if k in HTTP_REFUSED)
    if refused:
        return Translated(
            None,
            pid,
            f"`{pid}`: skilleval's http provider does not implement `{refused[0]}`; the"
            " nearest: compute the request in a Python provider (`file://provider.py`)",
        )
    url = config.get("url") or (pid if pid.startswith(("http://", "https://")) else None)
    if not url:
        return Translated(None, pid, f"`{pid}` needs `config: {{url: ...}}`")
    if "body" not in config and str(config.get("method", "")).upper() != "GET":
        return Translated(
            None, pid, f"`{pid}` needs `config: {{body: ...}}`, or `method: GET` (as promptfoo)"
        )
    model: dict[str, Any] = {"provider": "http", "url": url}
    for key, ours in HTTP_KEYS.items():
        if key != "url" and key in config:
            value = config[key]
            model[ours] = (
                value / 1000 if key == "timeout" and isinstance(value, (int, float)) else value
            )
    return Translated(model, pid, uses_config=True)


def _server(
    base_url: str, name: str, config: Mapping[str, Any], key_env: str | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"provider": "openai", "base_url": base_url.rstrip("/"), "model": name}
    key_env = config.get("apiKeyEnvar") or key_env
    if key_env:
        out["api_key_env"] = str(key_env)
    return out
