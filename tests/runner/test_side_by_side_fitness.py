"""The side-by-side judge's fitness: measured on the judge-fitness set when a run compares
arms, kept in the home for the next run, shown in the reports and required by a gate."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli
from skilleval.runner.judgecheck import load_pairs
from skilleval.runner.sidebyside_fit import side_by_side_fitness

SKILL = """\
---
name: csv-summary
description: Summarise a CSV file. Use when the user asks about a CSV.
---
Count the rows first.
"""

# A judge that always prefers the answer shown first: on every pair its two calls (the
# places swapped) disagree, so it never prefers the good output. An unfit judge.
SUITE = """\
version: 1
type: capability
skill: SKILL.md
model:
  provider: scripted
  responses:
    - match: "ANSWER A:"
      output: '{{"reason": "A comes first.", "better": "A"}}'
    - {{arm: on, output: There are two rows.}}
    - {{arm: off, output: I do not know.}}
  default: I do not know.
{gate}
tests:
  - id: rows
    prompt: How many rows does the CSV have?
    assert:
      - {{type: side-by-side, value: [States the count]}}
"""


def _run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gate: str = ""
) -> tuple[int, dict[str, Any], str]:
    (tmp_path / "SKILL.md").write_text(SKILL, encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE.format(gate=gate), encoding="utf-8")
    out = tmp_path / "out.json"
    code = run_cli(["run", str(path), "--no-cache", "-o", str(out)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, json.loads(out.read_text(encoding="utf-8")), err


def test_a_run_that_compares_arms_reports_its_judges_fitness_and_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    code, doc, err = _run(tmp_path, capsys)
    assert code == 0
    fitness = doc["judge"]["side_by_side"]
    assert fitness["status"] == "unqualified"
    assert fitness["fitness"] == 0.0
    assert fitness["pairs"] == len(load_pairs())
    assert fitness["cached"] is False
    assert fitness["fitness_set"].startswith("suites/judge-fitness.yaml sha256:")
    assert "warning: unqualified side-by-side judge" in err
    assert "preferences are not evidence" in err
    # The llm-rubric judge's own fitness is kept apart from it.
    assert doc["judge"]["fitness"]["reason"] != fitness["reason"]
    # The next run with the same judge reads it back instead of measuring again.
    _code, again, err = _run(tmp_path, capsys)
    assert again["judge"]["side_by_side"]["cached"] is True
    assert again["judge"]["side_by_side"]["fitness"] == 0.0
    assert "side-by-side judge fitness (measured before)" in err


def test_a_gate_can_require_the_side_by_side_judges_fitness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    code, doc, _err = _run(tmp_path, capsys, 'gate: {side_by_side_fitness: ">= 0.6"}')
    assert code == 1
    (check,) = [c for c in doc["gate"]["checks"] if c["name"] == "side_by_side_fitness"]
    assert (check["required"], check["actual"], check["passed"]) == (">= 0.6", 0.0, False)
    assert any(r.startswith("side_by_side_fitness is 0.00 [") for r in doc["gate"]["reasons"])


def test_without_the_check_the_gate_fails_saying_it_was_not_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    (tmp_path / "SKILL.md").write_text(SKILL, encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE.format(gate='gate: {side_by_side_fitness: ">= 0.6"}'), "utf-8")
    out = tmp_path / "out.json"
    assert run_cli(["run", str(path), "--no-judge-check", "-o", str(out)]) == 1
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["judge"]["side_by_side"]["status"] == "not checked"
    assert any("side_by_side_fitness was not measured" in r for r in doc["gate"]["reasons"])


def test_the_gate_needs_a_side_by_side_assertion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    path = tmp_path / "suite.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            version: 1
            model: echo
            gate: {side_by_side_fitness: ">= 0.6"}
            tests:
              - {prompt: hi, assert: [{type: contains, value: hi}]}
            """
        ),
        encoding="utf-8",
    )
    assert run_cli(["validate", str(path)]) == 4
    err = capsys.readouterr().err
    assert (
        "suite.yaml:3:8: error: `gate.side_by_side_fitness` needs a side-by-side assertion" in err
    )


class _FairJudge:
    """Prefers whichever answer is a pair's good output: a fit judge."""

    def __init__(self, good: set[str]) -> None:
        self.good = good

    def complete_json(self, messages: Any, schema: Any, max_tokens: int) -> Any:
        text = messages[-1]["content"]
        a = text.split("ANSWER A:\n", 1)[1].split("\n\nANSWER B:", 1)[0]
        return {"reason": "compared", "better": "A" if a.strip() in self.good else "B"}


def test_a_judge_that_prefers_the_good_output_is_qualified(tmp_path: Path) -> None:
    pairs = load_pairs()[:10]
    judge = _FairJudge({p.good.strip() for p in pairs})
    fitness = side_by_side_fitness(judge, tmp_path, seed=0, pairs=pairs)  # type: ignore[arg-type]
    assert (fitness.status, fitness.fitness, fitness.correct) == ("qualified", 1.0, 10)
    assert fitness.ci95 is not None
    assert fitness.ci95[0] > 0.5
    assert fitness.reason.startswith("qualified side-by-side judge: preference for the good output")
    assert not (tmp_path / "judge-fitness.json").exists()  # given pairs are never kept


def test_judge_check_side_by_side_keeps_the_measure_for_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    assert run_cli(["judge-check", "--judge-model", "echo", "--side-by-side", "--json"]) == 0
    checked = json.loads(capsys.readouterr().out)["side_by_side"]["fitness"]
    assert checked["pairs"] == len(load_pairs())
    (tmp_path / "SKILL.md").write_text(SKILL, encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE.format(gate="judge: echo"), encoding="utf-8")
    out = tmp_path / "out.json"
    run_cli(["run", str(path), "-o", str(out)])
    assert "side-by-side judge fitness (measured before)" in capsys.readouterr().err
    kept = json.loads(out.read_text(encoding="utf-8"))["judge"]["side_by_side"]
    assert kept["cached"] is True
    assert kept["fitness"] == checked["fitness"]
