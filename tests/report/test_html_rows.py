"""The HTML report's table is built from typed rows: what a run's records say, bounded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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


def test_a_large_runs_page_data_says_what_its_rows_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past INLINE_ROWS the table is data built straight from the rows: the same facts, the
    same bounds, as the typed rows of a small page."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.replace("LONG", "x" * (PREVIEW_CHARS + 5)), encoding="utf-8")
    out = tmp_path / "results.json"
    assert run_cli(["run", str(suite), "-q", "-o", str(out)]) == 1
    run = load_run(out)
    small = html.context(run)
    monkeypatch.setattr(html, "INLINE_ROWS", 0)
    large = html.context(run)
    assert large["rows"] == []
    assert small["table_data"] is None
    assert (large["row_count"], large["test_count"], large["anchors"]) == (
        small["row_count"],
        small["test_count"],
        small["anchors"],
    )
    fields = json.loads(large["table_data"]["fields"])
    rows = [dict(zip(fields, r, strict=True)) for r in json.loads(large["table_data"]["rows"])]
    details = json.loads(large["table_data"]["details"])
    for row, trials, shown in zip(rows, details, small["rows"], strict=True):
        assert (row["test"], row["arm"], row["status"], row["group"]) == (
            shown.test_id,
            shown.arm,
            shown.status,
            int(shown.group_start),
        )
        assert (row["why"], row["score"], row["lat"]) == (
            list(shown.reasons),
            f"{shown.score:.2f}",
            shown.latency,
        )
        [trial] = trials
        [view] = shown.records
        assert (trial["output"], trial["cut"], trial["chars"]) == (
            view.output,
            view.output_cut,
            view.output_chars,
        )
        assert [a[:5] + a[7:] for a in trial["asserts"]] == [
            [
                a.type,
                a.metric,
                a.from_default,
                a.tier,
                a.status,
                a.reason,
                a.error,
                a.details,
                a.where,
            ]
            for a in view.asserts
        ]
    assert rows[1]["group"] == 1
    assert details[1][0]["cut"] == 5
