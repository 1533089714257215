"""Other tools' eval files end to end on the real embedded model, through the CLI.

A skill-creator skill folder (evals and a trigger set) and a Vally spec run as written, and
each expectation, rubric item and grader gets its own verdict in results.json and in the
HTML report. The model's words are never asserted: only that every check was graded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skilleval.cli import run_cli
from tests.suite.formats_support import skill_folder, write_json, write_yaml

pytestmark = pytest.mark.model

EVALS = {
    "skill_name": "csv-summary",
    "evals": [
        {
            "id": 1,
            "prompt": "A CSV has the header name,age and two data rows. How many data rows?",
            "expected_output": "Two data rows.",
            "expectations": [
                "The reply gives a number of rows",
                {"name": "script", "description": "Used scripts/count.py to count"},
            ],
            "must_not_have": ["(?i)traceback"],
        }
    ],
}
TRIGGERS = [
    {"query": "which columns does my csv file have?", "should_trigger": True},
    {"query": "write a haiku about autumn leaves", "should_trigger": False},
]
VALLY = """\
name: csv-summary
defaults:
  runs: 1
stimuli:
  - name: Count rows
    prompt: A CSV has the header name,age and two data rows. How many data rows?
    graders:
      - type: output-not-contains
        config:
          substring: Traceback
      - type: prompt
    rubric:
      - States how many rows there are
"""


def _run(path: Path, out: Path) -> dict:
    code = run_cli(
        [
            "run",
            str(path),
            "--no-judge-check",
            "-q",
            "-o",
            str(out / "results.json"),
            "-o",
            str(out / "report.html"),
        ]
    )
    assert code in (0, 1, 3)  # passed, gate failed, or errors: never a crash
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def test_a_skill_creator_folder_runs_with_a_verdict_per_expectation(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "csv-summary")
    write_json(folder / "evals" / "evals.json", EVALS)
    write_json(folder / "evals" / "trigger_eval.json", TRIGGERS)
    results = _run(folder, tmp_path)
    evals = [r for r in results["records"] if r["test_id"] == "eval-1"]
    assert {r["arm"] for r in evals} == {"off", "on"}
    for record in evals:
        rubric, script, regex = record["asserts"]
        assert rubric["type"] == "llm-rubric"
        assert rubric["status"] in ("pass", "fail", "error")
        assert rubric["reason"]  # the evidence
        assert script["type"] == "unavailable"
        assert script["status"] == "error"
        assert regex["status"] == "pass"
    assert results["trigger"] is not None
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "The reply gives a number of rows" in html
    assert "Used scripts/count.py to count" in html


def test_a_vally_spec_runs_with_a_verdict_per_grader(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "csv-summary")
    path = write_yaml(folder / "eval.yaml", VALLY)
    results = _run(path, tmp_path)
    records = results["records"]
    assert {r["arm"] for r in records} == {"off", "on"}
    for record in records:
        contains, rubric = record["asserts"]
        assert (contains["type"], contains["negated"]) == ("not-contains", True)
        assert contains["status"] in ("pass", "fail")
        assert rubric["type"] == "side-by-side"
        assert rubric["status"] in ("pass", "fail", "error")
        if rubric["status"] != "error":
            assert len(rubric["details"]["items"][0]["calls"]) == 2
    assert "States how many rows there are" in (tmp_path / "report.html").read_text("utf-8")
