"""Honest display: a capability suite reports rather than passes, the headline carries the
trigger recall and the lift verdict, the judge warning and the reliability line.

Every run here is a real ``skilleval run`` of a scripted suite; the outputs are read back from
the files the run wrote and the command line's stderr.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from fakes import COMMIT_SKILL

from skilleval.cli import run_cli

REPORTED = "REPORTED (capability suite, no gate)"

SKILL = COMMIT_SKILL

SKILL_SUITE = """
version: 1
type: {type}
skill: skill/SKILL.md
arms: [off, on]
decoding: {{mode: distribution, temperature: 0.7, seed: 3}}
trials: 3
{gate}
model:
  provider: scripted
  responses:
    - arm: router
      match: "commit message for a (fix|docs)"
      output: commit-message
    - arm: on
      id: flaky
      outputs: ["feat: one", "no idea", "feat: three"]
    - arm: on
      output: "feat: add the thing"
    - arm: off
      output: "Sure! Here is a message."
tests:
  - {{id: fix, should_trigger: true, prompt: "Write a commit message for a fix", assert: [{{type: regex, value: "^feat: "}}]}}
  - {{id: docs, should_trigger: true, prompt: "Write a commit message for a docs change", assert: [{{type: regex, value: "^feat: "}}]}}
  - {{id: flaky, should_trigger: true, prompt: "Write a commit message for a refactor", assert: [{{type: regex, value: "^feat: "}}]}}
  - {{id: misrouted, should_trigger: true, prompt: "Describe this change in one line", assert: [{{type: regex, value: "^feat: "}}]}}
  - {{id: control, should_trigger: false, prompt: "What is 1 plus 1?"}}
"""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    skill = tmp_path / "skill" / "SKILL.md"
    skill.parent.mkdir()
    skill.write_text(textwrap.dedent(SKILL).lstrip(), encoding="utf-8")


def skill_suite(kind: str = "capability", gate: str = "") -> Path:
    path = Path("suite.yaml")
    path.write_text(SKILL_SUITE.format(type=kind, gate=gate), encoding="utf-8")
    return path


def plain_suite(model: str, judge: str | None) -> Path:
    path = Path("plain.yaml")
    judge_line = f"judge: {judge}\n" if judge else ""
    path.write_text(
        "version: 1\ntype: capability\n"
        + f"model: {model}\n"
        + judge_line
        + textwrap.dedent(
            """
            prompts: ["{{q}}"]
            tests:
              - id: a
                vars: {q: Paris}
                assert:
                  - {type: llm-rubric, value: Names Paris.}
                  - {type: icontains, value: paris}
            """
        ),
        encoding="utf-8",
    )
    return path


class Ran:
    """What one ``skilleval run`` left behind: exit code, stderr, and its output files."""

    def __init__(self, suite: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> None:
        self.code = run_cli(["run", str(suite), "-o", "out.md", "-o", "out.xml", *extra])
        self.err = capsys.readouterr().err
        run_dir = Path(os.environ["SKILLEVAL_HOME"]) / "runs" / "latest"
        self.doc = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
        self.html = (run_dir / "report.html").read_text(encoding="utf-8")
        self.markdown = Path("out.md").read_text(encoding="utf-8")
        self.junit = ET.parse("out.xml").getroot()

    @property
    def headline(self) -> str:
        return self.err.splitlines()[-2]  # the last line is "results: RUN_DIR"

    @property
    def badge(self) -> str:
        found = re.search(r'id="verdict" data-value="([^"]*)">([^<]*)<', self.html)
        assert found is not None
        return found.group(2)

    @property
    def junit_verdicts(self) -> set[str]:
        return {
            p.get("value", "") for p in self.junit.iter("property") if p.get("name") == "verdict"
        }


def test_a_capability_suite_without_a_gate_reports_in_every_format(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran = Ran(skill_suite(), capsys)
    assert ran.code == 0  # exit codes are unchanged: a capability suite fails only on errors
    assert ran.doc["gate"] == {
        "type": "capability",
        "passed": True,
        "exit_code": 0,
        "checks": [],
        "reasons": [],
    }
    assert ran.headline.startswith(REPORTED)
    assert ran.badge == REPORTED
    assert "tone-neutral" in ran.html.split('id="verdict"')[0].rsplit("<span", 1)[1]
    assert ran.markdown.startswith(f"## ℹ️ skilleval {REPORTED}: `suite.yaml`")
    assert ran.junit_verdicts == {REPORTED}
    for text in (ran.headline, ran.markdown, ran.badge):
        assert "PASSED" not in text


def test_the_headline_carries_trigger_recall_and_lift_verdict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran = Ran(skill_suite(), capsys)
    trigger, lift = ran.doc["trigger"], ran.doc["lift"]
    # Three of the four tests meant to trigger were routed to the skill.
    assert (trigger["tp"], trigger["fn"]) == (2, 2)
    facts = f"trigger recall 0.50 (2/4) · lift {lift['verdict']}"
    assert ran.headline == f"{REPORTED} · {facts}"
    assert ran.markdown.splitlines()[0].endswith(f"· {facts}")
    header = ran.html.split('id="headline-facts"')[1].split("</div>")[0]
    assert 'data-fact="trigger-recall">trigger recall 0.50 (2/4)</span>' in header
    assert f'data-fact="lift">lift {lift["verdict"]}</span>' in header


def test_a_gate_that_was_checked_still_passes(capsys: pytest.CaptureFixture[str]) -> None:
    capability = Ran(skill_suite(gate='gate: {pass_rate: ">= 0.1"}'), capsys)
    assert capability.code == 0
    assert capability.headline.startswith("capability gate PASSED · trigger recall")
    assert capability.badge == "PASSED"
    assert capability.junit_verdicts == {"PASSED"}
    regression = Ran(skill_suite("regression", gate="threshold: 0.1"), capsys)
    assert regression.code == 0
    assert regression.headline.startswith("regression gate PASSED · trigger recall")
    assert regression.markdown.startswith("## ✅ skilleval PASSED")
    failed = Ran(skill_suite("regression"), capsys)
    assert failed.code == 1
    assert failed.headline.startswith("regression gate FAILED · trigger recall 0.50 (2/4)")
    assert failed.headline.endswith("required >= 1.0")


def test_reliability_line_shows_pass_at_k_and_pass_hat_k_for_the_same_k(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran = Ran(skill_suite(), capsys)
    lines = {
        line.split("]")[0] + "]": line for line in ran.err.splitlines() if "reliability" in line
    }
    on = ran.doc["reliability"]["on"]["aggregate"]
    k3 = next(p for p in on if p["k"] == 3)
    at1 = next(p for p in on if p["k"] == 1)["pass_at_k"]["value"]
    assert lines["[on]"] == (
        f"[on] reliability pass@1 {at1:.2f} · pass@3 {k3['pass_at_k']['value']:.2f} · "
        f"pass^3 {k3['pass_hat_k']['value']:.2f} ({k3['tests_counted']} tests) · flaky: flaky"
    )
    assert re.fullmatch(
        r"\[off\] reliability pass@1 \d\.\d\d · pass@3 \d\.\d\d · pass\^3 \d\.\d\d \(\d+ tests\)",
        lines["[off]"],
    )


JUDGE_WARNING = "warning: the judge is the generator model"


def test_the_judge_warning_appears_when_the_judge_is_the_generator(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for judge in (None, "echo"):
        ran = Ran(plain_suite("echo", judge), capsys)
        assert ran.doc["judge"]["same_as_generator"] is True
        assert JUDGE_WARNING in ran.err
        assert "grades its own outputs" in ran.markdown
        assert "grades its own outputs" in ran.html


def test_no_judge_warning_when_another_model_judges(capsys: pytest.CaptureFixture[str]) -> None:
    scripted = '{provider: scripted, default: "Paris."}'
    ran = Ran(plain_suite(scripted, "echo"), capsys)
    assert ran.doc["judge"]["same_as_generator"] is False
    for text in (ran.err, ran.markdown, ran.html):
        assert "grades its own outputs" not in text
        assert JUDGE_WARNING not in text
    overridden = Ran(plain_suite("echo", None), capsys, "--judge-model", scripted)
    assert overridden.doc["judge"]["same_as_generator"] is False
    assert JUDGE_WARNING not in overridden.err


def test_the_same_endpoint_spelled_another_way_is_the_generator(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`judge:` names the model's own endpoint with a trailing slash: the model grades itself.

    Nothing listens on 127.0.0.1:9, so generation is an error (the up-front check that would
    stop the run is switched off here); the identities (endpoint and model name) are read
    without a call.
    """
    from skilleval.engine.openai import OpenAIProvider

    monkeypatch.setattr(OpenAIProvider, "check", lambda self: None)
    endpoint = "{provider: openai, base_url: 'http://127.0.0.1:9/v1%s', model: m}"
    ran = Ran(plain_suite(endpoint % "", endpoint % "/"), capsys)
    assert ran.code == 3
    assert ran.doc["judge"]["model"] == ran.doc["environment"]["model"]
    assert ran.doc["judge"]["same_as_generator"] is True
    assert JUDGE_WARNING in ran.err
