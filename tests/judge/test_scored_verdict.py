"""The scored ``llm-rubric`` verdict: the rule, the reason's place, the fallbacks, the keys.

A fake judge model scores the digits 1..5 with given probabilities and answers a reason
request with a fixed reply, recording every request, so that what the judge asks and what
the assertion concludes can both be checked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeProvider

from skilleval.api import Capabilities, Check, Verdict
from skilleval.assertions.builtin.model import llm_rubric
from skilleval.engine.base import Completion, Request
from skilleval.engine.cache import CachingProvider, ResponseCache
from skilleval.engine.cachekey import cache_key
from skilleval.errors import ProviderError
from skilleval.judge import JudgeClient
from skilleval.judge.choice import SCORE_CHOICES, read_scores, scores_verdicts
from skilleval.judge.scoring import map_score
from skilleval.runner import judgefit
from skilleval.runner.sidebyside_fit import memo_key_side_by_side

LEANS_GOOD = {"1": 0.05, "2": 0.05, "3": 0.1, "4": 0.3, "5": 0.5}  # expectation 4.15
LEANS_BAD = {"1": 0.4, "2": 0.3, "3": 0.1, "4": 0.1, "5": 0.1}  # expectation 2.2
EVEN_SPLIT = {"1": 0.45, "2": 0.0001, "3": 0.0998, "4": 0.0001, "5": 0.45}  # 3.0, likeliest 1


def expectation(table: Mapping[str, float]) -> float:
    total = sum(table.values())
    return sum(int(k) * v / total for k, v in table.items())


class ScoringModel(FakeProvider):
    """Scores the score scale from ``table``; answers schema requests from ``replies``."""

    name = "scoring-judge"

    def __init__(self, table: Mapping[str, float] | None, *replies: Any) -> None:
        super().__init__(replies, default={"reason": "It misses the point."})
        self.table = table

    def reply(self, request: Request) -> Completion:
        if request.choices is not None:
            scores = None
            if self.table is not None:
                scores = {c: math.log(self.table[c]) for c in request.choices}
            return Completion(text=request.choices[-1], choice_scores=scores)
        return super().reply(request)


def rubric(judge: Any, value: Any = "Names Paris.", **kw: Any) -> Verdict:
    check = Check(output="Lyon.", value=value, prompt="Capital of France?", judge=judge, **kw)
    verdict: Verdict = llm_rubric(check)
    return verdict


# --- the verdict ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "threshold", "passed"),
    [
        (LEANS_GOOD, None, True),
        (LEANS_BAD, None, False),
        (EVEN_SPLIT, None, True),  # the expectation, 3.0, maps to 0.5: the default bar
        (LEANS_GOOD, 0.8, False),  # (4.15 - 1) / 4 = 0.7875 is below 0.8
        (LEANS_BAD, 0.0, True),
    ],
)
def test_the_verdict_is_the_expected_score_against_the_threshold(
    table: Mapping[str, float], threshold: float | None, passed: bool
) -> None:
    model = ScoringModel(table)
    verdict = rubric(JudgeClient(model, scores=True), threshold=threshold)
    mapped = map_score(expectation(table))
    assert verdict.error is None
    assert verdict.passed is passed
    assert verdict.score is not None
    assert math.isclose(verdict.score, mapped, abs_tol=1e-9)
    assert verdict.details["verdict"] == "scored-expectation"
    first = model.requests[0]
    assert first.choices == SCORE_CHOICES == ("1", "2", "3", "4", "5")
    assert first.json_schema is None
    assert (first.temperature, first.top_p, first.purpose) == (0.0, 1.0, "judge")


def test_the_likeliest_score_is_recorded_beside_the_expected_one() -> None:
    read = read_scores({c: math.log(p) for c, p in EVEN_SPLIT.items()})
    assert read.likeliest == 1  # 1 and 5 tie: the lower one
    assert math.isclose(read.score, 3.0, abs_tol=1e-3)
    assert math.isclose(sum(read.probabilities.values()), 1.0)
    argmax = read_scores({c: math.log(p) for c, p in LEANS_GOOD.items()}, "argmax")
    assert argmax.score == 5.0


def test_a_passing_verdict_writes_no_reason() -> None:
    model = ScoringModel(LEANS_GOOD)
    verdict = rubric(JudgeClient(model, scores=True))
    assert verdict.passed
    assert [r.choices is not None for r in model.requests] == [True]
    assert "reason" not in verdict.details["judge_reply"]
    assert verdict.reason.startswith("judge passed it, score 4.15/5")


def test_a_failing_verdict_gets_a_reason_written_after_it_and_told_of_it() -> None:
    model = ScoringModel(LEANS_BAD, {"reason": "It names Lyon."})
    verdict = rubric(JudgeClient(model, scores=True))
    assert not verdict.passed
    choice_request, reason_request = model.requests
    assert reason_request.json_schema is not None
    assert list(reason_request.json_schema["properties"]) == ["reason"]
    # The reason's conversation is the verdict's, then the likeliest digit, then the ask.
    assert reason_request.messages[:2] == choice_request.messages
    assert [m.role for m in reason_request.messages[2:]] == ["assistant", "user"]
    assert reason_request.messages[2].content == "1"
    assert "2.2 of 5" in reason_request.messages[3].content
    assert "fails" in reason_request.messages[3].content
    assert verdict.details["judge_reply"]["reason"] == "It names Lyon."
    assert verdict.reason.endswith(": It names Lyon.")


def test_a_judge_that_reads_no_reasons_writes_none_even_for_a_fail() -> None:
    model = ScoringModel(LEANS_BAD)
    verdict = rubric(JudgeClient(model, scores=True, reasons=False))
    assert not verdict.passed
    assert len(model.requests) == 1
    assert verdict.reason == "judge failed it, score 2.2/5 → 0.3"


def test_a_list_rubric_writes_its_checks_with_the_reason_of_a_fail() -> None:
    checks = [{"id": 1, "pass": False, "notes": "no"}, {"id": 2, "pass": True, "notes": "ok"}]
    model = ScoringModel(LEANS_BAD, {"reason": "Half of it.", "checks": checks})
    verdict = rubric(JudgeClient(model, scores=True), value=["Names Paris.", "Is short."])
    assert not verdict.passed
    reason_request = model.requests[1]
    assert reason_request.json_schema is not None
    assert list(reason_request.json_schema["properties"]) == ["reason", "checks"]
    assert [c["pass"] for c in verdict.details["checks"]] == [False, True]
    assert "1/2 items met" in verdict.reason


def test_a_reason_the_judge_cannot_write_leaves_the_verdict_standing() -> None:
    model = ScoringModel(LEANS_BAD, "not json", "still not json")
    verdict = rubric(JudgeClient(model, scores=True))
    assert verdict.error is None
    assert not verdict.passed
    assert "reason_error" in verdict.details


def test_a_score_that_is_not_finite_is_an_impossible_reply() -> None:
    table = {**LEANS_GOOD, "3": 0.0}  # log(0) is -inf
    model = ScoringModel(None)
    model.reply = lambda request: Completion(  # type: ignore[method-assign]
        text="5", choice_scores={c: (-math.inf if table[c] == 0 else 0.0) for c in SCORE_CHOICES}
    )
    verdict = rubric(JudgeClient(model, scores=True))
    assert verdict.error is not None
    assert verdict.details["error_kind"] == "impossible"


def test_a_model_failure_on_the_verdict_is_an_error_verdict() -> None:
    model = ScoringModel(None, ProviderError("the model went away"))
    model.reply = FakeProvider.reply.__get__(model)  # type: ignore[method-assign]
    verdict = rubric(JudgeClient(model, scores=True))
    assert verdict.error is not None
    assert verdict.details["error_kind"] == "provider"


# --- the written reply stays where choices are not scored ---------------------------------------


def written(score: int = 5, passed: bool = True) -> dict[str, Any]:
    return {"reason": "written", "score": score, "pass": passed}


def test_a_judge_that_does_not_score_choices_asks_for_the_written_reply() -> None:
    model = ScoringModel(LEANS_BAD, written())
    verdict = rubric(JudgeClient(model))
    assert verdict.passed
    (request,) = model.requests
    assert request.choices is None
    assert request.json_schema is not None
    assert list(request.json_schema["properties"]) == ["reason", "score", "pass"]
    assert "verdict" not in verdict.details


def test_a_choice_reply_without_scores_falls_back_to_the_written_reply() -> None:
    model = ScoringModel(None, written(1, False))
    verdict = rubric(JudgeClient(model, scores=True))
    assert not verdict.passed
    choice_request, written_request = model.requests
    assert choice_request.choices is not None
    assert written_request.json_schema is not None
    assert verdict.details["judge_reply"]["reason"] == "written"


def test_a_rubric_prompt_of_the_suite_s_own_keeps_the_written_reply() -> None:
    model = ScoringModel(LEANS_BAD, written())
    override = "Grade {{ output }} against {{ rubric }}; reply in JSON."
    verdict = rubric(JudgeClient(model, scores=True), options={"rubricPrompt": override})
    assert verdict.passed
    assert [r.choices for r in model.requests] == [None]


def test_only_a_measured_provider_that_scores_reads_verdicts_from_scores() -> None:
    assert scores_verdicts(Capabilities(scores=True, measured=True))
    assert not scores_verdicts(Capabilities(scores=True))  # the scripted model
    assert not scores_verdicts(Capabilities(logprobs=True, measured=True))  # an OpenAI server


# --- what the verdict's mode keys ---------------------------------------------------------------


def test_the_fitness_key_names_the_verdict_mode_and_the_written_key_is_unchanged() -> None:
    model = ScoringModel(LEANS_GOOD)
    scored = judgefit.memo_key(JudgeClient(model, scores=True), 0)
    written_key = judgefit.memo_key(JudgeClient(model), 0)
    assert scored is not None
    assert written_key is not None
    assert scored != written_key
    assert scored.startswith(written_key + "|verdict=scored-expectation:")
    assert "verdict=" not in written_key
    # The side-by-side check grades no rubric: its key is the same either way.
    assert memo_key_side_by_side(JudgeClient(model, scores=True), 0) == memo_key_side_by_side(
        JudgeClient(model), 0
    )


def test_a_written_measurement_is_not_read_for_a_scoring_judge(tmp_path: Path) -> None:
    from fakes import GraderFake

    grader = GraderFake(lambda output: True)
    written_judge = JudgeClient(grader)
    measured = judgefit.judge_fitness(written_judge, tmp_path, seed=0)
    assert measured.status in ("qualified", "unqualified")
    key = judgefit.memo_key(written_judge, 0)
    assert key is not None
    assert judgefit.recall(tmp_path, key) is not None
    scored_key = judgefit.memo_key(JudgeClient(grader, scores=True), 0)
    assert scored_key is not None
    assert judgefit.recall(tmp_path, scored_key) is None


def test_the_verdict_request_has_a_cache_key_of_its_own_and_its_scores_come_back(
    tmp_path: Path,
) -> None:
    model = ScoringModel(LEANS_BAD, {"reason": "first"})
    cache = ResponseCache(tmp_path / "cache.db")
    first = rubric(JudgeClient(CachingProvider(model, cache), scores=True))
    choice_request, reason_request = model.requests
    identity = model.identity()
    keys = {cache_key(identity, r, "") for r in (choice_request, reason_request)}
    written_model = ScoringModel(None, written())
    rubric(JudgeClient(written_model))
    keys.add(cache_key(identity, written_model.requests[0], ""))
    assert len(keys) == 3

    again = rubric(JudgeClient(CachingProvider(model, cache), scores=True))
    assert len(model.requests) == 2  # both answers came from the cache
    assert again.score == first.score
    assert again.details["judge_reply"] == first.details["judge_reply"]


def test_a_cached_choice_reply_without_scores_is_not_read_as_a_verdict(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.db")
    unscored = ScoringModel(None, written(1, False))
    rubric(JudgeClient(CachingProvider(unscored, cache), scores=True))
    # A model that scores now meets the cached, unscored choice reply: it falls back too.
    scoring = ScoringModel(LEANS_GOOD, written(1, False))
    verdict = rubric(JudgeClient(CachingProvider(scoring, cache), scores=True))
    assert not verdict.passed
    assert verdict.details["judge_reply"]["reason"] == "written"
