"""The HTML report's cards are typed views of the run: model, arms, triggering, calibration."""

from __future__ import annotations

from pathlib import Path

from skilleval.cli import run_cli
from skilleval.report import html
from skilleval.report.html_cards import (
    ArmCard,
    MatrixCell,
    Meter,
    ModelCard,
    Sentence,
    TriggerCard,
    TriggerRow,
)
from skilleval.results.load import load_run

SUITE = """\
version: 1
type: capability
skill: skill/SKILL.md
trigger: {calibrate: true}
model:
  provider: scripted
  default: ok
  responses:
    - {id: yes, scores: {commit-message: -0.5, none: -0.9}}
    - {id: also, scores: {commit-message: -0.8, none: -0.6}}
    - {id: no, scores: {commit-message: -2.0, none: -0.1}}
    - {id: "(content-free)", scores: {commit-message: -1.0, none: -0.2}}
tests:
  - {id: yes, prompt: Commit message for the parser fix, should_trigger: true}
  - {id: also, prompt: Commit message for a rename, should_trigger: true}
  - {id: no, prompt: What is 2 plus 2?, should_trigger: false}
"""


def test_the_cards_are_typed_views_of_the_run(tmp_path: Path) -> None:
    (tmp_path / "skill").mkdir()
    (tmp_path / "skill" / "SKILL.md").write_text(
        "---\nname: commit-message\ndescription: Write a commit message.\n---\n\nOne line.\n",
        encoding="utf-8",
    )
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    out = tmp_path / "results.json"
    run_cli(["run", str(suite), "-q", "-o", str(out)])
    shown = html.context(load_run(out))
    model = shown["model"]
    assert isinstance(model, ModelCard)
    assert (model.kind, model.error) == ("scripted", None)
    cards = shown["arm_cards"]
    assert [type(c) for c in cards] == [ArmCard, ArmCard]
    assert all(isinstance(c.overall, Meter) for c in cards)
    assert [c.overall.judged + c.overall.errors for c in cards] == [3, 3]
    trigger = shown["trigger"]
    assert isinstance(trigger, TriggerCard)
    assert trigger.labels == ("commit-message", "none")
    # Expected skill: chosen once of twice; expected none: chosen none once.
    counts = [[c.count for c in row.cells] for row in trigger.grid]
    assert counts == [[1, 1], [0, 1]]
    assert all(isinstance(c, MatrixCell) for row in trigger.grid for c in row.cells)
    assert [c.diag for c in trigger.grid[0].cells] == [True, False]
    assert trigger.misrouted == ("also",)
    assert [type(t) for t in trigger.tests] == [TriggerRow] * 3
    assert isinstance(trigger.auroc, Sentence)
    assert isinstance(trigger.calibrated, Sentence)
    assert trigger.calibrated.text.startswith("calibrated")
    assert shown["judge"] is None
    assert shown["overfit"] is None
