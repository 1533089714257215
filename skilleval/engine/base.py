"""What every model provider speaks: requests in, completions out.

A provider turns a :class:`Request` into a :class:`Completion` or raises
:class:`~skilleval.errors.ProviderError`. Providers know nothing about suites, tests or
assertions; the runner builds requests and the cache wraps providers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from skilleval.errors import ProviderError
from skilleval.suite.model_config import Decoding, ModelSpec
from skilleval.util.frozen import frozen
from skilleval.util.scrub import replace_surrogates

__all__ = [
    "Batched",
    "Checked",
    "Completion",
    "Decoding",
    "Embedder",
    "Message",
    "ModelIdentity",
    "ModelSpec",
    "Provider",
    "ProviderContext",
    "Request",
    "clean_reply",
]


@frozen
class Message:
    """One chat message."""

    role: str
    content: str

    def to_json(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@frozen
class ProviderContext:
    """What a provider's factory gets besides its config, when a run builds it."""

    home: Path
    """skilleval's home folder; a provider may keep files under it (the GGUF memo)."""
    jobs: int = 1
    """How many calls the run may make at once (``--jobs``)."""


@frozen
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


@frozen
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
    vars: Mapping[str, Any] | None = None
    """Not sent to the model; the test's vars, for a provider that runs the user's own code
    (promptfoo's ``context.vars``). Such a provider puts them in its ``cache_salt``."""
    logprobs: bool = False
    """Record each generated token's log-probability (``perplexity`` checks need them); a
    provider that cannot leaves :attr:`Completion.token_logprobs` None."""


@frozen
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
    replaced: int = 0
    """Lone surrogates in the reply that were replaced with U+FFFD (see :func:`clean_reply`)."""
    token_logprobs: tuple[float, ...] | None = None
    """Each generated token's natural-log probability under the model, when the request
    asked for them and the provider records them; None otherwise."""

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
            # Only when it happened, so that results of clean replies keep their shape.
            **({"replaced_chars": self.replaced} if self.replaced else {}),
        }


def clean_reply(completion: Completion) -> Completion:
    """``completion`` with lone surrogates in its text replaced, and how many counted.

    A reply is where a model's text enters skilleval. A lone surrogate (a JSON ``"\\ud800"``
    from a server, a scripted reply written with that escape) cannot be encoded as UTF-8, so
    it would break the cache and ``results.jsonl``; every provider's reply passes through here.
    """
    text, count = replace_surrogates(completion.text)
    scores = completion.choice_scores
    if scores is not None and any(not k.isascii() for k in scores):
        scores = {replace_surrogates(k)[0]: v for k, v in scores.items()}
    if not count and scores is completion.choice_scores:
        return completion
    return replace(
        completion, text=text, choice_scores=scores, replaced=completion.replaced + count
    )


@runtime_checkable
class Provider(Protocol):
    """A model that answers requests."""

    max_concurrency: int
    """How many calls may run at once (1 for an in-process model that does not batch)."""

    def identity(self) -> ModelIdentity: ...

    def complete(self, request: Request) -> Completion:
        """Answer ``request`` or raise ProviderError; a truncated reply has finish_reason 'length'."""
        ...

    def cache_salt(self, request: Request) -> str:
        """Extra cache-key material beyond the request (the scripted provider keys by test)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Checked(Protocol):
    """A provider that can tell, before a run starts, whether its model can load at all."""

    def check(self) -> None:
        """Raise ProviderError if the model cannot be loaded (a missing file, not a model,
        a runtime that is not installed); cheap, and loads nothing."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """A provider that can also turn texts into vectors (``similar``, ``answer-relevance``).

    Optional: a provider without ``embed`` cannot grade the embedding types, and they say so
    in an error verdict. Vectors of the same text from the same model are identical from run
    to run; how they are compared is the assertion's business.
    """

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order, all of the same length.

        Raises:
            ProviderError: The model cannot embed, or a text does not fit its context.
        """
        ...

    def embed_salt(self) -> str:
        """Cache-key material beyond the identity that can change a vector (runtime version)."""
        ...


@runtime_checkable
class Batched(Protocol):
    """A provider that answers several requests at once (batched decoding)."""

    batch_width: int
    """How many requests it decodes together; 1 means it gains nothing from batches. A
    provider whose ``max_concurrency`` is at least its width also batches calls to
    :meth:`~Provider.complete` that arrive at once from several threads (continuous
    batching), and is fed that way."""

    def complete_batch(self, requests: Sequence[Request]) -> list[Completion | ProviderError]:
        """One completion, or the error that replaced it, per request, in order."""
        ...


def batch_width(provider: object) -> int:
    """How many requests ``provider`` decodes together (1 for a provider without batches)."""
    if isinstance(provider, Batched):
        return max(1, int(provider.batch_width))
    return 1


def joins_calls(provider: object) -> bool:
    """Whether ``provider`` batches concurrent :meth:`~Provider.complete` calls: it decodes
    several requests together and accepts at least that many calls at once."""
    lanes = batch_width(provider)
    return lanes > 1 and int(getattr(provider, "max_concurrency", 1)) >= lanes


def complete_all(
    provider: Provider, requests: Sequence[Request]
) -> list[Completion | ProviderError]:
    """Answer ``requests`` in one batch when ``provider`` batches, else one at a time."""
    if isinstance(provider, Batched) and provider.batch_width > 1 and len(requests) > 1:
        return provider.complete_batch(requests)
    out: list[Completion | ProviderError] = []
    for request in requests:
        try:
            out.append(provider.complete(request))
        except ProviderError as exc:
            out.append(exc)
    return out
