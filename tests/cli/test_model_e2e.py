"""Whole runs on the real embedded model: reproducible, cached, and complete for a skill."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from skilleval.cli import run_cli
from tests.cli.fresh import run_json

pytestmark = pytest.mark.model

SUITE = """
version: 1
model: default
decoding: {max_tokens: 16, seed: 7}
prompts: ["Answer briefly. {{q}}"]
tests:
  - id: capital
    vars: {q: "What is the capital of France?"}
    assert: [{type: icontains, value: paris}]
  - id: colour
    vars: {q: "What colour is the sky on a clear day?"}
    assert: [{type: icontains, value: blue}]
"""

SKILL = """
---
name: shouting
description: Answer in capital letters. Use when the user asks you to shout.
---

Write the whole answer in CAPITAL LETTERS.
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def run_in_process(args: list[str], home: Path) -> dict:
    return run_json(args, home)[0]


def test_two_processes_give_byte_identical_outputs(tmp_path: Path) -> None:
    suite = write(tmp_path / "suite.yaml", SUITE)
    first = run_in_process(["run", str(suite), "--no-cache"], tmp_path / "a")
    second = run_in_process(["run", str(suite), "--no-cache"], tmp_path / "b")
    assert [r["output"] for r in first["records"]] == [r["output"] for r in second["records"]]
    assert all(r["output"] for r in first["records"])
    assert first["environment"]["model"]["sha256"] == second["environment"]["model"]["sha256"]
    assert len(first["environment"]["model"]["sha256"]) == 64


def test_unchanged_suite_reruns_with_zero_model_calls(tmp_path: Path, capsys) -> None:
    suite = write(tmp_path / "suite.yaml", SUITE)
    run_cli(["run", str(suite)])
    capsys.readouterr()
    run_cli(["run", str(suite), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["calls"]["model_calls"] == 0
    assert doc["calls"]["cache_hits"] == 2


def test_skill_run_reports_arms_lift_and_trigger(tmp_path: Path, capsys) -> None:
    write(tmp_path / "skill" / "SKILL.md", SKILL)
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        type: capability
        skill: skill/SKILL.md
        model: default
        decoding: {max_tokens: 12}
        tests:
          - {id: shout-hello, should_trigger: true, prompt: "Shout hello at me.",
             assert: [{type: regex, value: "[A-Z]{3}"}]}
          - {id: shout-name, should_trigger: true, prompt: "Shout the word yes.",
             assert: [{type: regex, value: "[A-Z]{3}"}]}
          - {id: weather, should_trigger: false, prompt: "Is rain wet?"}
    """,
    )
    code = run_cli(["run", str(suite), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert set(doc["arms"]) == {"on", "off"}
    assert doc["lift"]["n"] == 2
    assert doc["lift"]["verdict"] == "underpowered"
    trig = doc["trigger"]
    assert trig["n"] == 3
    for row in trig["tests"]:
        assert row["chosen"] in ("shouting", "none")
        assert set(row["scores"]) == {"shouting", "none"}


def test_the_trigger_block_has_the_auroc_and_calibration_of_a_real_router(
    tmp_path: Path, capsys
) -> None:
    write(tmp_path / "skill" / "SKILL.md", SKILL)
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        type: capability
        skill: skill/SKILL.md
        trigger: {calibrate: true}
        model: default
        decoding: {max_tokens: 8}
        tests:
          - {id: shout-hello, should_trigger: true, prompt: "Shout hello at me."}
          - {id: shout-yes, should_trigger: true, prompt: "Shout the word yes."}
          - {id: rain, should_trigger: false, prompt: "Is rain wet?"}
          - {id: sum, should_trigger: false, prompt: "What is 2 plus 3?"}
    """,
    )
    run_cli(["run", str(suite), "--json"])
    doc = json.loads(capsys.readouterr().out)
    trig = doc["trigger"]
    margins = {t["test_id"]: t["skill_margin"] for t in trig["tests"]}
    for row in trig["tests"]:  # the llama provider scores both options by log-probability
        scores = row["scores"]
        assert margins[row["test_id"]] == pytest.approx(scores["shouting"] - scores["none"])
    auroc = trig["auroc"]
    assert (auroc["positives"], auroc["negatives"], auroc["unscored"]) == (2, 2, [])
    positives = [margins["shout-hello"], margins["shout-yes"]]
    negatives = [margins["rain"], margins["sum"]]
    pairs = [(p > n) + 0.5 * (p == n) for p in positives for n in negatives]
    assert auroc["value"] == pytest.approx(sum(pairs) / 4)
    lo, hi = auroc["ci95"]
    assert 0 <= lo <= auroc["value"] <= hi <= 1
    cal = trig["calibrated"]
    assert cal["reason"] is None
    assert set(cal["content_free"]) == {"shouting", "none"}
    bias = cal["margin"]
    assert bias == pytest.approx(cal["content_free"]["shouting"] - cal["content_free"]["none"])
    for decision in cal["tests"]:
        assert decision["margin"] == pytest.approx(margins[decision["test_id"]] - bias, abs=1e-5)
    assert cal["auroc"]["value"] == auroc["value"]  # one skill, no distractor: a pure shift
    assert trig["router"] == {**trig["router"], "checked": False, "qualified": None}
    run_cli(["run", str(suite)])
    err = capsys.readouterr().err
    assert f"trigger AUROC {auroc['value']:.2f} [{lo:.2f}, {hi:.2f}]" in err
    assert f"calibrated (content-free margin {bias:+.2f} subtracted)" in err
    assert "router not checked: run `skilleval router-check" in err
    latest = Path(os.environ["SKILLEVAL_HOME"]) / "runs" / "latest"
    html = (latest / "report.html").read_text(encoding="utf-8")
    assert f'data-metric="trigger.auroc.value" data-value="{auroc["value"]}"' in html
    assert 'id="trigger-calibrated"' in html
    assert 'data-value="router not checked"' in html
