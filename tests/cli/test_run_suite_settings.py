"""`skilleval run` with the run settings a promptfoo config carries: outputPath,
evaluateOptions and env, each used as its command-line counterpart would be."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli, run_cmd
from skilleval.runner.options import RunOptions

SECRET = "s3cr3t-value-never-shown"

SUITE = f"""
model: echo
metadata: {{team: search}}
outputPath: out/results.json
evaluateOptions: {{maxConcurrency: 3}}
env:
  SKILLEVAL_TEST_SECRET: {SECRET}
prompts: ["Say {{{{word}}}}"]
tests:
  - vars: {{word: hello}}
    metadata: {{owner: ana}}
    assert: [{{type: contains, value: hello}}]
"""


def test_settings_from_the_suite_reach_the_run_and_env_is_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(SUITE), encoding="utf-8")
    seen: dict[str, Any] = {}
    real = run_cmd.run_suite

    def spy(loaded: Any, options: RunOptions) -> Any:
        seen["env"] = os.environ.get("SKILLEVAL_TEST_SECRET")
        seen["jobs"] = options.jobs
        return real(loaded, options)

    monkeypatch.setattr(run_cmd, "run_suite", spy)
    monkeypatch.delenv("SKILLEVAL_TEST_SECRET", raising=False)
    assert run_cli(["run", str(suite), "--json", "--no-entry-points"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert seen == {"env": SECRET, "jobs": 3}
    assert "SKILLEVAL_TEST_SECRET" not in os.environ  # put back after the run
    assert (tmp_path / "out" / "results.json").is_file()  # outputPath, as -o
    assert doc["suite"]["metadata"] == {"team": "search"}
    assert doc["records"][0]["extra"]["metadata"] == {"owner": "ana"}
    home = Path(os.environ["SKILLEVAL_HOME"])
    written = [p for p in [*home.rglob("*"), *(tmp_path / "out").rglob("*")] if p.is_file()]
    assert written
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in json.dumps(doc)


def test_the_command_line_wins_over_the_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(SUITE), encoding="utf-8")
    seen: dict[str, Any] = {}
    real = run_cmd.run_suite

    def spy(loaded: Any, options: RunOptions) -> Any:
        seen["jobs"] = options.jobs
        return real(loaded, options)

    monkeypatch.setattr(run_cmd, "run_suite", spy)
    out = tmp_path / "elsewhere.json"
    assert run_cli(["run", str(suite), "-q", "-j", "1", "-o", str(out), "--no-entry-points"]) == 0
    assert seen["jobs"] == 1
    assert out.is_file()
    assert not (tmp_path / "out").exists()
