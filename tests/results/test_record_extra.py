"""A record's agent run and test metadata are typed, and written as the ``extra`` object they
always were: a run through the CLI, read back, gives the same JSON."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from skilleval.cli import run_cli
from skilleval.results.agent import AgentBlock
from skilleval.results.codec import encode
from skilleval.results.load import load_run

SUITE = """
model:
  provider: scripted
  responses:
    - {match: "Result of note", output: '{"thought": "d", "action": {"final": "Saved."}}'}
    - {id: notes, output: '{"thought": "w", "action": {"tool": "note", "arguments": {"text": "milk"}}}'}
    - {id: plain, output: 'plain answer'}
tests:
  - id: notes
    metadata: {owner: alice, tags: [a, b]}
    prompt: "Add milk"
    tools:
      - {name: note, parameters: {type: object}, mock: {default: ok}}
    assert: [{type: tool-called, value: note}]
  - id: plain
    prompt: "Just answer"
    assert: [{type: contains, value: plain}]
"""


def test_agent_and_metadata_are_typed_and_their_json_is_the_extra_object(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(SUITE), encoding="utf-8")
    out = tmp_path / "results.json"
    assert run_cli(["run", str(suite), "-q", "-o", str(out)]) == 0
    written = json.loads(out.read_text(encoding="utf-8"))
    notes, plain = load_run(out).records
    assert isinstance(notes.agent, AgentBlock)
    assert notes.metadata == {"owner": "alice", "tags": ["a", "b"]}
    assert [s.tool for s in notes.agent.steps] == ["note", None]
    assert notes.agent.turns[0].steps == (0, 1)
    assert notes.agent.totals.tool_calls == 1
    assert (plain.agent, plain.metadata, plain.extra) == (None, None, None)
    # Read back and written again, the records are the same JSON, key order included.
    assert [encode(r) for r in (notes, plain)] == written["records"]
    assert list(written["records"][0]["extra"]) == ["agent", "metadata"]
    assert list(written["records"][0]["extra"]["agent"]) == [
        "final",
        "error",
        "turns",
        "steps",
        "totals",
    ]
    assert "extra" not in written["records"][1]
