"""A user's check cannot fool CI: each hostile plugin under tests/data/plugins/hostile/ ends
as an ``error`` verdict (or its own honest verdict) while the run goes on and stdout stays
one JSON document."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli
from skilleval.runner import grade

HOSTILE = Path(__file__).resolve().parent.parent / "data" / "plugins" / "hostile"


def suite(tmp_path: Path, asserts: list[str], vars_: str = "{}") -> Path:
    shutil.copytree(HOSTILE, tmp_path / "plugins")
    lines = "\n".join(f"      - type: {a}" for a in asserts)
    path = tmp_path / "suite.yaml"
    path.write_text(
        "model: echo\n"
        "plugins: [plugins]\n"
        "tests:\n"
        "  - id: one\n"
        "    prompt: some words here\n"
        f"    vars: {vars_}\n"
        "    assert:\n"
        f"{lines}\n"
        "  - id: two\n"
        "    prompt: more words\n"
        "    assert:\n"
        "      - type: contains\n"
        "        value: words\n",
        encoding="utf-8",
    )
    return path


def run(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any], str]:
    code = run_cli(["run", str(path), "--json", "--no-cache"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def asserts_of(doc: dict[str, Any], test_id: str = "one") -> list[dict[str, Any]]:
    record = next(r for r in doc["records"] if r["test_id"] == test_id)
    return list(record["asserts"])


def test_sys_exit_in_a_check_is_an_error_and_the_run_goes_on(tmp_path: Path, capsys) -> None:
    code, doc, _ = run(suite(tmp_path, ["hostile-exit"]), capsys)
    (result,) = asserts_of(doc)
    assert result["status"] == "error"
    assert "called sys.exit(0)" in result["reason"]
    assert "exits.py:10" in result["reason"]
    assert asserts_of(doc, "two")[0]["status"] == "pass"  # the run went on
    assert code != 0  # an error is not a pass: the gate does not pass


def test_prints_at_import_and_in_a_check_go_to_stderr(tmp_path: Path, capsys) -> None:
    path = suite(tmp_path, ["hostile-print"])
    _, doc, err = run(path, capsys)  # json.loads of stdout succeeded: one document
    assert asserts_of(doc)[0]["status"] == "pass"
    assert "hello from the plugin's import" in err
    assert "hello from the check" in err
    assert run_cli(["validate", str(path), "--json"]) == 0
    out, err = capsys.readouterr()
    json.loads(out)
    assert "hello from the plugin's import" in err


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("hostile-nan", "'score' is NaN"),
        ("hostile-maybe", "'passed' is str; expected true or false"),
        ("hostile-huge", "an integer of about 5001 digits as its score"),
        ("hostile-huge-verdict", "'score' is an integer of about 5001 digits"),
    ],
)
def test_verdicts_no_results_file_can_hold_are_errors(
    tmp_path: Path, capsys, kind: str, words: str
) -> None:
    _, doc, _ = run(suite(tmp_path, [kind]), capsys)
    (result,) = asserts_of(doc)
    assert result["status"] == "error"
    assert words in result["reason"]
    assert result["score"] is None
    # results.json is strict JSON: a bare NaN or Infinity would make this raise.
    written = Path(os.environ["SKILLEVAL_HOME"]) / "runs" / "latest" / "results.json"
    json.loads(written.read_text(encoding="utf-8"), parse_constant=_refuse)


def _refuse(name: str) -> Any:
    raise AssertionError(f"results.json holds a bare {name}")


def test_a_check_cannot_change_what_later_checks_see(tmp_path: Path, capsys) -> None:
    path = suite(
        tmp_path,
        ["hostile-mutate", "hostile-report-vars"],
        # A list var would stand for each of its items (promptfoo's expansion): keep it whole.
        vars_="{name: original, items: [a]}\n    options: {disableVarExpansion: true}",
    )
    _, doc, _ = run(path, capsys)
    mutate, report = asserts_of(doc)
    assert mutate["status"] == "error"
    assert "TypeError" in mutate["reason"]
    assert "mutates.py:9" in mutate["reason"]
    assert report["status"] == "pass", report["reason"]


def test_an_exception_names_the_plugin_file_and_line(tmp_path: Path, capsys) -> None:
    _, doc, _ = run(suite(tmp_path, ["hostile-raise"]), capsys)
    (result,) = asserts_of(doc)
    assert result["status"] == "error"
    assert result["reason"].startswith("hostile-raise raised ValueError at ")
    assert result["reason"].endswith("raises.py:10: the plugin broke")


def test_a_check_that_loops_forever_is_stopped_by_the_time_limit(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grade, "TIME_LIMIT", 0.5)
    _, doc, _ = run(suite(tmp_path, ["hostile-loop"]), capsys)
    (result,) = asserts_of(doc)
    assert result["status"] == "error"
    assert "stopped after 0.5 s, its time limit" in result["reason"]
    assert asserts_of(doc, "two")[0]["status"] == "pass"


def test_cannot_evaluate_is_an_error_either_way(tmp_path: Path, capsys) -> None:
    _, doc, _ = run(suite(tmp_path, ["cannot-raise", "cannot-return"]), capsys)
    raised, returned = asserts_of(doc)
    assert (raised["status"], raised["reason"]) == ("error", "the grading service is down")
    assert (returned["status"], returned["reason"]) == ("error", "the reference file is missing")
