"""The judge's fitness: measured once per judge model, remembered, recorded, gated on."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
from fakes import GraderFake

from skilleval.cli import run_cli
from skilleval.engine.cache import CachingProvider
from skilleval.engine.testing import EchoProvider
from skilleval.errors import ProviderError
from skilleval.judge import JudgeClient
from skilleval.results.load import load_run, validate_document
from skilleval.runner import judgefit
from skilleval.runner.judgecheck import load_pairs
from skilleval.runner.options import RunOptions
from skilleval.runner.run import run_suite
from skilleval.suite.load import Overrides, load_suite
from skilleval.util.memo import read_memo

GOOD = frozenset(p.good for p in load_pairs())
PAIRS = len(load_pairs())


def oracle(name: str = "oracle") -> GraderFake:
    """Passes exactly the pairs' good outputs, and whatever a suite's own tests give it."""
    return GraderFake(lambda output: output in GOOD or output.startswith("Paris"), name=name)


def constant() -> GraderFake:
    return GraderFake(lambda output: True, name="always-pass")


def home() -> Path:
    return Path(os.environ["SKILLEVAL_HOME"])


def test_an_oracle_is_qualified_and_remembered_so_it_costs_once() -> None:
    provider = oracle()
    first = judgefit.judge_fitness(JudgeClient(provider), home(), seed=0)
    assert first.status == "qualified"
    assert (first.fitness, first.discrimination, first.error_rate) == (1.0, 1.0, 0.0)
    assert first.pairs == PAIRS
    assert first.outputs == 2 * PAIRS
    assert first.ci95 is not None
    assert first.ci95[0] > 0.9
    assert first.reason.startswith(f"qualified judge: fitness 1.00 [{first.ci95[0]:.2f}, 1.00]")
    assert first.fitness_set is not None
    assert first.fitness_set.startswith("suites/judge-fitness.yaml sha256:")
    assert not first.cached
    calls = len(provider.requests)
    assert calls == 2 * PAIRS

    again = judgefit.judge_fitness(JudgeClient(provider), home(), seed=0)
    assert len(provider.requests) == calls  # read back, not measured again
    assert again.cached
    assert again.fitness == first.fitness
    assert again.ci95 == first.ci95


def test_the_memo_is_keyed_by_judge_identity_and_serves_a_greedy_judge_at_any_seed() -> None:
    judgefit.judge_fitness(JudgeClient(oracle("a")), home(), seed=0)
    other_model = oracle("b")
    judgefit.judge_fitness(JudgeClient(other_model), home(), seed=0)
    assert len(other_model.requests) == 2 * PAIRS
    # The judge decodes greedily, so its seed cannot change a grade: no new measurement.
    other_seed = oracle("a")
    judgefit.judge_fitness(JudgeClient(other_seed), home(), seed=1)
    assert other_seed.requests == []
    memo = read_memo(home() / judgefit.MEMO_FILE)
    assert len(memo) == 2
    assert all(key.startswith("fake:") and "|greedy|" in key for key in memo)


def test_a_constant_judge_is_unqualified_because_its_interval_includes_chance() -> None:
    fitness = judgefit.judge_fitness(JudgeClient(constant()), home(), seed=0)
    assert fitness.status == "unqualified"
    assert fitness.fitness == 0.5
    assert fitness.discrimination == 0.5
    assert fitness.reason.startswith("unqualified judge: fitness 0.50 [")
    assert fitness.reason.endswith(f"includes chance 0.5 on {PAIRS} pairs")


def test_a_judge_right_on_grades_but_upside_down_on_scores_is_unqualified() -> None:
    """Every grade right, every score backwards: accuracy 1, discrimination 0."""

    class Backwards(GraderFake):
        def reply(self, request: Any) -> Any:
            done = super().reply(request)
            data = json.loads(done.text)
            data["score"] = 3 if data["pass"] else 5  # a fail scored 5 still fails
            return type(done)(text=json.dumps(data))

    pairs = [p for p in load_pairs() if p.type == "llm-rubric" and isinstance(p.value, str)]
    grader = Backwards(lambda output: output in GOOD)
    fitness = judgefit.judge_fitness(JudgeClient(grader), home(), seed=0, pairs=pairs[:20])
    assert (fitness.fitness, fitness.discrimination) == (1.0, 0.0)
    assert fitness.status == "unqualified"
    assert fitness.reason.startswith("unqualified judge: discrimination 0.00 [0.00, ")
    assert fitness.reason.endswith("is below chance 0.5 on 20 pairs scored")
    assert fitness.fitness_set is None  # a subset is never remembered
    assert not (home() / judgefit.MEMO_FILE).exists()


def test_skipping_the_check_says_the_judge_was_not_checked() -> None:
    provider = oracle()
    fitness = judgefit.judge_fitness(JudgeClient(provider), home(), seed=0, check=False)
    assert fitness.status == "not checked"
    assert fitness.reason.startswith("judge not checked")
    assert fitness.fitness is None
    assert provider.requests == []


def test_a_judge_that_cannot_run_is_an_error_and_is_not_remembered() -> None:
    class Missing(GraderFake):
        def reply(self, request: Any) -> Any:
            raise ProviderError("model file not found: x.gguf")

    broken = Missing(lambda output: True)
    fitness = judgefit.judge_fitness(JudgeClient(broken), home(), seed=0)
    assert fitness.status == "error"
    assert "model file not found" in fitness.reason
    assert not (home() / judgefit.MEMO_FILE).exists()


def test_a_damaged_memo_costs_a_measurement_not_a_failure() -> None:
    (home() / judgefit.MEMO_FILE).parent.mkdir(parents=True, exist_ok=True)
    (home() / judgefit.MEMO_FILE).write_text("{not json", encoding="utf-8")
    fitness = judgefit.judge_fitness(JudgeClient(oracle()), home(), seed=0)
    assert fitness.status == "qualified"
    assert read_memo(home() / judgefit.MEMO_FILE)


def test_measuring_does_not_count_in_the_run_s_calls() -> None:
    provider = CachingProvider(oracle(), None)
    client = JudgeClient(provider)
    judgefit.judge_fitness(client, home(), seed=0)
    assert client.stats()["calls"] == 0
    assert provider.calls == 0


def test_notices_say_what_is_measured_and_what_came_out() -> None:
    said: list[str] = []
    judgefit.judge_fitness(JudgeClient(constant()), home(), seed=0, notice=said.append)
    assert said[0].startswith(f"judge fitness: grading {PAIRS} known-good and known-bad pairs")
    assert "--no-judge-check" in said[0]
    assert said[-1].startswith("unqualified judge: fitness 0.50")
    said.clear()
    judgefit.judge_fitness(JudgeClient(constant()), home(), seed=0, notice=said.append)
    assert said == [said[0]]
    assert said[0].startswith("judge fitness (measured before): unqualified judge")


# --------------------------------------------------------------------------- runs and the gate

SUITE = """
version: 1
type: capability
model: {{provider: scripted, default: "Paris."}}
prompts: ["{{{{q}}}}"]
{gate}
tests:
  - id: a
    vars: {{q: Paris}}
    assert:
      - {{type: llm-rubric, value: Names Paris.}}
"""


def suite_file(tmp_path: Path, gate: str = "") -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(SUITE.format(gate=gate)).lstrip(), encoding="utf-8")
    return path


def test_a_run_records_its_judge_s_fitness_in_results(tmp_path: Path) -> None:
    suite, _ = load_suite(suite_file(tmp_path), Overrides())
    counted = CachingProvider(oracle(), None)
    outcome = run_suite(suite, RunOptions(home=home(), judge_provider=counted))
    judge = outcome.run.judge
    assert judge is not None
    assert judge.fitness is not None
    assert judge.fitness.status == "qualified"
    assert outcome.run.calls is not None
    assert outcome.run.calls.judge_calls == 1  # the test's one grade, not the 146 of the check
    data = json.loads((outcome.run_dir.root / "results.json").read_text(encoding="utf-8"))
    assert validate_document(data) == []
    assert data["judge"]["fitness"]["status"] == "qualified"
    loaded = load_run(outcome.run_dir.root)
    assert loaded.judge is not None
    assert loaded.judge.fitness == judge.fitness


def test_a_run_without_model_graded_assertions_measures_nothing(tmp_path: Path) -> None:
    path = tmp_path / "plain.yaml"
    path.write_text(
        'model: echo\nprompts: ["hi"]\ntests:\n  - assert: [{type: contains, value: hi}]\n',
        encoding="utf-8",
    )
    suite, _ = load_suite(path, Overrides())
    outcome = run_suite(suite, RunOptions(home=home()))
    assert outcome.run.judge is None
    assert not (home() / judgefit.MEMO_FILE).exists()


@pytest.mark.parametrize(
    ("judge", "check", "passed", "reason"),
    [
        (oracle, True, True, None),
        (constant, True, False, "judge_fitness is 0.50 ["),
        (
            oracle,
            False,
            False,
            "judge_fitness was not measured (judge not checked: the fitness check was skipped",
        ),
    ],
)
def test_a_gate_can_require_judge_fitness(
    tmp_path: Path, judge: Any, check: bool, passed: bool, reason: str | None
) -> None:
    gate = 'gate: {judge_fitness: ">= 0.8"}'
    suite, _ = load_suite(suite_file(tmp_path, gate), Overrides())
    outcome = run_suite(suite, RunOptions(home=home(), judge_provider=judge(), judge_check=check))
    gate_result = outcome.run.gate
    assert gate_result is not None
    (condition,) = [c for c in gate_result.checks if c.name == "judge_fitness"]
    assert condition.passed is passed
    assert condition.required == ">= 0.8"
    assert gate_result.passed is passed
    if reason is None:
        assert gate_result.reasons == ()
    else:
        (said,) = gate_result.reasons
        assert said.startswith(reason)
        assert said.endswith("required >= 0.8")


def test_an_echo_judge_is_measured_below_chance(tmp_path: Path) -> None:
    """Echo fails every rubric output and cannot fill a statement list: worse than a coin."""
    suite, _ = load_suite(suite_file(tmp_path), Overrides())
    outcome = run_suite(suite, RunOptions(home=home(), judge_provider=EchoProvider()))
    assert outcome.run.judge is not None
    fitness = outcome.run.judge.fitness
    assert fitness is not None
    assert fitness.status == "unqualified"
    assert "is below chance 0.5" in fitness.reason


def test_judge_check_of_the_whole_set_is_remembered_for_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(["judge-check", "--judge-model", "echo", "--limit", "2"]) == 0
    assert not (home() / judgefit.MEMO_FILE).exists()  # a quick look is not a verdict
    assert run_cli(["judge-check", "--judge-model", "echo", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fitness"]["status"] == "unqualified"
    (key,) = read_memo(home() / judgefit.MEMO_FILE)
    assert key.startswith("echo:echo:|greedy|")
    path = suite_file(tmp_path)
    path.write_text(path.read_text(encoding="utf-8") + "judge: echo\n", encoding="utf-8")
    assert run_cli(["run", str(path)]) == 0
    err = capsys.readouterr().err
    assert "judge fitness (measured before): unqualified judge" in err
    assert "judge fitness: grading" not in err
