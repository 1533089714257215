"""`skilleval run --resume`: a run killed with SIGKILL finishes without redoing finished work."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from skilleval.cli import run_cli

SLOW_PLUGIN = """
import time
from skilleval import assertion

@assertion("slow-ok")
def slow_ok(check):
    "Passes after a pause, so a run can be killed halfway."
    time.sleep(0.15)
    return True
"""


def make_suite(root: Path, tests: int = 16) -> Path:
    (root / "asserts").mkdir(parents=True, exist_ok=True)
    (root / "asserts" / "slow.py").write_text(textwrap.dedent(SLOW_PLUGIN), encoding="utf-8")
    lines = [
        "version: 1",
        "plugins: [asserts]",
        "model:",
        "  provider: scripted",
        "  responses:",
        "    - match: odd",
        "      output: an odd answer",
        "  default: an even answer",
        "tests:",
    ]
    for i in range(tests):
        word = "odd" if i % 2 else "even"
        lines += [
            f"  - id: t{i:02d}",
            f"    prompt: question {i} is {word}",
            "    assert:",
            "      - type: slow-ok",
            "      - type: contains",
            "        value: even",
        ]
    suite = root / "suite.yaml"
    suite.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return suite


def comparable(doc: dict) -> dict:
    """A results document without what legitimately differs between two processes."""
    out = {k: v for k, v in doc.items() if k not in ("timing", "calls", "run_id", "status")}
    out["records"] = [
        {
            **r,
            "stats": {
                k: v for k, v in r["stats"].items() if k not in ("latency_ms", "tokens_per_s")
            },
        }
        for r in doc["records"]
    ]
    return out


def start_run(suite: Path, home: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "SKILLEVAL_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "skilleval", "run", str(suite), "--no-cache", "-q"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def test_kill_9_then_resume_loses_nothing_and_matches_an_uninterrupted_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = make_suite(tmp_path)
    home = tmp_path / "home"
    proc = start_run(suite, home)
    runs = home / "runs"
    deadline = time.monotonic() + 30
    jsonl: Path | None = None
    while time.monotonic() < deadline:
        found = sorted(runs.glob("*/results.jsonl")) if runs.exists() else []
        if found and len(found[0].read_text().splitlines()) >= 4:
            jsonl = found[0]
            break
        time.sleep(0.05)
    assert jsonl is not None, "the run never got going"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    finished_before = {
        json.loads(x)["test_id"] for x in jsonl.read_text().splitlines() if x.strip()
    }
    assert 4 <= len(finished_before) < 16
    assert not (jsonl.parent / "results.json").exists()

    monkeypatch.setenv("SKILLEVAL_HOME", str(home))
    code = run_cli(["run", "--resume", str(jsonl.parent), "--no-cache", "--json"])
    resumed = json.loads(capsys.readouterr().out)
    assert code == 1  # the odd tests fail `contains: even`
    assert resumed["calls"]["model_calls"] == 16 - len(finished_before)
    assert {r["test_id"] for r in resumed["records"]} >= finished_before

    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "fresh"))
    run_cli(["run", str(suite), "--no-cache", "--json"])
    fresh = json.loads(capsys.readouterr().out)
    assert comparable(resumed) == comparable(fresh)


def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path: Path, capsys, monkeypatch) -> None:
    suite = make_suite(tmp_path, tests=3)
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    assert run_cli(["run", str(suite), "-k", "t00"]) == 0
    run = tmp_path / "home" / "runs" / "latest"
    with (run / "results.jsonl").open("a") as fh:
        fh.write('{"test_id": "t01", "arm": "def')
    capsys.readouterr()
    run_cli(["run", "--resume", str(run.resolve()), "-k", "t00", "--json"])
    err = capsys.readouterr().err
    assert "results.jsonl:2: skipping a corrupt line" in err


def test_resuming_after_the_suite_changed_needs_force(tmp_path: Path, capsys, monkeypatch) -> None:
    suite = make_suite(tmp_path, tests=2)
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    run_cli(["run", str(suite)])
    run = (tmp_path / "home" / "runs" / "latest").resolve()
    suite.write_text(suite.read_text().replace("an odd answer", "an even answer"), encoding="utf-8")
    capsys.readouterr()
    assert run_cli(["run", "--resume", str(run)]) == 2
    assert "changed since" in capsys.readouterr().err
    assert run_cli(["run", "--resume", str(run), "--force"]) == 1  # t01 still fails


def test_resuming_a_directory_that_is_not_a_run_is_a_usage_error(tmp_path: Path, capsys) -> None:
    assert run_cli(["run", "--resume", str(tmp_path)]) == 2
    assert "not a skilleval run directory" in capsys.readouterr().err
