"""The embedded model as a judge that scores choices: properties of its verdict, never its text.

The verdict of a free-text rubric is one choice request over the score scale: the engine
samples no token for it (its own count of generated tokens does not move), the five
log-probabilities come back, and the verdict's score lies between 1 and 5.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from skilleval.api import Check
from skilleval.assertions.builtin.model import llm_rubric
from skilleval.engine.cache import CachingProvider
from skilleval.engine.factory import create_provider
from skilleval.engine.llama import gguf_spec
from skilleval.judge import JudgeClient
from skilleval.judge.choice import scores_verdicts

pytestmark = pytest.mark.model


def test_the_embedded_judge_reads_a_rubric_verdict_from_choice_scores(tmp_path: Path) -> None:
    spec = gguf_spec()
    assert scores_verdicts(spec.provider.capabilities)
    provider = create_provider(spec, home=tmp_path)
    judge = JudgeClient(CachingProvider(provider, None), seed=0, scores=True, reasons=False)
    try:
        assert judge.describe()["rubric_verdict"] == "scored-expectation"
        generated_before, _ = provider.engine_busy()
        check = Check(
            output="The capital of France is Paris.",
            value="The answer names Paris as the capital of France.",
            prompt="What is the capital of France?",
            judge=judge,
        )
        verdict = llm_rubric(check)
        generated_after, _ = provider.engine_busy()
    finally:
        judge.close()
    assert verdict.error is None, verdict.error
    assert generated_after == generated_before  # the verdict sampled nothing
    assert judge.stats()["calls"] == 1
    details = verdict.details
    expected = details["judge_expected_score"]
    assert 1.0 <= expected <= 5.0
    assert details["judge_score"] in (1, 2, 3, 4, 5)
    assert math.isclose(sum(details["judge_probabilities"].values()), 1.0, abs_tol=1e-4)
    assert set(details["judge_reply"]["scores"]) == {"1", "2", "3", "4", "5"}
    assert verdict.score is not None
    assert math.isclose(verdict.score, (expected - 1) / 4, abs_tol=1e-5)  # details round
    assert verdict.passed is (verdict.score >= 0.5)
    assert "reason" not in details["judge_reply"]  # this judge reads no reasons
