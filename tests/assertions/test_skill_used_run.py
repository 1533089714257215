"""skill-used in a run: it reads the router's decision for each test, in every arm."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from skilleval.cli import run_cli

SUITE = """
version: 1
type: capability
skill: skill/SKILL.md
model:
  provider: scripted
  default: ok
  responses:
    - {arm: router, id: fix, output: commit-message}
tests:
  - id: fix
    prompt: Commit message for the parser fix
    should_trigger: true
    assert: [{type: skill-used, value: commit-message}]
  - id: joke
    prompt: Tell me a joke
    should_trigger: false
    assert:
      - {type: not-skill-used, value: commit-message}
      - {type: skill-used, value: commit-message}
  - id: plain
    prompt: Name a colour
    assert: [{type: skill-used, value: commit-message}]
"""


def test_skill_used_follows_the_router(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    skill = tmp_path / "skill" / "SKILL.md"
    skill.parent.mkdir()
    skill.write_text(
        "---\nname: commit-message\ndescription: Write a commit message.\n---\n\nOne line.\n",
        encoding="utf-8",
    )
    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(SUITE).lstrip(), encoding="utf-8")
    code = run_cli(["run", str(suite), "--json", "--no-cache"])
    records = json.loads(capsys.readouterr().out)["records"]
    seen = {(r["test_id"], r["arm"]): [a["status"] for a in r["asserts"]] for r in records}
    for arm in ("on", "off"):
        assert seen[("fix", arm)] == ["pass"]
        assert seen[("joke", arm)] == ["pass", "fail"]
        # No should_trigger and no routed arm: no decision to read.
        assert seen[("plain", arm)] == ["error"]
    assert code == 3
