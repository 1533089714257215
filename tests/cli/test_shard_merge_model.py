"""Shards on the embedded model, sampled: each test draws the same tokens in its shard as in
the whole run (seeds follow a test's trial, never its position), so the merge equals the
whole run. Both sides run on this machine and build, so their bytes may be compared."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from skilleval.cli import run_cli

pytestmark = pytest.mark.model

SUITE = """
version: 1
model: default
trials: 2
decoding: {mode: distribution, temperature: 0.9, seed: 3, max_tokens: 8}
prompts: ["Answer in one word. {{q}}"]
tests:
  - id: sky
    vars: {q: "What colour is the sky?"}
    assert: [{type: icontains, value: blue}]
  - id: grass
    vars: {q: "What colour is fresh grass on a sunny spring morning in the meadow?"}
    assert: [{type: icontains, value: green}]
  - id: snow
    vars: {q: "What colour is snow?"}
    assert: [{type: icontains, value: white}]
"""


def test_sampled_shards_on_the_embedded_model_merge_into_the_whole_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(SUITE).lstrip(), encoding="utf-8")

    def run(args: list[str], home: Path) -> int:
        monkeypatch.setenv("SKILLEVAL_HOME", str(home))
        return run_cli([*args, "-q", "--no-cache"])

    whole_code = run(["run", str(suite)], tmp_path / "whole")
    parts = []
    for k in (1, 2):
        assert run(["run", str(suite), "--shard", f"{k}/2"], tmp_path / f"s{k}") in (0, 1)
        parts.append(str((tmp_path / f"s{k}" / "runs" / "latest").resolve()))
    merged = tmp_path / "merged"
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "m"))
    assert run_cli(["merge", *parts, "-o", str(merged), "-q"]) == whole_code
    whole = json.loads((tmp_path / "whole" / "runs" / "latest" / "results.json").read_text())
    done = json.loads((merged / "results.json").read_text())

    def key(r: dict) -> tuple:
        return (r["test_id"], r["arm"], r["trial"], r["status"], r["score"], r["output"])

    assert [key(r) for r in whole["records"]] == [key(r) for r in done["records"]]
    # The two trials of a test were sampled with different seeds, so something varied
    # somewhere, and it varied the same way in the shards.
    outputs = {r["output"] for r in whole["records"]}
    assert len(outputs) > 1
    for block in ("summary", "reliability", "gate"):
        assert whole[block] == done[block], block
