"""``skilleval history`` on run folders written by real runs of a scripted suite."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
from fakes import COMMIT_SKILL

from skilleval.cli import run_cli

SKILL = COMMIT_SKILL

SUITE = """
version: 1
type: {type}
skill: skill/SKILL.md
arms: [off, on]
decoding: {{mode: distribution, temperature: 0.7, seed: 3}}
trials: 3
model:
  provider: scripted
  responses:
    - arm: router
      match: "commit message"
      output: commit-message
    - arm: on
      id: improving
      output: "{improving}"
    - arm: on
      id: flaky
      outputs: ["feat: one", "no idea", "feat: three"]
    - arm: on
      output: "feat: add the thing"
    - arm: off
      output: "Sure! Here is a message."
tests:
  - {{id: steady, should_trigger: true, prompt: "Write a commit message for a fix", assert: [{{type: regex, value: "^feat: "}}]}}
  - {{id: improving, should_trigger: true, prompt: "Write a commit message for a docs change", assert: [{{type: regex, value: "^feat: "}}]}}
  - {{id: flaky, should_trigger: true, prompt: "Write a commit message for a refactor", assert: [{{type: regex, value: "^feat: "}}]}}
  - {{id: control, should_trigger: false, prompt: "What is 1 plus 1?", assert: [{{type: not-icontains, value: feat}}]}}
"""


def runs_dir() -> Path:
    return Path(os.environ["SKILLEVAL_HOME"]) / "runs"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    skill = tmp_path / "skill" / "SKILL.md"
    skill.parent.mkdir()
    skill.write_text(textwrap.dedent(SKILL).lstrip(), encoding="utf-8")


def write_suite(improving: str, kind: str = "capability", name: str = "suite.yaml") -> Path:
    path = Path(name)
    path.write_text(SUITE.format(type=kind, improving=improving), encoding="utf-8")
    return path


def run_suite(suite: Path, capsys: pytest.CaptureFixture[str]) -> int:
    code = run_cli(["run", str(suite), "-q"])
    capsys.readouterr()
    return code


def history(
    capsys: pytest.CaptureFixture[str], *args: str, code: int = 0
) -> tuple[dict[str, Any], str]:
    assert run_cli(["history", "--json", *args]) == code
    out = capsys.readouterr()
    return json.loads(out.out), out.err


def test_lists_runs_oldest_first_with_rates_lift_and_recall(
    capsys: pytest.CaptureFixture[str],
) -> None:
    suite = write_suite("not a commit message")
    assert run_suite(suite, capsys) == 0
    write_suite("feat: document it")
    assert run_suite(suite, capsys) == 0
    doc, err = history(capsys, str(suite))
    assert err == ""
    assert doc["suite"] == "suite.yaml"
    runs = doc["runs"]
    assert len(runs) == 2
    finished = sorted(runs_dir().glob("2*"), key=lambda p: p.stat().st_mtime)
    assert [r["run_id"] for r in runs] == [p.name for p in finished]
    first, second = runs
    assert first["started_at"] <= second["started_at"]
    # Trials passed on ON: steady 3, improving 0 then 3, flaky 2, the control 0 (of 12).
    assert first["pass_rates"] == {"off": 0.25, "on": pytest.approx(5 / 12, abs=1e-6)}
    assert second["pass_rates"] == {"off": 0.25, "on": pytest.approx(8 / 12, abs=1e-6)}
    assert second["lift"]["lift"] > first["lift"]["lift"]
    assert {r["lift"]["verdict"] for r in runs} <= {"helps", "no evidence", "underpowered"}
    assert [r["trigger_recall"] for r in runs] == [1.0, 1.0]
    assert [r["verdict"] for r in runs] == ["REPORTED", "REPORTED"]
    assert doc["saturated"] == []


def test_a_capability_test_saturates_after_three_runs_of_pass_hat_k_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    suite = write_suite("not a commit message")
    run_suite(suite, capsys)
    write_suite("feat: document it")
    run_suite(suite, capsys)
    run_suite(suite, capsys)
    doc, _ = history(capsys, str(suite))
    assert [s["test_id"] for s in doc["saturated"]] == ["steady"]
    assert doc["saturated"][0]["arm"] == "on"
    assert doc["saturated"][0]["runs"] == [r["run_id"] for r in doc["runs"]]
    run_suite(suite, capsys)
    doc, _ = history(capsys, str(suite))
    # improving has now passed every trial in its last three runs; flaky never has.
    assert [s["test_id"] for s in doc["saturated"]] == ["improving", "steady"]
    assert run_cli(["history", str(suite)]) == 0
    err = capsys.readouterr().err
    assert "saturated: pass^k = 1 in each of the last 3 runs" in err
    assert "  improving [on]" in err
    assert "  steady [on]" in err
    assert "flaky [on]" not in err


def test_a_regression_suite_lists_no_saturated_tests(capsys: pytest.CaptureFixture[str]) -> None:
    suite = write_suite("feat: document it", kind="regression")
    for _ in range(3):
        run_suite(suite, capsys)
    doc, _ = history(capsys, str(suite))
    assert len(doc["runs"]) == 3
    assert doc["saturated"] == []
    assert {r["verdict"] for r in doc["runs"]} == {"FAILED"}


def test_damaged_and_foreign_folders_are_skipped_with_one_line_each(
    capsys: pytest.CaptureFixture[str],
) -> None:
    suite = write_suite("feat: document it")
    run_suite(suite, capsys)
    other = write_suite("feat: document it", name="other.yaml")
    run_suite(other, capsys)
    real = next(p for p in runs_dir().glob("*-suite-*"))
    truncated = runs_dir() / "20200101-000000-suite-0001"
    shutil.copytree(real, truncated)
    text = (truncated / "results.json").read_text(encoding="utf-8")
    (truncated / "results.json").write_text(text[: len(text) // 2], encoding="utf-8")
    drifted = runs_dir() / "20200101-000001-suite-0002"
    shutil.copytree(real, drifted)
    data = json.loads((drifted / "results.json").read_text(encoding="utf-8"))
    data["summary"]["arms"]["on"]["pass_rate"] = "high"
    (drifted / "results.json").write_text(json.dumps(data), encoding="utf-8")
    unfinished = runs_dir() / "20200101-000002-suite-0003"
    shutil.copytree(real, unfinished)
    (unfinished / "results.json").unlink()
    (runs_dir() / "notes").mkdir()
    (runs_dir() / "notes" / "todo.txt").write_text("not a run", encoding="utf-8")

    doc, err = history(capsys, str(suite))
    assert [r["run_id"] for r in doc["runs"]] == [real.name]
    lines = err.splitlines()
    assert len(lines) == 4
    assert all(line.startswith("note: skipped ") for line in lines)
    assert "Traceback" not in err
    notes = {s["run"]: s["reason"] for s in doc["skipped"]}
    assert notes[truncated.name] == "results.json is not valid JSON"
    assert "is not a valid skilleval results file" in notes[drifted.name]
    assert notes[unfinished.name] == "the run did not finish (no results.json)"
    assert notes["notes"].startswith("not a run directory")
    # The other suite's run is neither listed nor noted.
    assert not any("other" in name for name in notes)

    assert run_cli(["history", str(suite)]) == 0
    text_err = capsys.readouterr().err
    assert f"note: skipped {truncated.name}: results.json is not valid JSON" in text_err
    assert real.name in text_err


def test_no_runs_yet_is_not_an_error_but_a_missing_suite_is(
    capsys: pytest.CaptureFixture[str],
) -> None:
    suite = write_suite("feat: document it")
    doc, _ = history(capsys, str(suite))
    assert doc["runs"] == []
    assert run_cli(["history", str(suite)]) == 0
    assert "suite.yaml: no finished runs recorded" in capsys.readouterr().err
    assert run_cli(["history", "missing.yaml"]) == 2
    assert "missing.yaml: no such suite, and no runs of it recorded" in capsys.readouterr().err


def test_json_stdout_is_one_document(capsys: pytest.CaptureFixture[str]) -> None:
    suite = write_suite("feat: document it")
    run_suite(suite, capsys)
    assert run_cli(["history", "--json", str(suite)]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert set(doc) == {"suite", "runs", "saturated", "saturation_runs", "skipped", "runs_dir"}
    assert doc["saturation_runs"] == 3


def test_the_html_report_charts_earlier_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import xml.etree.ElementTree as ET

    suite = write_suite("not a commit message")
    run_suite(suite, capsys)
    first = (runs_dir() / "latest" / "report.html").read_text(encoding="utf-8")
    assert 'id="history"' not in first  # nothing earlier to chart yet
    write_suite("feat: document it")
    run_suite(suite, capsys)
    run_suite(suite, capsys)
    html = (runs_dir() / "latest" / "report.html").read_text(encoding="utf-8")
    start = html.index('<svg viewBox="0 0 640 200"')
    svg = ET.fromstring(html[start : html.index("</svg>", start) + len("</svg>")])
    arms = {g.get("data-arm"): g for g in svg.iter("g")}
    assert set(arms) == {"off", "on"}
    on_points = arms["on"].findall("circle")
    assert len(on_points) == 3
    # ON went from 41.7% to 66.7%: a higher point is a smaller y.
    ys = [float(c.get("cy", "nan")) for c in on_points]
    assert ys[0] > ys[1] == ys[2]
    assert "[on] 66.7%" in (on_points[-1].findtext("title") or "")
    assert 'id="saturated"' in html
    assert "<code>steady</code>" in html
    assert html.count('class="current"') == 1
    # Re-rendering the first run shows no later runs.
    oldest = sorted(runs_dir().glob("2*"), key=lambda p: p.stat().st_mtime)[0]
    assert run_cli(["report", str(oldest)]) == 0
    capsys.readouterr()
    assert 'id="history"' not in (oldest / "report.html").read_text(encoding="utf-8")


def test_the_html_report_reads_only_the_newest_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from skilleval.report.history import SHOWN_IN_REPORT, collect
    from skilleval.results.load import load_run

    suite = write_suite("feat: document it")
    run_suite(suite, capsys)
    real = next(runs_dir().glob("2*"))
    for i in range(SHOWN_IN_REPORT + 4):
        shutil.copytree(real, runs_dir() / f"20200101-0000{i:02d}-suite-{i:04x}")
    run = load_run(real)
    everything = collect(runs_dir(), "suite.yaml")
    assert len(everything.runs) == SHOWN_IN_REPORT + 5
    newest = collect(runs_dir(), "suite.yaml", upto=run, limit=SHOWN_IN_REPORT)
    assert len(newest.runs) == SHOWN_IN_REPORT
    assert newest.runs[-1].run_id == real.name
    assert run_cli(["history", str(suite)]) == 0
    assert f"suite.yaml: {SHOWN_IN_REPORT + 5} runs, oldest first" in capsys.readouterr().err
