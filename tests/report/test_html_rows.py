"""The HTML report's table is built from typed rows: what a run's records say, bounded."""

from __future__ import annotations

from pathlib import Path

from skilleval.cli import run_cli
from skilleval.report import html
from skilleval.report.html_rows import PREVIEW_CHARS, AssertView, RowView, TrialView
from skilleval.results.load import load_run

SUITE = """
model: echo
prompts: ["{{q}}"]
tests:
  - {id: short, vars: {q: "hello"}, assert: [{type: contains, value: hello}]}
  - {id: long, vars: {q: "LONG"}, assert: [{type: contains, value: nope}]}
"""


def test_rows_are_typed_and_bound_what_they_embed(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.replace("LONG", "x" * (PREVIEW_CHARS + 5)), encoding="utf-8")
    out = tmp_path / "results.json"
    assert run_cli(["run", str(suite), "-q", "-o", str(out)]) == 1
    shown = html.context(load_run(out))
    short, long = shown["rows"]
    assert isinstance(short, RowView)
    assert (short.test_id, short.status, short.group_start) == ("short", "pass", False)
    assert (long.test_id, long.status, long.group_start) == ("long", "fail", True)
    [trial] = long.records
    assert isinstance(trial, TrialView)
    assert (len(trial.output), trial.output_cut, trial.output_chars) == (
        PREVIEW_CHARS,
        5,
        PREVIEW_CHARS + 5,
    )
    [check] = trial.asserts
    assert isinstance(check, AssertView)
    assert (check.type, check.status) == ("contains", "fail")
    assert shown["anchors"] == {"short": "t0", "long": "t1"}
