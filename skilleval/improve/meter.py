"""What an improvement costs: the calls that reached a model, counted under the cache.

:class:`Metered` sits between the response cache and the model, so a reply served from the
cache is not counted and every call the model answered is, whoever made it: the runs'
generation, routing and grading, the proposer and the overfitting judge (the judge's client
rebuilds its cache wrapper around the model it finds under the cache, and finds this).
Anything else a provider offers (batching, embedding, engine figures) passes through.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from skilleval.engine.base import Completion, ModelIdentity, Provider, Request, complete_all
from skilleval.errors import ProviderError


class Metered:
    """A provider that counts the calls and tokens of the model it wraps."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.max_concurrency = inner.max_concurrency
        self.batch_width = int(getattr(inner, "batch_width", 1))
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self._lock = threading.Lock()

    def _count(self, answers: Sequence[Completion | ProviderError]) -> None:
        with self._lock:
            self.calls += len(answers)
            for answer in answers:
                if isinstance(answer, Completion):
                    self.prompt_tokens += answer.prompt_tokens
                    self.completion_tokens += answer.completion_tokens

    def identity(self) -> ModelIdentity:
        return self.inner.identity()

    def cache_salt(self, request: Request) -> str:
        return self.inner.cache_salt(request)

    def complete(self, request: Request) -> Completion:
        try:
            answer = self.inner.complete(request)
        except ProviderError as exc:
            self._count([exc])
            raise
        self._count([answer])
        return answer

    def complete_batch(self, requests: Sequence[Request]) -> list[Completion | ProviderError]:
        answers = complete_all(self.inner, requests)
        self._count(answers)
        return answers

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        # Only reached for what this class does not define: embedding, engine figures, check.
        return getattr(self.inner, name)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {
                "model_calls": self.calls,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
            }
