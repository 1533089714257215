"""``side-by-side`` in whole runs on the scripted model: the two arms' answers judged together,
each item twice with the places swapped, ties where the two calls disagree."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli

SKILL = """\
---
name: csv-summary
description: Summarise a CSV file. Use when the user asks about a CSV.
---
Count the rows first.
"""

SUITE = """\
version: 1
skill: SKILL.md
model:
  provider: scripted
  responses:
    # The judge: a fair one on `rows`, one that always picks the first answer on `bias`.
    - match: "ITEM:\\nStates the count[\\\\s\\\\S]*ANSWER A:\\nThere are two rows"
      output: '{"reason": "A gives the count.", "better": "A"}'
    - match: "ITEM:\\nStates the count[\\\\s\\\\S]*ANSWER A:\\nI do not know"
      output: '{"reason": "B gives the count.", "better": "B"}'
    - match: "ITEM:\\nIs polite"
      output: '{"reason": "A comes first.", "better": "A"}'
    - arm: on
      output: There are two rows.
    - arm: off
      output: I do not know.
  default: I do not know.
tests:
  - id: rows
    prompt: How many rows does the CSV have?
    assert:
      - type: side-by-side
        value: [States the count]
  - id: bias
    prompt: Say hello about the CSV.
    assert:
      - type: side-by-side
        value: Is polite
"""


def _run(tmp_path: Path, suite: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    (tmp_path / "SKILL.md").write_text(SKILL, encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(suite), encoding="utf-8")
    run_cli(["run", str(path), "--json", "--no-cache", "--no-judge-check"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    doc: dict[str, Any] = json.loads(out)
    return doc


def _verdict(doc: dict[str, Any], test_id: str, arm: str) -> dict[str, Any]:
    record = next(r for r in doc["records"] if (r["test_id"], r["arm"]) == (test_id, arm))
    verdict: dict[str, Any] = record["asserts"][0]
    return verdict


def test_the_arm_both_calls_prefer_passes_and_the_other_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _run(tmp_path, SUITE, capsys)
    on, off = _verdict(doc, "rows", "on"), _verdict(doc, "rows", "off")
    assert (on["status"], off["status"]) == ("pass", "fail")
    assert on["details"]["preferred"] == "on"
    (item,) = on["details"]["items"]
    assert item["calls"] == ["on", "on"]  # once with on first, once with off first
    assert (on["score"], off["score"]) == (1.0, 0.0)


def test_a_judge_that_always_picks_the_first_answer_gives_a_tie(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _run(tmp_path, SUITE, capsys)
    on, off = _verdict(doc, "bias", "on"), _verdict(doc, "bias", "off")
    assert (on["status"], off["status"]) == ("fail", "fail")
    assert on["details"]["preferred"] == "tie"
    assert on["details"]["items"][0]["calls"] == ["on", "off"]
    assert on["score"] == off["score"] == 0.5


def test_the_lift_counts_preferences_and_leaves_ties_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _run(tmp_path, SUITE, capsys)
    lift = doc["lift"]
    assert (lift["b"], lift["c"]) == (1, 0)


def test_side_by_side_without_a_skill_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = SUITE.replace("skill: SKILL.md\n", "")
    doc = _run(tmp_path, suite, capsys)
    record = doc["records"][0]
    assert record["asserts"][0]["status"] == "error"
    assert "needs `skill:`" in record["asserts"][0]["reason"]


def test_every_report_gives_the_preference_with_its_sign_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "SKILL.md").write_text(SKILL, encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE, encoding="utf-8")
    md, html = tmp_path / "report.md", tmp_path / "report.html"
    run_cli(["run", str(path), "--no-cache", "--no-judge-check", "-o", str(md), "-o", str(html)])
    terminal = capsys.readouterr().err
    # rows: ON preferred; bias: a tie. One of one comparison that chose: p = 1/2.
    line = "side by side: on preferred 1/2, off 0, ties 1 · exact one-sided sign test p = 0.5"
    assert line in terminal
    assert line in md.read_text(encoding="utf-8")
    assert line in html.read_text(encoding="utf-8")


class _ContentJudge:
    """Prefers whichever answer holds the good output's text: a fit judge."""

    def __init__(self, good: str) -> None:
        self.good = good

    def complete_json(self, messages: Any, schema: Any, max_tokens: int) -> Any:
        text = messages[-1]["content"]
        a = text.split("ANSWER A:\n", 1)[1].split("\n\nANSWER B:", 1)[0]
        return {"reason": "compared", "better": "A" if a.strip() == self.good else "B"}


def test_a_fit_judge_prefers_the_good_output_of_every_fitness_pair() -> None:
    from skilleval.runner.judgecheck import load_pairs
    from skilleval.runner.sidebyside_check import prefer

    for pair in load_pairs()[:5]:
        outcome = prefer(_ContentJudge(pair.good), pair)
        assert (outcome.preferred, outcome.split) == ("good", False), pair.id


def test_judge_check_side_by_side_shows_a_position_biased_judge_as_ties(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The echo judge answers a schema-held request with its first choice: always "A".
    code = run_cli(
        ["judge-check", "--judge-model", "echo", "--limit", "3", "--side-by-side", "--json"]
    )
    assert code == 0
    side = json.loads(capsys.readouterr().out)["side_by_side"]
    assert (side["good"], side["bad"], side["ties"], side["calls_disagreed"]) == (0, 0, 3, 3)
    assert side["accuracy"] == 0.0
