"""Build the model under test and the judge, through the response cache."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from skilleval.api import Judge
from skilleval.engine.base import Completion, ModelIdentity, Provider, Request
from skilleval.engine.cache import CachingProvider, open_cache
from skilleval.engine.factory import check_model, create_provider
from skilleval.judge import JudgeClient
from skilleval.judge.choice import scores_verdicts
from skilleval.runner.options import RunOptions
from skilleval.suite.model import Suite


def build_provider(suite: Suite, options: RunOptions) -> Provider:
    if options.provider is not None:
        return options.provider
    inner = create_provider(suite.model, home=options.home, jobs=options.jobs)
    check_model(inner, suite.model)
    if suite.delay_ms:
        inner = Paced(inner, suite.delay_ms / 1000)
    cache = open_cache(options.home / "cache.db", options.warn) if options.use_cache else None
    return CachingProvider(inner, cache, options.warn)


def build_judge(
    suite: Suite, options: RunOptions, generator: Provider, *, force: bool = False
) -> Judge | None:
    """The grader for model-tier assertions; the generator's model unless ``judge:`` is set."""
    if not force and not any(a.tier == "model" for t in suite.tests for a in t.every_assert):
        return None
    if options.judge_provider is not None:
        # Watch and improve hand over the provider of the suite's `judge:`, kept loaded.
        scores = suite.judge is not None and scores_verdicts(suite.judge.provider.capabilities)
        return JudgeClient(options.judge_provider, seed=suite.decoding.seed, scores=scores)
    if suite.judge is None or suite.judge == suite.model:
        capabilities = options.capabilities or suite.model.provider.capabilities
        return JudgeClient(
            generator, seed=suite.decoding.seed, scores=scores_verdicts(capabilities)
        )
    options_for_judge = RunOptions(
        home=options.home, jobs=options.jobs, use_cache=options.use_cache, warn=options.warn
    )
    return JudgeClient(
        build_provider(replace(suite, model=suite.judge), options_for_judge),
        seed=suite.decoding.seed,
        scores=scores_verdicts(suite.judge.provider.capabilities),
    )


def separate_judge(suite: Suite, judge: Judge | None) -> bool:
    """Whether grading can overlap generation: the judge is a model of its own."""
    return judge is not None and suite.judge is not None and suite.judge != suite.model


class Paced:
    """A provider that waits after each call (``evaluateOptions.delay``), one call at a time.

    It sits under the cache, so a cached reply costs no wait.
    """

    max_concurrency = 1

    def __init__(self, inner: Provider, seconds: float) -> None:
        self._inner = inner
        self._seconds = seconds

    def complete(self, request: Request) -> Completion:
        try:
            return self._inner.complete(request)
        finally:
            time.sleep(self._seconds)

    def identity(self) -> ModelIdentity:
        return self._inner.identity()

    def cache_salt(self, request: Request) -> str:
        return self._inner.cache_salt(request)

    def close(self) -> None:
        self._inner.close()

    def __getattr__(self, name: str) -> Any:
        # Anything else a provider offers (tokenising, embeddings …) is the inner one's.
        return getattr(self._inner, name)
