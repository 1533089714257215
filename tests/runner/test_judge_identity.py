"""Whether the judge is the model under test is decided by what grades, not by the YAML."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from skilleval.engine.testing import EchoProvider
from skilleval.runner.options import RunOptions
from skilleval.runner.run import run_suite
from skilleval.suite.load import Overrides, load_suite

SUITE = """
version: 1
type: capability
model: {provider: scripted, default: "Paris."}
prompts: ["{{q}}"]
tests:
  - id: a
    vars: {q: Paris}
    assert:
      - {type: llm-rubric, value: Names Paris.}
"""


def test_a_judge_given_as_its_own_provider_is_not_the_generator(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(SUITE).lstrip(), encoding="utf-8")
    suite, _ = load_suite(path, Overrides())
    assert suite.judge is None  # the YAML alone would say the generator grades itself
    home = Path(os.environ["SKILLEVAL_HOME"])
    outcome = run_suite(suite, RunOptions(home=home, judge_provider=EchoProvider()))
    judge = outcome.run.judge
    assert judge is not None
    assert judge.same_as_generator is False
    shared = run_suite(suite, RunOptions(home=home))
    assert shared.run.judge is not None
    assert shared.run.judge.same_as_generator is True
