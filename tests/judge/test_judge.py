"""The judge: scoring rules, the repair retry, errors as their own state, prompts, judge-check."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeProvider

from skilleval.api import Check, Verdict
from skilleval.assertions.builtin.model import llm_assert, llm_rubric
from skilleval.cli import run_cli
from skilleval.engine.base import Completion, Message, Request, joins_calls
from skilleval.engine.cache import CachingProvider, ResponseCache
from skilleval.engine.llama import gguf_spec
from skilleval.errors import InvalidReplyError, ProviderError, SuiteError
from skilleval.judge import JudgeClient, SchemaGuard
from skilleval.judge.client import reply_problem
from skilleval.judge.schemas import assert_budget, rubric_budget, rubric_schema
from skilleval.judge.scoring import map_score
from skilleval.runner.judgecheck import load_pairs, run_judge_check


class FakeModel(FakeProvider):
    """The shared fake, named as a judge."""

    name = "fake-judge"

    def __init__(self, *replies: Any) -> None:
        super().__init__(replies)


def rubric_reply(score: int = 4, passed: bool = True, **extra: Any) -> dict[str, Any]:
    return {"reason": "looks right", "score": score, "pass": passed, **extra}


def statements_reply(*verdicts: str) -> dict[str, Any]:
    return {
        "verdicts": [
            {"id": i, "reason": "because", "verdict": v} for i, v in enumerate(verdicts, start=1)
        ]
    }


def rubric(judge: Any, value: Any = "Names Paris.", **kw: Any) -> Verdict:
    check = Check(output="Paris.", value=value, prompt="Capital of France?", judge=judge, **kw)
    verdict: Verdict = llm_rubric(check)
    return verdict


def asserted(judge: Any, value: Any, **kw: Any) -> Verdict:
    check = Check(output="Paris.", value=value, prompt="Capital?", judge=judge, **kw)
    verdict: Verdict = llm_assert(check)
    return verdict


# --- scoring -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("score", "mapped"), [(1, 0.0), (2, 0.25), (3, 0.5), (4, 0.75), (5, 1.0)])
def test_score_maps_to_unit_interval(score: int, mapped: float) -> None:
    assert map_score(score) == mapped


@pytest.mark.parametrize(
    ("judge_pass", "score", "threshold", "passed"),
    [
        (True, 3, None, True),  # 0.5 meets the default threshold
        (True, 2, None, False),  # 0.25 is below it, whatever the judge said
        (False, 5, None, False),  # the judge's own fail always fails
        (True, 4, 0.75, True),
        (True, 4, 0.8, False),
        (True, 1, 0.0, True),
    ],
)
def test_rubric_passes_only_when_judge_passes_and_score_reaches_threshold(
    judge_pass: bool, score: int, threshold: float | None, passed: bool
) -> None:
    verdict = rubric(JudgeClient(FakeModel(rubric_reply(score, judge_pass))), threshold=threshold)
    assert verdict.error is None
    assert verdict.passed is passed
    assert verdict.score == map_score(score)
    assert verdict.details["judge_score"] == score


def test_rubric_request_is_greedy_seeded_and_schema_locked() -> None:
    model = FakeModel(rubric_reply())
    rubric(JudgeClient(model, seed=7))
    (request,) = model.requests
    assert (request.temperature, request.top_p, request.seed) == (0.0, 1.0, 7)
    assert request.purpose == "judge"
    assert request.json_schema is not None
    assert list(request.json_schema["properties"]) == ["reason", "score", "pass"]
    assert request.json_schema["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]
    assert request.max_tokens == rubric_budget(0)


def test_list_rubric_adds_pinned_checks_and_records_them() -> None:
    checks = [{"id": 1, "pass": True, "notes": "steel"}, {"id": 2, "pass": False, "notes": "no"}]
    model = FakeModel(rubric_reply(4, True, checks=checks))
    verdict = rubric(JudgeClient(model), value=["Says steel", "Says cold"])
    schema = model.requests[0].json_schema
    assert schema is not None
    assert list(schema["properties"]) == ["reason", "score", "pass", "checks"]
    pinned = [e["properties"]["id"]["enum"] for e in schema["properties"]["checks"]["prefixItems"]]
    assert pinned == [[1], [2]]
    assert model.requests[0].max_tokens == rubric_budget(2) > rubric_budget(1)
    assert verdict.passed
    assert verdict.details["checks"][1] == {
        "id": 2,
        "item": "Says cold",
        "pass": False,
        "notes": "no",
    }
    assert "1/2 items met" in verdict.reason


def test_rubric_judge_sees_prompt_output_rubric_and_reference() -> None:
    model = FakeModel(rubric_reply())
    rubric(JudgeClient(model), options={"reference": "Paris, {{ city }}"}, vars={"city": "FR"})
    system, user = (m.content for m in model.requests[0].messages)
    assert "Names Paris." in system
    assert "Paris, FR" in system
    assert "Capital of France?" in user
    assert user.endswith("Paris.")


def test_calls_with_the_same_rubric_share_a_prompt_prefix() -> None:
    model = FakeModel(rubric_reply(), rubric_reply())
    judge = JudgeClient(model)
    llm_rubric(Check(output="A", value="Be brief.", prompt="one", judge=judge))
    llm_rubric(Check(output="B", value="Be brief.", prompt="two", judge=judge))
    first, second = (r.messages for r in model.requests)
    assert first[0] == second[0]
    assert first[1] != second[1]


def test_rubric_threshold_outside_unit_interval_is_an_error() -> None:
    verdict = rubric(JudgeClient(FakeModel()), threshold=3)
    assert verdict.error == "llm-rubric threshold must be between 0 and 1, not 3"


# --- llm-assert ----------------------------------------------------------------------------------


def test_unknown_counts_as_not_passed_and_is_recorded_apart() -> None:
    model = FakeModel(statements_reply("TRUE", "UNKNOWN"))
    verdict = asserted(JudgeClient(model), ["Names Paris.", "Mentions the Seine."])
    assert verdict.error is None
    assert not verdict.passed
    assert verdict.score == 0.5
    assert (verdict.details["true"], verdict.details["false"], verdict.details["unknown"]) == (
        1,
        0,
        1,
    )
    assert "statement 2 is UNKNOWN" in verdict.reason
    assert model.requests[0].max_tokens == assert_budget(2) > assert_budget(1)


@pytest.mark.parametrize(
    ("verdicts", "passed"),
    [(("FALSE", "TRUE"), True), (("UNKNOWN", "FALSE"), False), (("UNKNOWN", "UNKNOWN"), False)],
)
def test_require_any_passes_when_one_statement_is_true(
    verdicts: tuple[str, str], passed: bool
) -> None:
    judge = JudgeClient(FakeModel(statements_reply(*verdicts)))
    verdict = asserted(judge, ["a", "b"], options={"require": "any"})
    assert verdict.passed is passed
    assert verdict.score == (1.0 if passed else 0.0)


def test_single_statement_is_judged_alone() -> None:
    model = FakeModel(statements_reply("TRUE"))
    verdict = asserted(JudgeClient(model), "Names Paris.")
    assert verdict.passed
    schema = model.requests[0].json_schema
    assert schema is not None
    entry = schema["properties"]["verdicts"]["prefixItems"][0]
    assert entry["properties"]["verdict"]["enum"] == ["TRUE", "FALSE", "UNKNOWN"]


def test_assert_rejects_a_threshold() -> None:
    verdict = asserted(JudgeClient(FakeModel()), "x", threshold=0.5)
    assert verdict.error == "llm-assert takes no threshold; use require: all | any"


# --- truncation, repair and errors ---------------------------------------------------------------


def test_truncated_reply_is_retried_once_with_twice_the_budget() -> None:
    model = FakeModel(('{"reason": "cut', "length"), rubric_reply(5))
    verdict = rubric(JudgeClient(model))
    assert verdict.passed
    first, second = model.requests
    assert second.max_tokens == 2 * first.max_tokens
    assert second.messages == first.messages


def test_reply_truncated_twice_is_an_error_not_a_fail() -> None:
    model = FakeModel(('{"reason": "cut', "length"), ('{"reason": "cut again', "length"))
    verdict = rubric(JudgeClient(model))
    budget = 2 * rubric_budget(0)
    assert verdict.error == f"judge reply truncated at {budget} tokens, after a repair retry"
    assert verdict.score is None
    assert verdict.details["error_kind"] == "truncated"
    assert len(model.requests) == 2


def test_invalid_reply_gets_a_repair_note_then_becomes_an_error() -> None:
    model = FakeModel({"reason": "no pass field", "score": 3}, "not json at all")
    verdict = rubric(JudgeClient(model))
    assert verdict.error is not None
    assert verdict.error.startswith("judge reply invalid after a repair retry: not JSON")
    first, second = model.requests
    assert len(second.messages) == len(first.messages) + 1
    assert "'pass' is a required property" in second.messages[-1].content
    assert second.max_tokens == 2 * first.max_tokens


def test_reply_missing_pass_is_never_a_pass() -> None:
    model = FakeModel({"reason": "fine", "score": 5}, {"reason": "fine", "score": 5})
    verdict = rubric(JudgeClient(model))
    assert verdict.error is not None
    assert not verdict.passed


def test_repaired_reply_is_used() -> None:
    judge = JudgeClient(FakeModel(rubric_reply(score=9), rubric_reply(score=5)))
    verdict = rubric(judge)
    assert verdict.passed
    assert judge.stats()["repaired"] == 1


def test_model_failure_is_an_error_without_retry() -> None:
    model = FakeModel(ProviderError("model file not found: x.gguf"))
    verdict = rubric(JudgeClient(model))
    assert verdict.error == "judge model failed: model file not found: x.gguf"
    assert verdict.details["error_kind"] == "provider"
    assert len(model.requests) == 1


def test_engine_refusal_of_a_constrained_reply_is_retried() -> None:
    refused = InvalidReplyError("constrained reply is not valid JSON: Invalid control character")
    verdict = rubric(JudgeClient(FakeModel(refused, rubric_reply(4))))
    assert verdict.passed


def test_missing_judge_is_an_error() -> None:
    assert rubric(None).error == "no judge model configured"
    assert asserted(None, "x").error == "no judge model configured"


class RawJudge:
    """A Judge that returns whatever it is given, bypassing schema validation."""

    def __init__(self, reply: Any) -> None:
        self.reply = reply

    def complete_json(
        self, messages: Sequence[Mapping[str, str]], schema: Mapping[str, Any], max_tokens: int
    ) -> Any:
        return self.reply


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            rubric_reply(checks=[{"id": 1, "pass": True, "notes": ""}] * 2),
            "`checks` has ids [1, 1]; expected exactly [1, 2], in order",
        ),
        (rubric_reply(checks=[{"id": 1, "pass": True, "notes": ""}]), "expected exactly [1, 2]"),
        (rubric_reply(score=0, checks=[]), "score 0 is not on the scale 1..5"),
        ({"score": 3, "pass": True}, "reply has no `reason`"),
    ],
)
def test_impossible_rubric_reply_is_an_error(reply: Any, message: str) -> None:
    verdict = rubric(RawJudge(reply), value=["a", "b"])
    assert verdict.error is not None
    assert message in verdict.error
    assert verdict.details["error_kind"] == "impossible"


def test_impossible_statement_verdict_is_an_error() -> None:
    verdict = asserted(RawJudge(statements_reply("MAYBE")), "x")
    assert verdict.error == (
        "judge reply is impossible: statement 1 has verdict 'MAYBE', "
        "not one of ('TRUE', 'FALSE', 'UNKNOWN')"
    )


# --- the cache -----------------------------------------------------------------------------------


def test_errors_are_never_cached(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.db")
    bad = ({"reason": "x", "score": 7, "pass": True}, ('{"reason": "cut', "length"))
    for _ in range(2):
        model = FakeModel(*bad)
        verdict = rubric(JudgeClient(CachingProvider(model, cache)))
        assert verdict.error is not None
        assert len(model.requests) == 2  # asked again each run: nothing was stored
    assert cache.info().entries == 0


DUPLICATED = '{"reason": "x", "score": 1, "pass": false, "score": 5, "pass": true}'


def test_a_reply_that_repeats_a_key_is_rejected_not_read_by_its_last_value() -> None:
    model = FakeModel(DUPLICATED, DUPLICATED)
    verdict = rubric(JudgeClient(model))
    assert verdict.status == "error"
    assert verdict.error == (
        "judge reply invalid after a repair retry: not JSON (the key 'score' appears twice): "
        + repr(DUPLICATED)
    )
    assert len(model.requests) == 2  # the repair retry was asked for, and refused too


def test_a_repeated_key_is_repaired_by_the_retry() -> None:
    verdict = rubric(JudgeClient(FakeModel(DUPLICATED, rubric_reply(2, passed=False))))
    assert verdict.status == "fail"
    assert verdict.score == map_score(2)


def test_reply_problem_names_a_repeated_key_and_a_float_score() -> None:
    schema = rubric_schema()
    assert "the key 'score' appears twice" in (reply_problem(DUPLICATED, schema) or "")
    assert reply_problem('{"reason": "x", "score": 5.0, "pass": true}', schema) == (
        "at $.score: 5.0 is not of type 'integer'"
    )
    assert reply_problem('{"reason": "x", "score": 5, "pass": true}', schema) is None


def test_an_impossible_reply_is_an_error_and_is_never_cached(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.db")
    impossible = '{"reason": "x", "score": 5.0, "pass": true}'
    for _ in range(2):
        model = FakeModel(impossible, impossible)
        verdict = rubric(JudgeClient(CachingProvider(model, cache)))
        assert verdict.status == "error"
        assert "is not of type 'integer'" in (verdict.error or "")
        assert len(model.requests) == 2  # asked again each time: nothing was stored
    assert cache.info().entries == 0


def test_valid_replies_are_cached(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.db")
    rubric(JudgeClient(CachingProvider(FakeModel(rubric_reply(5)), cache)))
    again = FakeModel()
    judge = JudgeClient(CachingProvider(again, cache))
    assert rubric(judge).passed
    assert again.requests == []
    assert judge.stats()["cache_hits"] == 1


def test_guard_sits_under_the_cache() -> None:
    judge = JudgeClient(CachingProvider(FakeModel(), None))
    assert isinstance(judge.provider, CachingProvider)
    assert isinstance(judge.provider.inner, SchemaGuard)


class BatchingModel(FakeModel):
    """A fake judge model that decodes several requests together, as batched llama.cpp does."""

    batch_width = 2
    max_concurrency = 4

    def complete_batch(self, requests: Sequence[Request]) -> list[Completion | ProviderError]:
        out: list[Completion | ProviderError] = []
        for request in requests:
            try:
                out.append(self.complete(request))
            except ProviderError as exc:
                out.append(exc)
        return out


def test_the_guard_batches_as_its_model_does_and_checks_each_reply() -> None:
    schema = {"type": "object", "properties": {"pass": {"type": "boolean"}}, "required": ["pass"]}
    model = BatchingModel('{"pass": true}', "not json", ProviderError("the model failed"))
    guard = SchemaGuard(model)
    assert joins_calls(guard)
    asks = [Request(messages=(Message("user", str(i)),), json_schema=schema) for i in range(3)]
    good, bad, failed = guard.complete_batch(asks)
    assert isinstance(good, Completion)
    assert good.text == '{"pass": true}'
    assert isinstance(bad, InvalidReplyError)
    assert isinstance(failed, ProviderError)
    assert str(failed) == "the model failed"


def test_describe_records_model_and_greedy_decoding() -> None:
    described = JudgeClient(FakeModel(), seed=3).describe()
    assert described["model"]["name"] == "fake-judge"
    assert described["decoding"] == {"greedy": True, "temperature": 0.0, "top_p": 1.0, "seed": 3}


# --- rubricPrompt ----------------------------------------------------------------------------


def test_rubric_prompt_string_replaces_the_packaged_prompt() -> None:
    model = FakeModel(rubric_reply())
    prompt = "Grade {{ output }} for {{ who }} against: {{ rubric }}"
    rubric(JudgeClient(model), options={"rubricPrompt": prompt}, vars={"who": "kids"})
    (message,) = model.requests[0].messages
    assert (message.role, message.content) == (
        "user",
        "Grade Paris. for kids against: Names Paris.",
    )


def test_rubric_prompt_message_list_keeps_roles() -> None:
    model = FakeModel(rubric_reply())
    prompt = [
        {"role": "system", "content": "Rubric: {{ rubric }}"},
        {"role": "user", "content": "{{ prompt }} -> {{ output }}"},
    ]
    rubric(JudgeClient(model), options={"rubricPrompt": prompt})
    assert [(m.role, m.content) for m in model.requests[0].messages] == [
        ("system", "Rubric: Names Paris."),
        ("user", "Capital of France? -> Paris."),
    ]


def test_rubric_prompt_without_the_output_is_an_error() -> None:
    verdict = rubric(JudgeClient(FakeModel()), options={"rubricPrompt": "Is {{ rubric }} met?"})
    assert verdict.error == "rubricPrompt never shows the output; add {{ output }}"


# --- validation ----------------------------------------------------------------------------------


def test_empty_rubrics_and_statements_are_validation_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        textwrap.dedent(
            """\
            version: 1
            model: echo
            prompts: ["{{ q }}"]
            tests:
              - vars: {q: one}
                assert:
                  - type: llm-rubric
                    value: ""
                  - type: llm-rubric
                    value: []
                  - type: llm-rubric
                    value: ["fine", "  "]
                  - type: llm-assert
                    value: []
                  - type: llm-rubric
                    value: Good.
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    assert run_cli(["validate", "suite.yaml"]) == 4
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "suite.yaml:8:16: error: invalid value for 'llm-rubric': '' should be non-empty",
        "suite.yaml:10:16: error: invalid value for 'llm-rubric': [] should be non-empty",
        "suite.yaml:12:16: error: rubric 2 is blank",
        "suite.yaml:14:16: error: invalid value for 'llm-assert': [] should be non-empty",
        "4 errors",
    ]


# --- judge-check ---------------------------------------------------------------------------------


class OracleJudge:
    """Passes an output exactly when it is the pair's good one."""

    def __init__(self) -> None:
        self.good = {pair.good for pair in load_pairs()}

    def complete_json(
        self, messages: Sequence[Mapping[str, str]], schema: Mapping[str, Any], max_tokens: int
    ) -> Any:
        output = messages[-1]["content"].rsplit("OUTPUT:\n", 1)[1]
        good = output in self.good
        if "verdicts" in schema["properties"]:
            n = len(schema["properties"]["verdicts"]["prefixItems"])
            return statements_reply(*["TRUE" if good else "FALSE"] * n)
        reply = rubric_reply(5 if good else 1, good)
        if "checks" in schema["properties"]:
            n = len(schema["properties"]["checks"]["prefixItems"])
            reply["checks"] = [{"id": i, "pass": good, "notes": ""} for i in range(1, n + 1)]
        return reply


def test_the_judge_fitness_set_has_sixty_pairs_of_every_kind() -> None:
    pairs = load_pairs()
    assert len(pairs) >= 60
    assert len({p.id for p in pairs}) == len(pairs)
    kinds = Counter((p.type, isinstance(p.value, tuple), p.reference is not None) for p in pairs)
    assert set(kinds) == {
        ("llm-rubric", False, False),  # one rubric text
        ("llm-rubric", False, True),  # with a reference answer
        ("llm-rubric", True, False),  # a list of rubric items
        ("llm-assert", False, False),  # one statement
        ("llm-assert", True, False),  # several statements
    }
    assert min(kinds.values()) >= 5
    assert len({p.domain for p in pairs}) >= 30


def test_every_output_in_the_judge_fitness_set_is_its_own() -> None:
    """Each output text belongs to one pair and one side, so an output names its verdict."""
    outputs = [o for p in load_pairs() for o in (p.good, p.bad)]
    assert len(set(outputs)) == len(outputs)


def test_a_malformed_judge_fitness_set_is_refused_at_every_position() -> None:
    text = (
        "pairs:\n"
        "  - id: a\n"
        "    domain: maths\n"
        "    type: llm-grader\n"
        "    prompt: 1 + 1?\n"
        "    value: []\n"
        "    good: '2'\n"
        "    bad: '2'\n"
        "  - id: a\n"
        "    type: llm-assert\n"
        "    prompt: Hi\n"
        "    value: The reply greets.\n"
        "    reference: Hello\n"
        "    good: Hello\n"
        "    bad: Bye\n"
        "    weight: 2\n"
    )
    with pytest.raises(SuiteError) as caught:
        load_pairs(text, "pairs.yaml")
    assert [str(d) for d in caught.value.diagnostics] == [
        "pairs.yaml:4:11: error: 'type' is 'llm-grader'; expected one of: llm-rubric, llm-assert",
        "pairs.yaml:6:12: error: 'value' is an empty list",
        "pairs.yaml:8:10: error: 'bad' is the same text as 'good'",
        "pairs.yaml:9:5: error: missing field 'domain'",
        "pairs.yaml:9:9: error: duplicate id 'a' (first at line 2)",
        "pairs.yaml:13:16: error: 'reference' is for llm-rubric pairs only",
        "pairs.yaml:16:5: error: unknown field 'weight' "
        "(allowed: id, domain, type, prompt, value, reference, good, bad)",
    ]


def test_judge_check_measures_a_perfect_judge() -> None:
    report = run_judge_check(OracleJudge(), load_pairs())
    assert (report.accuracy, report.discrimination, report.error_rate) == (1.0, 1.0, 0.0)
    assert not report.constant


def test_judge_check_counts_errors_and_ties() -> None:
    pairs = load_pairs()[:2]
    judge = JudgeClient(
        FakeModel(rubric_reply(3), rubric_reply(3), ("{", "length"), ("{", "length"), "1", "2")
    )
    report = run_judge_check(judge, pairs)
    assert report.accuracy == 1 / 4
    assert report.error_rate == 2 / 4
    assert report.discrimination == 0.5
    assert len(report.scored_pairs) == 1


def test_judge_check_cli_with_a_constant_judge(capsys: pytest.CaptureFixture[str]) -> None:
    """Echo answers every schema with its first options: fail, score 1, and empty lists."""
    assert run_cli(["judge-check", "--judge-model", "echo", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    pairs = load_pairs()
    plain = sum(1 for p in pairs if p.type == "llm-rubric" and isinstance(p.value, str))
    assert out["pairs"] == len(pairs)
    assert out["accuracy"] == plain / (2 * len(pairs))  # only the bad outputs, rightly failed
    assert out["error_rate"] == (len(pairs) - plain) / len(pairs)  # empty lists are invalid
    assert out["discrimination"] == 0.5
    assert out["constant"] is True
    assert out["judge"]["decoding"]["greedy"] is True


def test_judge_check_exits_3_when_the_judge_cannot_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "missing.gguf")
    assert run_cli(["judge-check", "--judge-model", missing]) == 3
    assert "the judge could not run: judge model failed: model file not found" in (
        capsys.readouterr().err
    )


# --- the real embedded model ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedded_judge(tmp_path_factory: pytest.TempPathFactory) -> JudgeClient:
    from skilleval.engine.factory import create_provider

    home = tmp_path_factory.mktemp("judge-home")
    provider = create_provider(gguf_spec(), home=home)
    return JudgeClient(CachingProvider(provider, None))


@pytest.mark.model
def test_embedded_judge_replies_parse_and_validate(embedded_judge: JudgeClient) -> None:
    verdicts = [
        rubric(embedded_judge),
        rubric(embedded_judge, value=["Names Paris", "Is one word"]),
        asserted(embedded_judge, ["The reply names Paris.", "The reply mentions Rome."]),
    ]
    # Every reply parses and validates. One may still be refused as a grade: this small
    # judge copies the prompt's worked example ("the capital of Italy") into its notes.
    kinds = [v.details.get("error_kind") for v in verdicts if v.error is not None]
    assert set(kinds) <= {"copied"}
    assert embedded_judge.stats()["errors"] == 0


@pytest.mark.model
def test_judge_check_runs_on_the_embedded_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["judge-check", "--limit", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["error_rate"] == 0.0
    assert out["judge"]["model"]["name"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
