"""The embedded model's side-by-side fitness ships with skilleval, as its grading fitness
does, so a first run that compares arms on it does not spend 146 judge calls measuring."""

from __future__ import annotations

from pathlib import Path

import pytest

from skilleval.engine.cache import CachingProvider
from skilleval.engine.factory import create_provider
from skilleval.engine.llama import gguf_spec
from skilleval.judge import JudgeClient
from skilleval.runner import judgefit
from skilleval.runner.sidebyside_fit import memo_key_side_by_side

pytestmark = pytest.mark.model


def test_the_embedded_judge_s_side_by_side_measurement_ships(tmp_path: Path) -> None:
    """If this fails, the fitness set, a judge prompt or the side-by-side prompt changed:
    measure again with `skilleval judge-check --side-by-side` on the whole set and copy its
    entry from the home's judge-fitness.json into suites/judge-fitness.measured.json."""
    judge = JudgeClient(CachingProvider(create_provider(gguf_spec(), home=tmp_path), None), seed=0)
    try:
        key = memo_key_side_by_side(judge, 0)
    finally:
        judge.close()
    assert key is not None
    shipped = judgefit.recall(tmp_path / "empty-home", key)
    assert shipped is not None
    assert shipped.pairs == 73
    assert shipped.reason.startswith("unqualified side-by-side judge: preference for the good")
