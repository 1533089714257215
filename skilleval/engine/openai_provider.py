"""The ``openai`` provider's settings and registration (the client is in ``engine/openai.py``).

Kept apart from the client so that listing providers does not import httpx.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from skilleval.api import Capabilities
from skilleval.engine.base import ProviderContext
from skilleval.plugins.markers import ConfigContext, provider
from skilleval.util.frozen import frozen

if TYPE_CHECKING:
    from skilleval.engine.openai import OpenAIProvider

TIMEOUT_S = 120.0
RETRIES = 3


@frozen
class OpenAIConfig:
    """``model: {provider: openai, base_url, model, api_key_env, timeout, retries}``."""

    base_url: str | None = None
    model: str | None = None
    """The model name the server serves (see GET /v1/models)."""
    api_key_env: str | None = None
    """The environment variable holding the API key, sent as a bearer token."""
    timeout_s: float = TIMEOUT_S
    """Seconds per network operation."""
    retries: int = RETRIES
    """Extra attempts after the first."""
    cache_prompt: bool | None = None
    """llama.cpp's ``cache_prompt``, sent as given on every request. None: deterministic
    requests ask for ``false`` (reusing a cached prompt prefix changes greedy replies), and
    the field is dropped for the run once a server refuses it."""
    label: str = ""
    """``base_url`` as written, for messages."""

    @classmethod
    def configure(cls, raw: Mapping[str, Any], ctx: ConfigContext) -> OpenAIConfig:
        for need in ("base_url", "model"):
            if need not in raw:
                ctx.error(f"the openai provider needs `{need}:`")
        return cls(
            base_url=str(raw.get("base_url", "")).rstrip("/"),
            model=raw.get("model"),
            api_key_env=raw.get("api_key_env"),
            timeout_s=float(raw.get("timeout", TIMEOUT_S)),
            retries=int(raw.get("retries", RETRIES)),
            cache_prompt=raw.get("cache_prompt"),
            label=str(raw.get("base_url", "")),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"base_url": self.base_url, "model": self.model}
        if self.cache_prompt is not None:
            out["cache_prompt"] = self.cache_prompt
        return out


OPENAI_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "base_url": {"type": "string", "pattern": "^https?://"},
        "model": {"type": "string", "minLength": 1},
        "api_key_env": {"type": "string", "minLength": 1},
        "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds per request."},
        "retries": {"type": "integer", "minimum": 0},
        "cache_prompt": {
            "type": "boolean",
            "description": "Sent as llama.cpp's cache_prompt. Unset: false in deterministic mode, where the server takes it.",
        },
    },
}


@provider(
    "openai",
    schema=OPENAI_SCHEMA,
    configure=OpenAIConfig.configure,
    implied_by="base_url",
    capabilities=Capabilities(timed=True, costed=True, measured=True, logprobs=True),
)
def openai(config: OpenAIConfig, context: ProviderContext) -> OpenAIProvider:
    """Any OpenAI-compatible /v1/chat/completions server (vLLM, llama.cpp server …)."""
    from skilleval.engine.openai import OpenAIProvider  # lazy: start-up time (httpx)

    return OpenAIProvider(config, jobs=context.jobs)
