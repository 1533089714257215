"""Skill evaluation from the outside: arms, trigger accuracy, lift, reliability and gates."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from fakes import COMMIT_SKILL

from skilleval.cli import run_cli
from skilleval.suite.skills import load_skill

SKILL = COMMIT_SKILL

OTHER = """
---
name: haiku
description: Write a haiku about a topic.
---

Three lines, 5-7-5 syllables.
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def suite_text(positives: int, negatives: int, extra: str = "", arms: str = "") -> str:
    tests = []
    for i in range(positives):
        tests.append(f"""
  - id: change-{i}
    should_trigger: true
    prompt: "Write a commit message for change number {i}"
    assert:
      - type: regex
        value: "^feat: "
""")
    for i in range(negatives):
        tests.append(f"""
  - id: control-{i}
    should_trigger: false
    prompt: "What is {i} plus {i}?"
""")
    return f"""
version: 1
type: capability
skill: skill/SKILL.md
skills: [other/SKILL.md]
{arms}
{extra}
model:
  provider: scripted
  responses:
    - arm: router
      match: "commit message"
      output: commit-message
    - arm: on
      output: "feat: add the thing"
    - arm: routed
      output: "feat: add the thing"
    - arm: off
      output: "Sure! Here is a message about your change."
tests:{"".join(tests)}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / "skill" / "SKILL.md", SKILL)
    write(tmp_path / "other" / "SKILL.md", OTHER)
    return tmp_path


def run_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code = run_cli([*args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_lift_helps_with_six_clean_wins(project: Path, capsys) -> None:
    suite = write(project / "suite.yaml", suite_text(6, 3))
    code, doc = run_json(["run", str(suite)], capsys)
    assert code == 0
    lift = doc["lift"]
    assert (lift["n"], lift["b"], lift["c"]) == (6, 6, 0)
    assert lift["lift"] == 1.0
    assert lift["p_two_sided"] == pytest.approx(0.03125)
    assert lift["verdict"] == "helps"
    assert "p=" in lift["reason"]
    assert doc["summary"]["arms"]["on"]["pass_rate"] == 1.0
    assert doc["summary"]["arms"]["off"]["pass_rate"] == pytest.approx(3 / 9)


def test_trigger_accuracy_confusion_matrix_and_scores(project: Path, capsys) -> None:
    suite = write(project / "suite.yaml", suite_text(6, 3))
    _, doc = run_json(["run", str(suite)], capsys)
    trig = doc["trigger"]
    assert trig["accuracy"] == 1.0
    assert (trig["tp"], trig["tn"], trig["fp"], trig["fn"]) == (6, 3, 0, 0)
    assert trig["labels"] == ["commit-message", "haiku", "none"]
    assert trig["matrix"][0] == [6, 0, 0]
    assert trig["misrouted"] == []
    first = next(r for r in doc["records"] if r["test_id"] == "change-0")
    assert first["trigger"]["chosen"] == "commit-message"


def test_five_tests_are_underpowered_two_sided_and_the_gate_says_why(project: Path, capsys) -> None:
    suite = write(project / "suite.yaml", suite_text(5, 1, extra="gate: {lift: helps}"))
    code, doc = run_json(["run", str(suite)], capsys)
    assert doc["lift"]["verdict"] == "underpowered"
    assert code == 1
    assert any("lift" in r for r in doc["gate"]["reasons"])


def test_one_sided_sign_test_accepts_five_wins(project: Path, capsys) -> None:
    extra = "lift: {sidedness: one-sided}\ngate: {lift: helps}"
    suite = write(project / "suite.yaml", suite_text(5, 1, extra=extra))
    code, doc = run_json(["run", str(suite)], capsys)
    assert doc["lift"]["verdict"] == "helps"
    assert doc["lift"]["p_one_sided"] == pytest.approx(0.03125)
    assert code == 0


def test_trigger_accuracy_gate(project: Path, capsys) -> None:
    text = suite_text(6, 2, extra='gate: {trigger_accuracy: ">= 0.99"}')
    text = text.replace(
        'match: "commit message"', 'match: "commit message for change number [0-2]"'
    )
    suite = write(project / "suite.yaml", text)
    code, doc = run_json(["run", str(suite)], capsys)
    assert doc["trigger"]["accuracy"] == pytest.approx(5 / 8)
    assert sorted(doc["trigger"]["misrouted"]) == ["change-3", "change-4", "change-5"]
    assert code == 1


def test_arms_on_only_skips_the_baseline(project: Path, capsys) -> None:
    suite = write(project / "suite.yaml", suite_text(2, 1, arms="arms: [on]"))
    _, doc = run_json(["run", str(suite)], capsys)
    assert {r["arm"] for r in doc["records"]} == {"on"}
    assert doc["lift"] is None


def test_routed_arm_loads_the_skill_only_when_picked(project: Path, capsys) -> None:
    suite = write(project / "suite.yaml", suite_text(2, 1, arms="arms: [on, off, routed]"))
    _, doc = run_json(["run", str(suite)], capsys)
    routed = {r["test_id"]: r for r in doc["records"] if r["arm"] == "routed"}
    assert routed["change-0"]["messages"][0]["role"] == "system"
    assert "commit-message" in routed["change-0"]["messages"][0]["content"]
    assert routed["control-0"]["messages"][0]["role"] == "user"


def test_off_arm_never_sees_the_skill(project: Path, capsys) -> None:
    suite = write(project / "suite.yaml", suite_text(1, 0))
    _, doc = run_json(["run", str(suite)], capsys)
    off = next(r for r in doc["records"] if r["arm"] == "off")
    on = next(r for r in doc["records"] if r["arm"] == "on")
    assert [m["role"] for m in off["messages"]] == ["user"]
    assert on["messages"][0]["role"] == "system"
    assert on["messages"][1] == off["messages"][0]


def test_skill_edit_reruns_only_the_on_arm(project: Path, capsys) -> None:
    suite = write(project / "suite.yaml", suite_text(3, 1))
    _, first = run_json(["run", str(suite)], capsys)
    write(project / "skill" / "SKILL.md", SKILL.replace("one line", "a single line"))
    _, second = run_json(["run", str(suite)], capsys)
    on_calls = sum(1 for r in second["records"] if r["arm"] == "on" and not r["stats"]["cached"])
    off_calls = sum(1 for r in second["records"] if r["arm"] == "off" and not r["stats"]["cached"])
    assert (on_calls, off_calls) == (4, 0)
    assert first["skill"]["digest"] != second["skill"]["digest"]


def test_distribution_mode_reports_pass_at_k(project: Path, capsys) -> None:
    suite = write(
        project / "suite.yaml",
        """
        version: 1
        type: capability
        decoding: {mode: distribution, temperature: 0.7, seed: 10}
        trials: 3
        model:
          provider: scripted
          responses:
            - id: flaky
              outputs: ["ok", "no", "ok"]
            - id: steady
              output: "ok"
        tests:
          - {id: flaky, prompt: a, assert: [{type: equals, value: ok}]}
          - {id: steady, prompt: b, assert: [{type: equals, value: ok}]}
    """,
    )
    _, doc = run_json(["run", str(suite)], capsys)
    rel = doc["reliability"]["default"]
    flaky = next(t for t in rel["tests"] if t["name"] == "flaky")
    assert flaky["n"] == 3
    assert flaky["c"] == 2
    assert rel["flaky"] == ["flaky"]
    seeds = sorted({r["trial"] for r in doc["records"]})
    assert seeds == [0, 1, 2]


def test_regression_gate_sets_the_exit_code(project: Path, capsys) -> None:
    text = suite_text(3, 1).replace("type: capability", "type: regression\nthreshold: 0.9")
    text = text.replace('output: "feat: add the thing"', 'output: "nope"', 1)
    suite = write(project / "suite.yaml", text)
    code, doc = run_json(["run", str(suite)], capsys)
    assert doc["summary"]["arms"]["on"]["pass_rate"] < 0.9
    assert code == 1


def test_skill_file_parses_frontmatter_and_body(project: Path) -> None:
    skill = load_skill(project / "skill" / "SKILL.md")
    assert skill.name == "commit-message"
    assert "Conventional Commits" in skill.description
    assert skill.body.strip().startswith("Reply with one line")
    assert skill.name in skill.system_prompt()


def test_terminal_report_shows_lift_trigger_and_decoding(project: Path, capsys) -> None:
    suite = write(project / "suite.yaml", suite_text(6, 3))
    run_cli(["run", str(suite)])
    err = capsys.readouterr().err
    assert "lift +1.00" in err
    assert "exact McNemar" in err
    assert "trigger accuracy 100%" in err
    assert "greedy, seed 0" in err


SCORED = """
version: 1
type: capability
skill: skill/SKILL.md
trigger: {calibrate: true}
model:
  provider: scripted
  responses:
    - {arm: router, id: "(content-free)", scores: {commit-message: -1.0, none: -0.2}}
    - {arm: router, id: p1, scores: {commit-message: -0.5, none: -0.9}}
    - {arm: router, id: p2, scores: {commit-message: -0.8, none: -0.6}}
    - {arm: router, id: n1, scores: {commit-message: -2.0, none: -0.1}}
    - {arm: router, id: n2, output: commit-message, scores: {commit-message: -1.5, none: -0.5}}
    - {output: "feat: x"}
tests:
  - {id: p1, prompt: "Write a commit message for the parser fix", should_trigger: true}
  - {id: p2, prompt: "Commit message for renaming a module", should_trigger: true}
  - {id: n1, prompt: "What is 2 plus 2?", should_trigger: false}
  - {id: n2, prompt: "Name a colour", should_trigger: false}
"""


def test_scripted_scores_give_the_auroc_and_calibrated_figures_in_every_report(
    project: Path, capsys
) -> None:
    suite = write(project / "suite.yaml", SCORED)
    _, doc = run_json(["run", str(suite)], capsys)
    trigger = doc["trigger"]
    assert trigger["recall"] == 0.5  # p2 went to none
    assert trigger["fp"] == 1  # n2's scripted output overrides its own scores
    assert trigger["auroc"]["value"] == 1.0
    assert (trigger["auroc"]["positives"], trigger["auroc"]["negatives"]) == (2, 2)
    assert trigger["calibrated"]["margin"] == -0.8
    assert trigger["calibrated"]["recall"] == 1.0
    assert trigger["calibrated"]["fp"] == 0
    assert "router" not in trigger  # a scripted router is written, not measured
    by_id = {r["test_id"]: r["trigger"] for r in doc["records"] if r["arm"] == "on"}
    assert by_id["p2"]["skill_margin"] == -0.2
    run_cli(["run", str(suite)])
    err = capsys.readouterr().err
    assert "trigger AUROC 1.00 [" in err
    assert "calibrated (content-free margin -0.80 subtracted): accuracy 100% (4/4)" in err
    latest = Path(os.environ["SKILLEVAL_HOME"]) / "runs" / "latest"
    run_cli(["report", str(latest), "-o", str(project / "r.md"), "-o", str(project / "r.html")])
    md = (project / "r.md").read_text(encoding="utf-8")
    assert "**Trigger AUROC**: trigger AUROC 1.00" in md
    assert "**Calibrated triggering**: calibrated" in md
    html = (project / "r.html").read_text(encoding="utf-8")
    assert 'id="trigger-auroc" data-metric="trigger.auroc.value" data-value="1.0">1.00<' in html
    assert 'data-metric="trigger.calibrated.recall" data-value="1.0"' in html


def test_a_scores_only_rule_answers_routing_requests_only(project: Path, capsys) -> None:
    text = SCORED.replace('    - {output: "feat: x"}\n', "").replace(
        "{arm: router, id: p1,", "{id: p1,"
    )
    suite = write(project / "suite.yaml", text)
    _, doc = run_json(["run", str(suite)], capsys)
    p1 = next(r for r in doc["records"] if r["test_id"] == "p1" and r["arm"] == "on")
    assert p1["status"] == "error"
    assert "answers routing requests; add `output:`" in p1["error"]
