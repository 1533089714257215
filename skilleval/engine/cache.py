"""Content-addressed response cache: the same request to the same model bytes is answered once.

The key is a SHA-256 over everything that can change a reply (see :func:`cache_key`). Entries
live in one SQLite file in WAL mode with a busy timeout, so two runs may read and write the
same cache at once. Only usable replies are stored: errors are raised before anything is
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
from collections.abc import Callable, Sequence

from skilleval.engine.base import (
    Checked,
    Completion,
    Embedder,
    ModelIdentity,
    Provider,
    Request,
    clean_reply,
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
        self.calls = 0
        self.hits = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.tokens_evaluated = 0
        self._identity: ModelIdentity | None = None
        self._lock = threading.Lock()

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
        key = None
        cache = self.cache
        if cache is not None:
            key = self.key(request)
            try:
                hit = cache.get(key)
            except CacheError as exc:
                self._set_aside(cache, exc)
                hit = None
            if hit is not None:
                with self._lock:
                    self.hits += 1
                return hit
        with self._lock:
            self.calls += 1
        # The built-in providers clean their replies; a plugin's is cleaned here.
        completion = clean_reply(self.inner.complete(request))
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
