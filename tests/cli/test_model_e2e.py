"""Whole runs on the real embedded model: reproducible, cached, and complete for a skill."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from skilleval.cli import run_cli

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
    env = {**os.environ, "SKILLEVAL_HOME": str(home)}
    proc = subprocess.run(
        [sys.executable, "-m", "skilleval", *args, "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=600,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


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
