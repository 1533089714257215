"""``javascript`` checks and JavaScript transforms through ``skilleval run``, on the echo model.

``tests/data/js/hostile.yaml`` puts sandbox escapes, a runaway loop, a memory bomb and a
backtracking regex between two ordinary tests: each hostile check ends as an ``error`` and
both ordinary tests are still graded. ``semantics.yaml`` pins promptfoo's verdicts.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli
from skilleval.sandbox import jsengine

DATA = Path(__file__).resolve().parent.parent / "data" / "js"


def run_suite(name: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = run_cli(["run", str(DATA / name), "--json", "--no-entry-points"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, json.loads(captured.out)


def verdicts(doc: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    return {
        r["test_id"]: [(a["status"], a["reason"]) for a in r["asserts"]] for r in doc["records"]
    }


def test_hostile_checks_end_as_errors_and_the_run_goes_on(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsengine, "TIME_LIMIT_S", 0.3)
    started = time.monotonic()
    code, doc = run_suite("hostile.yaml", capsys)
    elapsed = time.monotonic() - started
    found = verdicts(doc)
    assert found.pop("plain-before") == [("pass", "javascript returned true")]
    assert found.pop("plain-after") == [("pass", "javascript returned true")]
    reasons = {test: results[0][1] for test, results in found.items()}
    assert {test: results[0][0] for test, results in found.items()} == dict.fromkeys(
        reasons, "error"
    )
    assert "'require' is not defined" in reasons["require-fs"]
    assert "'process' is not defined" in reasons["process-exit"]
    assert "could not load module 'fs'" in reasons["dynamic-import"]
    assert "'process' is not defined" in reasons["constructor-escape"]
    assert "of undefined" in reasons["globalthis-scan"]
    assert "'fetch' is not defined" in reasons["fetch-local"]
    assert "time limit" in reasons["runaway-loop"]
    assert "ran out of memory" in reasons["memory-bomb"]
    assert "time limit" in reasons["backtracking-regex"]
    assert reasons["require-fs"].startswith("JavaScript at ")
    assert "hostile.yaml:12:" in reasons["require-fs"]
    assert code == 3  # errors make the gate fail, they do not end the run
    # Two wall-clock deadlines of 3 × 0.3 + 1 s, and the rest: well under a minute.
    assert elapsed < 60


def test_promptfoo_semantics_on_the_echo_model(capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = run_suite("semantics.yaml", capsys)
    found = {test: [status for status, _ in results] for test, results in verdicts(doc).items()}
    assert found == {
        "bool-pass": ["pass"],
        "bool-fail": ["fail"],
        "score-threshold": ["fail"],  # 4 / 10 = 0.4 < threshold 0.5
        "grading-result": ["pass"],
        "negated": ["fail"],
        "from-file": ["pass"],  # 'hello'.length 5 > maximumLength 3
        "from-file-function": ["pass"],
        "thrown": ["error"],  # promptfoo: a fail; skilleval keeps errors apart
        "transformed": ["pass", "pass"],
    }
    scores = {r["test_id"]: r["asserts"][0]["score"] for r in doc["records"]}
    assert scores["score-threshold"] == pytest.approx(0.4)
    assert scores["grading-result"] == pytest.approx(0.75)
    thrown = verdicts(doc)["thrown"][0][1]
    assert thrown.endswith("check.js:12 threw TypeError: cannot read property 'length' of null")


def test_validate_loads_both_suites(capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("hostile.yaml", "semantics.yaml"):
        assert run_cli(["validate", str(DATA / name), "--no-entry-points"]) == 0, name
        assert "Traceback" not in capsys.readouterr().err


def test_a_javascript_transform_error_errs_the_assertions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "version: 1\nmodel: echo\nprompts: ['{{text}}']\ntests:\n"
        "  - id: t\n    vars: {text: not json}\n"
        "    options: {transform: JSON.parse(output)}\n"
        "    assert: [{type: contains, value: x}]\n"
        "  - id: fine\n    vars: {text: shout}\n"
        "    options: {transform: output.toUpperCase()}\n"
        "    assert: [{type: equals, value: SHOUT}]\n",
        encoding="utf-8",
    )
    code = run_cli(["run", str(suite), "--json", "--no-entry-points"])
    doc = json.loads(capsys.readouterr().out)
    found = verdicts(doc)
    assert [status for status, _ in found["fine"]] == ["pass"]
    status, reason = found["t"][0]
    assert status == "error"
    assert reason.startswith("transform failed: JavaScript at ")
    assert "SyntaxError" in reason
    assert code == 3


def test_checks_that_attack_the_reply_or_return_endless_text_are_reported_as_they_are(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, doc = run_suite("edges.yaml", capsys)
    assert code == 3  # one check is an error; the run finished and reported
    results = [(a["status"], a["reason"]) for a in doc["records"][0]["asserts"]]
    assert results[0] == ("pass", "output contains 'hello' (ignoring case)")
    assert results[1] == ("pass", "javascript returned true")  # JSON.stringify replaced
    assert results[2][0] == "error"  # toJSON on every object: the value is what it gives
    assert results[3][0] == "error"
    assert results[3][1].endswith("edges.yaml:26:16 threw null")  # not "ran out of memory"
    status, reason = results[4]
    assert status == "pass"
    assert reason.endswith("R… [cut: 20,000,000 characters in all]")
    assert len(reason) < 20_000
    status, reason = results[5]
    assert status == "error"
    assert reason.endswith("T… [cut: 3,000,000 characters in all]")
    assert doc["summary"]["arms"]["default"]["metrics"] == {
        "greets": 1.0,
        "share": 1.0,
        "other": 1.0,
    }
    run = Path(os.environ["SKILLEVAL_HOME"]) / "runs" / "latest"
    assert (run / "results.json").stat().st_size < 1_000_000
    assert (run / "report.html").is_file()
