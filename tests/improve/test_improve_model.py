"""``skilleval improve`` end to end on the embedded model, on the commit-message example and
its shipped candidates. Only properties are checked, never the model's text: greedy replies
differ across CPUs and builds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from skilleval.cli import run_cli

pytestmark = pytest.mark.model

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "commit-message"


def test_the_example_runs_and_never_accepts_the_destructive_candidate(tmp_path: Path) -> None:
    example = tmp_path / "commit-message"
    shutil.copytree(EXAMPLE, example)
    skill = example / "skill" / "SKILL.md"
    before = skill.read_bytes()
    args = [
        "improve",
        str(example / "suite.yaml"),
        "--candidates",
        str(example / "candidates"),
    ]
    code = run_cli([*args, "-o", str(tmp_path / "a")])
    assert code in (0, 1)
    doc = json.loads((tmp_path / "a" / "improve.json").read_text(encoding="utf-8"))
    assert doc["version"] == 1
    names = {c["name"]: c for c in doc["candidates"]}
    assert set(names) == {"bare-bones", "subject-first"}
    assert names["bare-bones"]["status"] != "accepted"
    assert "bare-bones" not in doc["decision"]["edits"]
    for cand in names.values():
        if cand["figures"] is not None:
            assert set(cand["figures"]) == {"train", "selection", "confirm"}
    # 11 tests leave 4 for confirmation: too few for any decision, and the report says how
    # many a decision would need.
    assert doc["split"]["sizes"]["confirm"] < doc["sizes"]["smallest_decidable"]
    assert doc["decision"]["accepted"] is False
    assert "no edit accepted" in doc["decision"]["summary"]
    assert (
        f"{doc['sizes']['confirmation_tests_needed']} confirmation tests"
        in (doc["decision"]["summary"])
    )
    assert skill.read_bytes() == before
    # The same inputs, the same decision, byte for byte (the second run from the cache).
    assert run_cli([*args, "-o", str(tmp_path / "b")]) == code
    assert (tmp_path / "a" / "improve.json").read_bytes() == (
        tmp_path / "b" / "improve.json"
    ).read_bytes()
