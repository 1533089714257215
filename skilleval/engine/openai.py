"""A provider for any OpenAI-compatible ``/v1/chat/completions`` server.

Works with vLLM, the llama.cpp server, llama-cpp-python's server and the OpenAI API. One
:class:`httpx.Client` is shared by every thread the runner starts, so calls run concurrently up
to ``jobs``. Every failure becomes a one-line :class:`~skilleval.errors.ProviderError`.

Structured output is sent as OpenAI's ``{"type": "json_schema", ...}`` response format. Servers
that only know ``{"type": "json_object", "schema": ...}`` (llama-cpp-python) reject that form;
in ``auto`` mode the provider then switches to the ``json_object`` form for the rest of the run.
Replies are validated against the schema either way. Reading a reply and wording a failure
are in :mod:`skilleval.engine.openai_reply`, the wire format in
:mod:`skilleval.engine.openai_wire`.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import httpx

from skilleval.engine.base import Completion, ModelIdentity, Request
from skilleval.engine.openai_provider import OpenAIConfig
from skilleval.engine.openai_reply import client_error, gave_up, read_completion, unreachable
from skilleval.engine.openai_wire import (
    chat_completions_url,
    choice_schema,
    embedding_vectors,
    error_detail,
    one_line,
    rejects_field,
    rejects_json_schema,
    retry_after_s,
    schema_name,
)
from skilleval.errors import CannotEmbed, ProviderError, ServerUnreachable
from skilleval.version import __version__

LOCAL_CONNECT_S = 2.0
"""How long a server on this machine may take to accept a connection before a run starts."""

__all__ = ["OpenAIProvider", "ResponseFormatStyle", "chat_completions_url"]

ResponseFormatStyle = Literal["auto", "json_schema", "json_object"]

_BACKOFF_CAP_S = 10.0
_RETRY_AFTER_CAP_S = 30.0


class OpenAIProvider:
    """Calls an OpenAI-compatible chat-completions server.

    Args:
        spec: The ``model:`` settings: ``base_url``, ``model``, ``api_key_env``,
            ``timeout_s`` (per network operation) and ``retries`` (extra attempts after the
            first).
        jobs: How many calls may be in flight at once; also the connection-pool size.
        transport: An httpx transport to use instead of the network (tests, proxies).
        response_format: How a JSON schema is sent. ``json_schema`` is OpenAI's form,
            ``json_object`` is ``{"type": "json_object", "schema": ...}``; ``auto`` starts with
            ``json_schema`` and switches for good when the server rejects it.
        backoff_s: The first retry delay; it doubles per attempt, capped at 10 s, with a jitter
            factor in [0.5, 1] drawn from an RNG seeded with 0.

    Raises:
        ProviderError: ``base_url`` or ``model`` is missing or invalid, or ``api_key_env``
            names an unset environment variable.
    """

    def __init__(
        self,
        spec: OpenAIConfig,
        *,
        jobs: int = 4,
        transport: httpx.BaseTransport | None = None,
        response_format: ResponseFormatStyle = "auto",
        backoff_s: float = 0.5,
    ) -> None:
        if not spec.base_url:
            raise ProviderError("provider openai needs base_url (e.g. http://127.0.0.1:8000/v1)")
        if not spec.model:
            raise ProviderError(
                "provider openai needs model: the name the server serves (see GET /v1/models)"
            )
        self._spec = spec
        self._model = spec.model
        self._url = chat_completions_url(spec.base_url)
        self._base_url = self._url.removesuffix("/chat/completions")
        self.max_concurrency = max(1, jobs)
        self._auto_format = response_format == "auto"
        self._format: Literal["json_schema", "json_object"] = (
            "json_object" if response_format == "json_object" else "json_schema"
        )
        self._backoff_s = max(0.0, backoff_s)
        self._ask_no_prompt_cache = spec.cache_prompt is None
        """Deterministic requests carry ``cache_prompt: false`` until a server refuses it."""
        # Jitter spreads retries from concurrent workers; seeding keeps a run reproducible.
        self._rng = random.Random(0)
        self._lock = threading.Lock()

        headers = {"User-Agent": f"skilleval/{__version__}"}
        if spec.api_key_env:
            key = os.environ.get(spec.api_key_env)
            if key is None:
                raise ProviderError(f"environment variable {spec.api_key_env} is not set")
            if not key.strip():
                raise ProviderError(f"environment variable {spec.api_key_env} is empty")
            headers["Authorization"] = f"Bearer {key.strip()}"
        self._transport = transport
        self._client = httpx.Client(
            headers=headers,
            # Waiting for a free pooled connection is queueing, not a server hang.
            timeout=httpx.Timeout(spec.timeout_s, pool=None),
            limits=httpx.Limits(
                max_connections=self.max_concurrency,
                max_keepalive_connections=self.max_concurrency,
            ),
            transport=transport,
        )

    @property
    def url(self) -> str:
        """The endpoint requests are posted to."""
        return self._url

    @property
    def response_format_style(self) -> Literal["json_schema", "json_object"]:
        """The response-format form currently sent with a schema."""
        return self._format

    def check(self) -> None:
        """Before a run: a server on this machine must accept a connection, or every test
        would be the same error. A remote server is not probed (its failures stay per call).

        Raises:
            ServerUnreachable: Nothing listens at a loopback ``base_url``.
        """
        if self._transport is not None:
            return
        url = httpx.URL(self._base_url)
        host = url.host
        if host not in ("localhost", "::1") and not host.startswith("127."):
            return
        import socket  # lazy: start-up time

        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            with socket.create_connection((host, port), timeout=LOCAL_CONNECT_S):
                return
        except OSError as exc:
            reason = exc.strerror or str(exc) or type(exc).__name__
        raise ServerUnreachable(
            f"cannot reach the model server at {self._base_url}: {reason.lower()}; "
            "start the server (`ollama serve`, LM Studio's server) or fix base_url"
        )

    def identity(self) -> ModelIdentity:
        """Name the model by server and model name; no network call."""
        return ModelIdentity(kind="openai", name=self._model, details={"base_url": self._base_url})

    def cache_salt(self, request: Request) -> str:
        """Nothing beyond the request and identity affects the answer."""
        return ""

    def close(self) -> None:
        """Close the shared connection pool."""
        self._client.close()

    def __enter__(self) -> OpenAIProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def complete(self, request: Request) -> Completion:
        """Send ``request`` and return the reply.

        A reply cut by ``max_tokens`` comes back with ``finish_reason="length"`` and is not
        parsed or validated. A constrained choice returns the chosen option as ``text``.

        Args:
            request: The messages and decoding settings.

        Returns:
            The reply, its token usage and the latency of the successful attempt.

        Raises:
            ProviderError: The server could not be reached, kept failing, rejected the request,
                or sent a reply that breaks the requested constraint.
        """
        schema = choice_schema(request.choices) if request.choices else request.json_schema
        style = self._format
        may_fall_back = schema is not None and self._auto_format and style == "json_schema"
        payload = self._payload(request, schema, style)
        response, latency_ms = self._post(payload, may_fall_back)
        if (
            self._spec.cache_prompt is None
            and "cache_prompt" in payload
            and rejects_field(response, "cache_prompt")
        ):
            # OpenAI refuses fields it does not know; ask again without it, and never again.
            with self._lock:
                self._ask_no_prompt_cache = False
            del payload["cache_prompt"]
            response, latency_ms = self._post(payload, may_fall_back)
        refused_logprobs = "logprobs" in payload and rejects_field(response, "logprobs")
        if refused_logprobs:
            # A server that will not give them answers without; `perplexity` says why.
            del payload["logprobs"], payload["top_logprobs"]
            response, latency_ms = self._post(payload, may_fall_back)
        if may_fall_back and rejects_json_schema(response):
            with self._lock:
                self._format = "json_object"
            retry = self._payload(request, schema, "json_object")
            if refused_logprobs:
                del retry["logprobs"], retry["top_logprobs"]
            response, latency_ms = self._post(retry, False)
        if response.status_code >= 400:
            raise ProviderError(
                client_error(self._url, self._model, self._spec.api_key_env, response)
            )
        return read_completion(self._url, request, schema, response, latency_ms)

    def _payload(
        self,
        request: Request,
        schema: Mapping[str, Any] | None,
        style: Literal["json_schema", "json_object"],
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self._model,
            "messages": [m.to_json() for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "seed": request.seed,
            "stream": False,
        }
        if request.logprobs:
            # For `perplexity`: each generated token's log-probability, read from the reply
            # (llama-cpp-python's server gives them only with top_logprobs set).
            payload["logprobs"] = True
            payload["top_logprobs"] = 1
        if self._spec.cache_prompt is not None:
            payload["cache_prompt"] = self._spec.cache_prompt
        elif request.temperature == 0 and self._ask_no_prompt_cache:
            # llama.cpp's server reuses the KV state of a matching prompt prefix by default;
            # the logits then come from another batch shape, and a greedy reply can flip at a
            # near-tie. Servers that do not know the field ignore it (vLLM, llama-cpp-python).
            payload["cache_prompt"] = False
        if schema is not None:
            if style == "json_schema":
                payload["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": schema_name(schema, request),
                        "schema": dict(schema),
                        "strict": True,
                    },
                }
            else:
                payload["response_format"] = {"type": "json_object", "schema": dict(schema)}
        return payload

    def _post(
        self, payload: dict[str, Any], watch_format: bool, url: str | None = None
    ) -> tuple[httpx.Response, float]:
        """POST with retries; returns the first non-retryable response and its latency.

        ``url`` defaults to the chat-completions endpoint.
        """
        url = url or self._url
        failures: Counter[str] = Counter()
        last_detail = ""
        retry_after: float | None = None
        for attempt in range(self._spec.retries + 1):
            if attempt:
                time.sleep(self._delay(attempt - 1, retry_after))
            retry_after = None
            start = time.perf_counter()
            try:
                response = self._client.post(url, json=payload)
            except httpx.TimeoutException:
                failures["timeout"] += 1
                continue
            except httpx.ConnectError as exc:
                raise ProviderError(unreachable(self._url, exc)) from None
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                failures["connection reset"] += 1
                last_detail = one_line(str(exc) or type(exc).__name__)
                continue
            except httpx.TransportError as exc:
                raise ProviderError(
                    f"{url}: request failed: {one_line(str(exc) or type(exc).__name__)}"
                ) from None
            latency_ms = (time.perf_counter() - start) * 1000.0
            status = response.status_code
            # llama-cpp-python reports a rejected response_format as HTTP 500; retrying is futile.
            if watch_format and rejects_json_schema(response):
                return response, latency_ms
            if status == 429 or status >= 500:
                failures[f"HTTP {status}"] += 1
                last_detail = error_detail(response)
                retry_after = retry_after_s(response)
                continue
            return response, latency_ms
        raise ProviderError(gave_up(self._url, self._spec.timeout_s, failures, last_detail))

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of ``texts`` from the server's ``/embeddings`` endpoint, with this model.

        Raises:
            CannotEmbed: The server has no embeddings endpoint (HTTP 404 or 501).
            ProviderError: The server failed or sent something that is not one vector per text.
        """
        url = f"{self._base_url}/embeddings"
        if not texts:
            return []
        response, _ = self._post({"model": self._model, "input": list(texts)}, False, url)
        status = response.status_code
        if status in (404, 501):
            raise CannotEmbed(f"{url}: HTTP {status}; this server does not serve embeddings")
        if status >= 400:
            detail = error_detail(response)
            raise ProviderError(f"{url}: HTTP {status}" + (f": {detail}" if detail else ""))
        return embedding_vectors(response, url, len(texts))

    def embed_salt(self) -> str:
        """Nothing beyond the identity changes a vector."""
        return ""

    def _delay(self, retry: int, retry_after: float | None) -> float:
        with self._lock:
            jitter = self._rng.uniform(0.5, 1.0)
        delay = min(_BACKOFF_CAP_S, self._backoff_s * 2.0**retry) * jitter
        if retry_after is not None:
            delay = max(delay, min(retry_after, _RETRY_AFTER_CAP_S))
        return delay
