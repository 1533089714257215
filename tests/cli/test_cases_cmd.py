"""``skilleval cases`` on runs of a scripted suite: failures in, candidate tests out."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
from fakes import COMMIT_SKILL
from ruamel.yaml import YAML

from skilleval.cli import run_cli

SUITE = """
# The suite the cases come from.
version: 1
type: capability
skill: skill/SKILL.md
arms: [off, on]
trials: 2
decoding: {mode: distribution, temperature: 0.7, seed: 1}
model:
  provider: scripted
  responses:
    - arm: router
      match: "haiku"
      output: commit-message
    - arm: router
      match: "tests pass"
      output: none
    - arm: router
      match: "(?i)commit message"
      output: commit-message
    - arm: on
      match: "the parser$"
      output: "feat: add the thing"
    - arm: on
      output: "fix: repair the parser"
    - arm: off
      output: "Sure! Here is a message."
judge:
  provider: scripted
  responses:
    - match: "ZEBRA"
      output: "this is not a grade"
    - match: "OKAPI"
      output: '{"reason": "It names Milan, not Rome.", "score": 1, "pass": false}'
defaultTest:
  assert:
    - type: not-icontains
      value: sure
tests:
  - id: fix
    should_trigger: true
    prompt: "Write a commit message for {{change}}"
    vars:
      change: a fix to the parser
      context: file://notes/context.txt
    assert:
      - type: regex
        value: "^fix"
        weight: 2
        metric: conventional
      - type: icontains
        value: thing
  - id: tests
    should_trigger: true
    prompt: "Write a commit message: I made the tests pass again"
    assert:
      - type: icontains
        value: tests
  - id: graded
    should_trigger: true
    prompt: "Please write me the commit message for the new parser change"
    assert:
      - type: llm-rubric
        value: "ZEBRA the message names the parser"
  - id: copied
    should_trigger: true
    prompt: "A commit message for the version bump, please"
    assert:
      - type: llm-rubric
        value: "OKAPI the message is short"
  - id: poem
    should_trigger: false
    prompt: "Write a haiku about autumn"
  - id: fix-again
    should_trigger: true
    prompt: "Write a commit message for a fix to the parser!"
    assert:
      - type: regex
        value: "^fix"
"""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    skill = tmp_path / "skill" / "SKILL.md"
    skill.parent.mkdir()
    skill.write_text(textwrap.dedent(COMMIT_SKILL).lstrip(), encoding="utf-8")
    notes = tmp_path / "notes" / "context.txt"
    notes.parent.mkdir()
    notes.write_text("the parser lives in src/parse.py\n", encoding="utf-8")
    Path("suite.yaml").write_text(SUITE, encoding="utf-8")


def latest_run() -> Path:
    return Path(os.environ["SKILLEVAL_HOME"]) / "runs" / "latest"


def run(suite: str, capsys: pytest.CaptureFixture[str]) -> int:
    code = run_cli(["run", suite, "-q", "--no-judge-check"])
    capsys.readouterr()
    return code


def cases(
    capsys: pytest.CaptureFixture[str], *args: str, code: int = 0
) -> tuple[dict[str, Any], str]:
    got = run_cli(["cases", "--json", *args])
    out = capsys.readouterr()
    assert got == code, out.err
    return json.loads(out.out), out.err


def parse(text: str) -> Any:
    return YAML(typ="safe").load(text)


def at(test_id: str) -> str:
    """Where SUITE writes a test."""
    return f"suite.yaml:{SUITE.split(chr(10)).index(f'  - id: {test_id}') + 1}:5"


def by_id(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in doc["cases"]}


def test_a_misrouted_prompt_becomes_a_should_trigger_case(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run("suite.yaml", capsys)
    doc, _ = cases(capsys, str(latest_run()))
    found = by_id(doc)
    missed = found["tests/on/0"]
    assert missed["kinds"] == ["routing", "output"]
    assert missed["test"]["should_trigger"] is True
    assert missed["test"]["prompt"] == "Write a commit message: I made the tests pass again"
    assert missed["why"] == "routed to none where the skill was wanted; failed icontains"
    poem = found["poem/on/0"]
    assert poem["kinds"] == ["routing"]
    assert poem["test"]["should_trigger"] is False
    assert "assert" not in poem["test"]
    # One routing decision per test, though each of its records carries it.
    assert poem["also"] == []
    # Routed right, so no routing case for the others.
    assert {c["id"] for c in doc["cases"] if "routing" in c["kinds"]} == {
        "tests/on/0",
        "poem/on/0",
    }


def test_a_failing_output_becomes_a_case_with_only_the_failed_assertions_as_written(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run("suite.yaml", capsys)
    doc, _ = cases(capsys, str(latest_run()))
    case = by_id(doc)["fix/on/0"]
    # `icontains thing` passed on "feat: add the thing"; the regex failed and is copied
    # with its weight and metric, as the suite writes it.
    assert case["test"]["assert"] == [
        {"type": "regex", "value": "^fix", "weight": 2, "metric": "conventional"}
    ]
    assert case["test"]["vars"] == {
        "change": "a fix to the parser",
        "context": "file://notes/context.txt",
    }
    assert case["test"]["metadata"]["tags"] == ["from-failure"]
    assert case["source"] == {"test": "fix", "arm": "on", "trial": 0, "where": at("fix")}
    assert case["also"] == [{"test": "fix", "arm": "on", "trial": 1}]
    assert case["test"]["metadata"]["from"]["run"] == latest_run().resolve().name
    # The off arm fails `not-icontains sure` everywhere: the baseline is not a case.
    assert all(c["source"]["arm"] == "on" for c in doc["cases"])


def test_the_off_arm_is_read_when_asked_and_a_default_assertion_is_copied_in(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run("suite.yaml", capsys)
    doc, _ = cases(capsys, str(latest_run()), "--arm", "off")
    case = by_id(doc)["fix/off/0"]
    # "Sure! Here is a message." fails the default assertion and both of the test's own.
    assert case["test"]["assert"] == [
        {"type": "not-icontains", "value": "sure"},
        {"type": "regex", "value": "^fix", "weight": 2, "metric": "conventional"},
        {"type": "icontains", "value": "thing"},
    ]
    assert case["test"]["options"] == {"disableDefaultAsserts": True}


def test_judge_errors_and_copied_examples_are_notes_not_cases(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run("suite.yaml", capsys)
    doc, _ = cases(capsys, str(latest_run()))
    sources = {c["source"]["test"] for c in doc["cases"]}
    assert "graded" not in sources
    assert "copied" not in sources
    kinds = {(n["test"], n["arm"], n["trial"]): n["kind"] for n in doc["notes"]}
    assert kinds[("graded", "on", 0)] == "judge-error"
    assert kinds[("copied", "on", 0)] == "copied-example"
    assert all(n["arm"] == "on" for n in doc["notes"])


def test_a_duplicate_of_another_test_is_flagged_and_the_source_is_not(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run("suite.yaml", capsys)
    doc, _ = cases(capsys, str(latest_run()))
    found = by_id(doc)
    flags = found["fix/on/0"]["flags"]
    # fix-again differs from fix by a "!": the same request once punctuation goes.
    assert [f["code"] for f in flags] == ["duplicate"]
    assert flags[0]["other"] == f"test 'fix-again' ({at('fix-again')})"
    assert found["poem/on/0"]["flags"] == []
    assert found["tests/on/0"]["flags"] == []


@pytest.mark.parametrize(
    ("other", "codes"),
    [
        ("Write a commit message for a fix to the parser module", ["near-duplicate"]),
        ("Write a commit message for a fix to the tokenizer in the lexer", []),
    ],
)
def test_a_near_duplicate_is_flagged_from_lints_similarity(
    other: str, codes: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    text = SUITE.replace("Write a commit message for a fix to the parser!", other)
    Path("suite.yaml").write_text(text, encoding="utf-8")
    run("suite.yaml", capsys)
    doc, _ = cases(capsys, str(latest_run()))
    flags = by_id(doc)["fix/on/0"]["flags"]
    assert [f["code"] for f in flags] == codes
    if codes:
        # All 10 words of one in the 11 of the other: difflib's ratio 20/21, above lint's 0.9.
        assert flags[0]["similarity"] == pytest.approx(20 / 21, abs=1e-4)


def test_a_case_that_quotes_the_skill_is_flagged_by_lints_leakage_check(
    capsys: pytest.CaptureFixture[str],
) -> None:
    quoting = "Write a Conventional Commits message for a described code change: tests pass"
    text = SUITE.replace("Write a commit message: I made the tests pass again", quoting)
    Path("suite.yaml").write_text(text, encoding="utf-8")
    run("suite.yaml", capsys)
    doc, _ = cases(capsys, str(latest_run()))
    flags = by_id(doc)["tests/on/0"]["flags"]
    assert [f["code"] for f in flags] == ["prompt-echoes-skill"]
    assert flags[0]["message"].endswith("[SE202]")


def test_output_suite_validates_runs_and_leaves_the_suite_alone(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run("suite.yaml", capsys)
    before = Path("suite.yaml").read_bytes()
    target = Path("grown") / "cases.yaml"
    target.parent.mkdir()
    doc, _ = cases(capsys, str(latest_run()), "-o", str(target))
    assert Path("suite.yaml").read_bytes() == before
    assert doc["output"] == {"path": str(target), "tests": 3}
    written = parse(target.read_text(encoding="utf-8"))
    # The settings are the suite's, with paths rebased to the new folder; only the cases.
    assert written["skill"] == "../skill/SKILL.md"
    assert written["model"]["provider"] == "scripted"
    assert written["defaultTest"] == {"assert": [{"type": "not-icontains", "value": "sure"}]}
    assert [t["id"] for t in written["tests"]] == [c["id"] for c in doc["cases"]]
    fix = next(t for t in written["tests"] if t["id"] == "fix/on/0")
    assert fix["vars"]["context"] == "file://../notes/context.txt"
    text = target.read_text(encoding="utf-8")
    assert text.startswith("# The suite the cases come from.\n")
    assert f"# From fix / on / trial 0 ({at('fix')}): failed regex." in text
    assert not list(target.parent.glob(".*partial*"))
    assert run_cli(["validate", str(target)]) == 0
    capsys.readouterr()
    # A test that misrouted and failed is one case: no request is sent twice.
    run_cli(["lint", str(target)])
    linted = capsys.readouterr()
    assert "SE103" not in linted.out + linted.err
    assert run(str(target), capsys) == 0
    grown = json.loads((latest_run() / "results.json").read_text(encoding="utf-8"))
    ids = {r["test_id"] for r in grown["records"]}
    assert ids == {c["id"] for c in doc["cases"]}
    # Run again, the cases fail as their sources did: the failure is reproduced.
    statuses = {(r["test_id"], r["arm"]): r["status"] for r in grown["records"]}
    assert statuses[("fix/on/0", "on")] == "fail"
    assert sorted(grown["trigger"]["misrouted"]) == ["poem/on/0", "tests/on/0"]


def test_printed_cases_are_a_tests_list_and_notes_go_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run("suite.yaml", capsys)
    assert run_cli(["cases", str(latest_run())]) == 0
    out = capsys.readouterr()
    printed = parse(out.out)
    assert [t["id"] for t in printed["tests"]] == [
        "fix/on/0",
        "tests/on/0",
        "poem/on/0",
    ]
    assert "note: graded / on / trial 0: judge-error:" in out.err
    assert out.err.rstrip().splitlines()[-1].startswith("3 cases, 4 notes; 1 to check")


def test_a_moved_suite_is_named_and_can_be_given(capsys: pytest.CaptureFixture[str]) -> None:
    run("suite.yaml", capsys)
    Path("moved").mkdir()
    shutil.move("suite.yaml", "moved/suite.yaml")
    assert run_cli(["cases", str(latest_run())]) == 2
    err = capsys.readouterr().err
    assert "suite.yaml, is not there (moved or deleted?): give it with --suite FILE" in err
    shutil.copytree("skill", "moved/skill")
    shutil.copytree("notes", "moved/notes")
    doc, _ = cases(capsys, str(latest_run()), "--suite", "moved/suite.yaml")
    assert len(doc["cases"]) == 3


def test_a_changed_suite_gives_a_note_for_an_assertion_no_longer_there(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run("suite.yaml", capsys)
    Path("suite.yaml").write_text(SUITE.replace("# The suite", "\n\n# The suite"), "utf-8")
    doc, _ = cases(capsys, str(latest_run()))
    assert "fix/on/0" not in by_id(doc)
    assert any(
        n["kind"] == "suite-changed" and n["test"] == "fix" and "regex" in n["message"]
        for n in doc["notes"]
    )


def test_a_bad_run_or_suite_is_one_clear_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["cases", "nowhere"]) == 2
    assert capsys.readouterr().err == (
        "error: no run at nowhere: expected a run directory, a results.json or a results.jsonl\n"
    )
    run("suite.yaml", capsys)
    Path("broken.yaml").write_text("version: 1\ntests:\n  - prompt: [unclosed\n", "utf-8")
    assert run_cli(["cases", str(latest_run()), "--suite", "broken.yaml"]) == 4
    err = capsys.readouterr().err
    assert err.startswith("broken.yaml:4:1: error: invalid YAML")
    assert "Traceback" not in err
