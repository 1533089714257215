"""Build the model under test and the judge, through the response cache."""

from __future__ import annotations

from dataclasses import replace

from skilleval.api import Judge
from skilleval.engine.base import Provider
from skilleval.engine.cache import CachingProvider, open_cache
from skilleval.engine.factory import check_model, create_provider
from skilleval.judge import JudgeClient
from skilleval.runner.options import RunOptions
from skilleval.suite.model import Suite


def build_provider(suite: Suite, options: RunOptions) -> Provider:
    if options.provider is not None:
        return options.provider
    inner = create_provider(suite.model, home=options.home, jobs=options.jobs)
    check_model(inner, suite.model)
    cache = open_cache(options.home / "cache.db", options.warn) if options.use_cache else None
    return CachingProvider(inner, cache, options.warn)


def build_judge(
    suite: Suite, options: RunOptions, generator: Provider, *, force: bool = False
) -> Judge | None:
    """The grader for model-tier assertions; the generator's model unless ``judge:`` is set."""
    if not force and not any(a.tier == "model" for t in suite.tests for a in t.every_assert):
        return None
    if options.judge_provider is not None:
        return JudgeClient(options.judge_provider, seed=suite.decoding.seed)
    if suite.judge is None or suite.judge == suite.model:
        return JudgeClient(generator, seed=suite.decoding.seed)
    options_for_judge = RunOptions(
        home=options.home, jobs=options.jobs, use_cache=options.use_cache, warn=options.warn
    )
    return JudgeClient(
        build_provider(replace(suite, model=suite.judge), options_for_judge),
        seed=suite.decoding.seed,
    )


def separate_judge(suite: Suite, judge: Judge | None) -> bool:
    """Whether grading can overlap generation: the judge is a model of its own."""
    return judge is not None and suite.judge is not None and suite.judge != suite.model
