"""What every model provider speaks: requests in, completions out.

A provider turns a :class:`Request` into a :class:`Completion` or raises
:class:`~skilleval.errors.ProviderError`. Providers know nothing about suites, tests or
assertions; the runner builds requests and the cache wraps providers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Mode = Literal["deterministic", "distribution"]
ProviderKind = Literal["gguf", "openai", "echo", "scripted"]


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message."""

    role: str
    content: str

    def to_json(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


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
    """Which model to run and how to load it; parsed from ``model:`` / ``judge:``."""

    kind: ProviderKind
    path: str | None = None
    """GGUF file path (``default`` is resolved to the embedded model)."""
    base_url: str | None = None
    model: str | None = None
    """The model name sent to an OpenAI-compatible server."""
    api_key_env: str | None = None
    n_ctx: int = 4096
    threads: int | None = None
    n_batch: int = 512
    timeout_s: float = 120.0
    retries: int = 3
    responses: tuple[Mapping[str, Any], ...] = ()
    """Scripted provider rules, in order (``{id|match, output|outputs}``)."""
    default_response: str | None = None
    label: str = ""
    """How the spec was written, for messages (``default``, a path, a URL)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"provider": self.kind, "label": self.label}
        if self.kind == "gguf":
            out |= {
                "path": self.path,
                "n_ctx": self.n_ctx,
                "threads": self.threads,
                "n_batch": self.n_batch,
            }
        elif self.kind == "openai":
            out |= {"base_url": self.base_url, "model": self.model}
        return out


@dataclass(frozen=True, slots=True)
class ModelIdentity:
    """What a result was produced by: enough to tell two models apart byte for byte."""

    kind: str
    name: str
    sha256: str | None = None
    size: int | None = None
    file: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def key(self) -> str:
        """A string that changes whenever the model could answer differently."""
        if self.sha256:
            return f"{self.kind}:{self.sha256}"
        extra = ",".join(f"{k}={self.details[k]}" for k in sorted(self.details))
        return f"{self.kind}:{self.name}:{extra}"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "file": self.file,
            "size": self.size,
            "sha256": self.sha256,
            **({"details": dict(self.details)} if self.details else {}),
        }


@dataclass(frozen=True, slots=True)
class Request:
    """One call to a model."""

    messages: tuple[Message, ...]
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    json_schema: Mapping[str, Any] | None = None
    """Constrain the reply to JSON that matches this schema."""
    choices: tuple[str, ...] | None = None
    """Constrain the reply to exactly one of these strings."""
    trial: int = 0
    """Part of the cache key, so repeated trials never collapse into one answer."""
    test_id: str = ""
    """Not sent to the model; lets the scripted provider key its answers."""
    arm: str = ""
    """Not sent to the model; the arm (on, off, routed) for the scripted provider."""
    purpose: str = "generate"
    """generate | judge | trigger | overfit; for stats and scheduling."""


@dataclass(frozen=True, slots=True)
class Completion:
    """A model's reply and what it cost."""

    text: str
    finish_reason: str = "stop"
    """``stop``, or ``length`` when max_tokens cut the reply short."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cached: bool = False
    choice_scores: Mapping[str, float] | None = None
    """Per-option log-probability scores of a constrained choice, when known."""
    tokens_evaluated: int = 0
    """Prompt tokens actually evaluated (prompt tokens minus those reused from the KV cache)."""

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"

    @property
    def tokens_per_s(self) -> float:
        if self.latency_ms <= 0:
            return 0.0
        return self.completion_tokens / (self.latency_ms / 1000.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_ms": round(self.latency_ms, 3),
            "tokens_per_s": round(self.tokens_per_s, 2),
            "cached": self.cached,
            "tokens_evaluated": self.tokens_evaluated,
        }


@runtime_checkable
class Provider(Protocol):
    """A model that answers requests."""

    max_concurrency: int
    """How many calls may run at once (1 for an in-process model)."""

    def identity(self) -> ModelIdentity: ...

    def complete(self, request: Request) -> Completion:
        """Answer ``request`` or raise ProviderError; a truncated reply has finish_reason 'length'."""
        ...

    def cache_salt(self, request: Request) -> str:
        """Extra cache-key material beyond the request (the scripted provider keys by test)."""
        ...

    def close(self) -> None: ...
