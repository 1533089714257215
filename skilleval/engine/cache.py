"""Content-addressed response cache: the same request to the same model bytes is answered once.

The key is a SHA-256 over everything that can change a reply (see :func:`cache_key`). Entries
live in one SQLite file in WAL mode with a busy timeout, so two runs may read and write the
same cache at once. Identical requests made at once (two arms whose replies agree, graded by
the same rubric) reach the model once; the others wait for that answer and count as cache
hits. Only usable replies are stored: errors are raised before anything is
written, and a constrained reply (JSON Schema or choice) cut at ``max_tokens`` is never stored,
because it is an error. A free-text reply that reached ``max_tokens`` is a normal, reproducible
outcome of the budget, so it is stored like any other.

This module wraps a provider with the cache; the key is made in
:mod:`~skilleval.engine.cachekey` and the SQLite file is kept by
:mod:`~skilleval.engine.cachestore`.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from skilleval.engine.base import (
    Checked,
    Completion,
    Embedder,
    ModelIdentity,
    Provider,
    Request,
    clean_reply,
    complete_all,
)
from skilleval.engine.cachekey import KEY_FORMAT, cache_key, embedding_key
from skilleval.engine.cachestore import BUSY_TIMEOUT_MS, CacheInfo, ResponseCache, open_cache
from skilleval.errors import CacheError, CannotEmbed, ProviderError

__all__ = [
    "BUSY_TIMEOUT_MS",
    "KEY_FORMAT",
    "CacheInfo",
    "CachingProvider",
    "ResponseCache",
    "cache_key",
    "open_cache",
]


class CachingProvider:
    """A provider wrapped with a response cache and call counters.

    A cache that fails during the run (the disk fills up, the file is damaged) is warned
    about once and set aside; the run goes on uncached, since every reply is still right.

    Args:
        inner: The provider that really answers.
        cache: The cache, or None for ``--no-cache`` (every request reaches ``inner``).
        warn: Where to say that the cache was set aside.

    Attributes:
        calls: Requests that reached the inner provider (including ones that failed).
        hits: Requests answered from the cache.
        prompt_tokens: Prompt tokens of the inner provider's replies.
        completion_tokens: Completion tokens of the inner provider's replies.
        tokens_evaluated: Prompt tokens the inner provider actually evaluated.
    """

    def __init__(
        self,
        inner: Provider,
        cache: ResponseCache | None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.inner = inner
        self.cache = cache
        self.warn = warn
        self.max_concurrency = inner.max_concurrency
        self.batch_width = int(getattr(inner, "batch_width", 1))
        self.calls = 0
        self.hits = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.tokens_evaluated = 0
        self._identity: ModelIdentity | None = None
        self._lock = threading.Lock()
        self._in_flight = 0
        self._busy_since = 0.0
        self._busy_s = 0.0
        self._flights: dict[str, _Flight] = {}
        """Requests in the air, by key: an identical request waits for the answer."""

    def identity(self) -> ModelIdentity:
        """The inner provider's identity, computed once."""
        if self._identity is None:
            self._identity = self.inner.identity()
        return self._identity

    def cache_salt(self, request: Request) -> str:
        return self.inner.cache_salt(request)

    def check(self) -> None:
        """The inner provider's check, when it has one (see :class:`Checked`)."""
        if isinstance(self.inner, Checked):
            self.inner.check()

    def key(self, request: Request) -> str:
        """The cache key ``request`` has with this provider."""
        return cache_key(self.identity(), request, self.inner.cache_salt(request))

    def complete(self, request: Request) -> Completion:
        """Answer from the cache, or ask the inner provider and store a complete reply.

        Raises:
            ProviderError: From the inner provider; nothing is stored then.
        """
        key, hit = self._lookup(request)
        if hit is not None:
            return hit
        flight = self._board(key)
        if flight is not None and not flight.leads:
            return self._follow(flight, request)
        answer: Completion | ProviderError | None = None
        try:
            with self._lock:
                self.calls += 1
            self._enter()
            try:
                reply = self.inner.complete(request)
            finally:
                self._leave()
            # The built-in providers clean their replies; a plugin's is cleaned here.
            answer = self._store(request, key, clean_reply(reply))
            return answer
        except ProviderError as exc:
            answer = exc
            raise
        finally:
            if flight is not None:
                self._land(key, flight, answer)

    def complete_batch(self, requests: Sequence[Request]) -> list[Completion | ProviderError]:
        """:meth:`complete` for several requests; those not in the cache go to the inner
        provider together, in their order, as one batch."""
        out: list[Completion | ProviderError | None] = [None] * len(requests)
        misses: list[tuple[int, str | None]] = []
        twins: list[tuple[int, int]] = []
        """(request, the earlier miss with the same key): asked once, answered twice."""
        first: dict[str, int] = {}
        for i, request in enumerate(requests):
            key, hit = self._lookup(request)
            if hit is not None:
                out[i] = hit
            elif key is not None and key in first:
                twins.append((i, first[key]))
            else:
                if key is not None:
                    first[key] = i
                misses.append((i, key))
        if misses:
            with self._lock:
                self.calls += len(misses)
            self._enter()
            try:
                answers = complete_all(self.inner, [requests[i] for i, _ in misses])
            finally:
                self._leave()
            for (i, key), answer in zip(misses, answers, strict=True):
                if isinstance(answer, ProviderError):
                    out[i] = answer
                else:
                    out[i] = self._store(requests[i], key, clean_reply(answer))
        for i, twin in twins:
            out[i] = self._shared(out[twin])
        return [answer for answer in out if answer is not None]

    # -- identical requests at once: one call ------------------------------------------------

    def _board(self, key: str | None) -> _Flight | None:
        """The flight of ``key``: a new one this call leads, or the one already in the air."""
        if key is None:
            return None  # uncached: every request reaches the model
        with self._lock:
            flight = self._flights.get(key)
            if flight is None:
                flight = self._flights[key] = _Flight(leads=True)
                return flight
        return _Flight(leads=False, of=flight)

    def _land(
        self, key: str | None, flight: _Flight, answer: Completion | ProviderError | None
    ) -> None:
        with self._lock:
            if key is not None and self._flights.get(key) is flight:
                del self._flights[key]
        flight.answer = answer
        flight.done.set()

    def _follow(self, flight: _Flight, request: Request) -> Completion:
        """Wait for the identical request in the air, and answer as it was answered (a new
        call if it ended without an answer, interrupted)."""
        leader = flight.of
        assert leader is not None
        leader.done.wait()
        answer = leader.answer
        if answer is None:
            return self.complete(request)
        shared = self._shared(answer)
        if isinstance(shared, ProviderError):
            raise shared
        return shared

    def _shared(self, answer: Completion | ProviderError | None) -> Completion | ProviderError:
        """Another request's answer given to its twin: a cache hit, as the next run has it."""
        if answer is None or isinstance(answer, ProviderError):
            return answer or ProviderError("not answered")
        with self._lock:
            self.hits += 1
        return replace(answer, cached=True, tokens_evaluated=0)

    def _lookup(self, request: Request) -> tuple[str | None, Completion | None]:
        cache = self.cache
        if cache is None:
            return None, None
        key = self.key(request)
        try:
            hit = cache.get(key)
        except CacheError as exc:
            self._set_aside(cache, exc)
            hit = None
        if hit is not None:
            with self._lock:
                self.hits += 1
        return key, hit

    def _store(self, request: Request, key: str | None, completion: Completion) -> Completion:
        with self._lock:
            self.prompt_tokens += completion.prompt_tokens
            self.completion_tokens += completion.completion_tokens
            self.tokens_evaluated += completion.tokens_evaluated
        cache = self.cache
        if cache is not None and key is not None:
            free_text = request.json_schema is None and request.choices is None
            try:
                cache.put(key, completion, model=self.identity().key(), allow_truncated=free_text)
            except CacheError as exc:
                self._set_aside(cache, exc)
        return completion

    def _enter(self) -> None:
        with self._lock:
            if self._in_flight == 0:
                self._busy_since = time.perf_counter()
            self._in_flight += 1

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._busy_s += time.perf_counter() - self._busy_since

    def engine_busy(self) -> tuple[int, float]:
        """Tokens generated and seconds the model was busy. The inner provider's own figure
        when it keeps one (the time it spent decoding); otherwise the time at least one call
        was in flight, so calls made in parallel are not counted twice."""
        own = getattr(self.inner, "engine_busy", None)
        if callable(own):
            tokens, seconds = own()
            return int(tokens), float(seconds)
        with self._lock:
            return self.completion_tokens, self._busy_s

    def engine_info(self) -> dict[str, Any]:
        """The inner provider's engine settings (threads, batch width), when it has any."""
        own = getattr(self.inner, "engine_info", None)
        return dict(own()) if callable(own) else {}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of ``texts``: from the cache, or from the inner provider (and then stored).

        Raises:
            CannotEmbed: The inner provider has no ``embed``.
            ProviderError: From the inner provider, or it returned something that is not one
                finite vector per text.
        """
        inner = self.inner
        if not isinstance(inner, Embedder):
            raise CannotEmbed(f"provider {self.identity().kind} cannot embed")
        cache = self.cache
        keys = [embedding_key(self.identity(), t, inner.embed_salt()) for t in texts]
        found: dict[int, list[float]] = {}
        if cache is not None:
            try:
                for i, key in enumerate(keys):
                    hit = cache.get_vector(key)
                    if hit is not None:
                        found[i] = hit
            except CacheError as exc:
                self._set_aside(cache, exc)
                found = {}
        missing = [i for i in range(len(texts)) if i not in found]
        with self._lock:
            self.hits += len(found)
            self.calls += 1 if missing else 0
        if missing:
            fresh = inner.embed([texts[i] for i in missing])
            _check_vectors(fresh, len(missing))
            found.update(zip(missing, fresh, strict=True))
            cache = self.cache
            if cache is not None:
                try:
                    for i in missing:
                        cache.put_vector(keys[i], found[i], model=self.identity().key())
                except CacheError as exc:
                    self._set_aside(cache, exc)
        return [found[i] for i in range(len(texts))]

    def embed_salt(self) -> str:
        inner = self.inner
        return inner.embed_salt() if isinstance(inner, Embedder) else ""

    def _set_aside(self, cache: ResponseCache, exc: CacheError) -> None:
        """Stop using ``cache`` for this run, and say so once."""
        with self._lock:
            if self.cache is not cache:
                return  # another thread got there first
            self.cache = None
        if self.warn is not None:
            self.warn(f"{exc}; the run goes on without the cache")

    def stats(self) -> dict[str, int]:
        """The counters, for reports."""
        with self._lock:
            return {
                "calls": self.calls,
                "hits": self.hits,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "tokens_evaluated": self.tokens_evaluated,
            }

    def close(self) -> None:
        """Close the inner provider. The cache belongs to the caller and stays open."""
        self.inner.close()


@dataclass(slots=True)
class _Flight:
    """One request in the air: its answer, once it lands."""

    leads: bool
    of: _Flight | None = None
    """The flight a follower waits for."""
    answer: Completion | ProviderError | None = None
    done: threading.Event = field(default_factory=threading.Event)


def _check_vectors(vectors: object, count: int) -> None:
    """Raise unless ``vectors`` is ``count`` finite vectors of one length (a plugin's may not be)."""
    ok = (
        isinstance(vectors, list)
        and len(vectors) == count
        and all(isinstance(v, list) and v for v in vectors)
        and len({len(v) for v in vectors}) <= 1
        and all(
            isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
            for v in vectors
            for x in v
        )
    )
    if not ok:
        raise ProviderError(
            f"the model's embed did not return {count} finite vectors of one length"
        )
