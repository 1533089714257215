"""The overfitting judge, with a scripted judge and once with the embedded model."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from skilleval.cli import run_cli
from skilleval.errors import TruncatedError, UsageError
from skilleval.judge.overfit import (
    BLOCK_SCHEMA,
    budget,
    collect_items,
    combine,
    overfit_report,
    per_element,
    reply_schema,
    severity,
)
from skilleval.suite.load import load_suite
from skilleval.suite.model import Suite

SKILL = """
---
name: incident-summary
description: Summarise a production incident for stakeholders from raw notes.
---

Open with `Bottom line:` and say what broke. Find the root cause with the five whys.
"""

SUITE = """
version: 1
skill: SKILL.md
model: echo
tests:
  - id: checkout
    should_trigger: true
    prompt: "Checkout failed for 40 minutes after a config push. Write it up."
    assert:
      - type: llm-rubric
        value:
          - Says the outage lasted about 40 minutes
          - Uses the five whys
      - type: llm-assert
        value: The summary starts with "Bottom line:"
      - &bottom {type: contains, value: "Bottom line:"}
  - id: login
    should_trigger: true
    prompt: "SSO logins failed for 25 minutes. Status page text, please."
    assert:
      - *bottom
      - type: max-length
        value: 1200
"""

DETERMINISTIC_ONLY = """
version: 1
skill: SKILL.md
model: echo
tests:
  - id: checkout
    prompt: "Checkout failed for 40 minutes. Write it up."
    assert:
      - {type: contains, value: "Bottom line:"}
      - {type: icontains, value: checkout}
"""


class FakeJudge:
    """Answers from a script; an exception in the script is raised instead."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[list[dict[str, str]], Mapping[str, Any], int]] = []

    def complete_json(
        self, messages: list[dict[str, str]], schema: Mapping[str, Any], max_tokens: int
    ) -> Any:
        self.calls.append((messages, schema, max_tokens))
        reply = self.replies.pop(0) if self.replies else {}
        if isinstance(reply, Exception):
            raise reply
        return reply


def make_suite(tmp_path: Path, text: str = SUITE, skill: str | None = SKILL) -> Suite:
    if skill is not None:
        (tmp_path / "SKILL.md").write_text(textwrap.dedent(skill).lstrip(), encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    suite, _ = load_suite(path)
    return suite


def entry(index: int, label: str, reasoning: str = "because") -> dict[str, Any]:
    return {"index": index, "reasoning": reasoning, "label": label}


FULL = {
    "criteria": [entry(1, "outcome"), entry(2, "technique"), entry(3, "vocabulary")],
    "assertions": [entry(4, "narrow", "only the skill says this"), entry(5, "broad")],
    "holistic_reasoning": "mostly outcomes",
    "holistic": 0.25,
}


def valid_block(block: Mapping[str, Any]) -> None:
    errors = list(Draft202012Validator(dict(BLOCK_SCHEMA)).iter_errors(block))
    assert not errors, errors


def test_items_are_numbered_criteria_first_and_listed_once(tmp_path: Path) -> None:
    items = collect_items(make_suite(tmp_path))
    assert [(i.index, i.kind, i.test_id) for i in items] == [
        (1, "rubric", "checkout"),
        (2, "rubric", "checkout"),
        (3, "statement", "checkout"),
        (4, "assertion", "checkout"),
        (5, "assertion", "login"),
    ]
    assert items[3].text == 'contains: "Bottom line:"'
    assert items[4].text == "max-length: 1200"


def test_a_full_reply_is_scored(tmp_path: Path) -> None:
    judge = FakeJudge(FULL)
    block = overfit_report(make_suite(tmp_path), judge)
    valid_block(block)
    assert len(judge.calls) == 1
    # per-element: (0 + 0.5 + 1 + 1 + 0) / 5 = 0.5; final: 0.6 × 0.5 + 0.4 × 0.25 = 0.4
    assert block["per_element"] == 0.5
    assert block["holistic"] == 0.25
    assert block["score"] == pytest.approx(0.4)
    assert block["severity"] == "Moderate"
    assert block["unclassified"] == []
    assert [i["label"] for i in block["items"]] == [
        "outcome",
        "technique",
        "vocabulary",
        "narrow",
        "broad",
    ]
    assert block["items"][3]["reasoning"] == "only the skill says this"
    assert "0.6 × 0.50 per-element + 0.4 × 0.25 holistic = 0.40" in block["reason"]


def test_the_judge_sees_skill_and_suite_and_items_by_number(tmp_path: Path) -> None:
    judge = FakeJudge(FULL)
    overfit_report(make_suite(tmp_path), judge)
    messages, schema, max_tokens = judge.calls[0]
    user = messages[-1]["content"]
    assert "Find the root cause with the five whys." in user
    assert "Checkout failed for 40 minutes" in user
    assert "2. [rubric, test checkout] Uses the five whys" in user
    assert '4. [test checkout] contains: "Bottom line:"' in user
    assert max_tokens == budget(5)
    assert budget(6) > budget(5)
    first = schema["properties"]["criteria"]["prefixItems"][0]["properties"]
    assert list(first) == ["index", "reasoning", "label"]
    assert first["index"] == {"type": "integer", "enum": [1]}
    assert first["label"]["enum"] == ["outcome", "technique", "vocabulary"]
    later = schema["properties"]["assertions"]["prefixItems"][0]["properties"]["label"]
    assert later["enum"] == ["broad", "narrow"]


def test_the_reply_schema_pins_labels_and_allows_a_short_reply(tmp_path: Path) -> None:
    items = collect_items(make_suite(tmp_path))
    validator = Draft202012Validator(reply_schema(items))
    Draft202012Validator.check_schema(reply_schema(items))
    assert validator.is_valid(FULL)
    invented = {**FULL, "criteria": [entry(1, "style")]}
    assert not validator.is_valid(invented)
    echoed = {**FULL, "criteria": [{"index": 1, "reasoning": "x", "label": "outcome", "text": "…"}]}
    assert not validator.is_valid(echoed)
    assert validator.is_valid({**FULL, "criteria": [entry(1, "outcome")]})


def test_skipped_items_get_one_repair_pass(tmp_path: Path) -> None:
    partial = {
        "criteria": [entry(1, "outcome"), entry(2, "technique")],
        "assertions": [],
        "holistic_reasoning": "",
        "holistic": 0.5,
    }
    repair = {"criteria": [entry(3, "vocabulary")], "assertions": [entry(5, "broad")]}
    judge = FakeJudge(partial, repair, FULL)
    block = overfit_report(make_suite(tmp_path), judge)
    valid_block(block)
    assert len(judge.calls) == 2
    messages, schema, max_tokens = judge.calls[1]
    assert "Label only these items: 3, 4, 5." in messages[-1]["content"]
    assert set(schema["properties"]) == {"criteria", "assertions"}
    indexes = [
        e["properties"]["index"]["enum"][0]
        for e in schema["properties"]["assertions"]["prefixItems"]
    ]
    assert indexes == [4, 5]
    assert max_tokens == budget(3, holistic=False)
    # item 4 is still missing: unclassified, and left out of the score
    assert block["unclassified"] == [4]
    assert block["items"][3]["label"] == "unclassified"
    assert block["per_element"] == pytest.approx((0 + 0.5 + 1 + 0) / 4)
    assert block["score"] == pytest.approx(0.6 * 0.375 + 0.4 * 0.5)
    assert "repair pass asked again for 3 skipped items and got 2" in block["reason"]


def test_labels_that_do_not_fit_their_item_count_as_skipped(tmp_path: Path) -> None:
    wrong = {
        "criteria": [entry(1, "narrow"), entry(1, "outcome"), entry(9, "outcome")],
        "assertions": [entry(4, "vocabulary"), entry(5, "broad")],
        "holistic": 0,
    }
    judge = FakeJudge(wrong, {})
    block = overfit_report(make_suite(tmp_path), judge)
    # the first entry that fits wins: item 1 is an outcome, not narrow
    assert block["unclassified"] == [2, 3, 4]
    assert block["items"][0]["label"] == "outcome"
    assert block["items"][4]["label"] == "broad"
    assert block["severity"] == "Low"


@pytest.mark.parametrize("empty", [{}, None, "", {"criteria": [], "assertions": [], "holistic": 0}])
def test_an_empty_reply_is_unknown_never_low(tmp_path: Path, empty: Any) -> None:
    judge = FakeJudge(empty, empty)
    block = overfit_report(make_suite(tmp_path), judge)
    valid_block(block)
    assert block["severity"] == "Unknown"
    assert block["score"] is None
    assert block["per_element"] is None
    assert block["holistic"] is None
    assert block["unclassified"] == [1, 2, 3, 4, 5]
    assert "the judge classified none of the 5 items" in block["reason"]
    assert len(judge.calls) == 2


def test_a_truncated_reply_is_unknown_with_the_reason(tmp_path: Path) -> None:
    judge = FakeJudge(TruncatedError("judge reply truncated at 1568 tokens, after a repair retry"))
    block = overfit_report(make_suite(tmp_path), judge)
    valid_block(block)
    assert block["severity"] == "Unknown"
    assert "truncated at 1568 tokens" in block["reason"]
    assert len(judge.calls) == 1


def test_a_failed_repair_pass_keeps_what_was_classified(tmp_path: Path) -> None:
    partial = {"criteria": [entry(1, "vocabulary")], "holistic": 1}
    judge = FakeJudge(partial, TruncatedError("judge reply truncated at 900 tokens"))
    block = overfit_report(make_suite(tmp_path), judge)
    assert block["unclassified"] == [2, 3, 4, 5]
    assert block["score"] == pytest.approx(0.6 * 1 + 0.4 * 1)
    assert block["severity"] == "High"
    assert "repair pass for 4 skipped items failed" in block["reason"]


def test_a_suite_without_rubric_items_reports_its_assertions_only(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, DETERMINISTIC_ONLY)
    reply = {
        "assertions": [entry(1, "narrow"), entry(2, "broad")],
        "holistic_reasoning": "",
        "holistic": 0.5,
    }
    judge = FakeJudge(reply)
    block = overfit_report(suite, judge)
    valid_block(block)
    _, schema, _ = judge.calls[0]
    assert "criteria" not in schema["properties"]
    assert "GRADING CRITERIA" not in judge.calls[0][0][-1]["content"]
    assert {i["kind"] for i in block["items"]} == {"assertion"}
    assert block["score"] == pytest.approx(0.6 * 0.5 + 0.4 * 0.5)


def test_a_suite_with_nothing_to_classify_never_calls_the_judge(tmp_path: Path) -> None:
    text = "version: 1\nskill: SKILL.md\nmodel: echo\ntests:\n  - prompt: hi\n"
    judge = FakeJudge()
    block = overfit_report(make_suite(tmp_path, text), judge)
    assert judge.calls == []
    assert block["severity"] == "Unknown"
    assert block["items"] == []


def test_no_skill_is_a_clear_error(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, DETERMINISTIC_ONLY.replace("skill: SKILL.md\n", ""), skill=None)
    with pytest.raises(UsageError, match="has no `skill:`"):
        overfit_report(suite, FakeJudge())


@pytest.mark.parametrize(
    ("score", "expected"),
    [
        (None, "Unknown"),
        (0.0, "Low"),
        (0.1999, "Low"),
        (0.2, "Moderate"),
        (0.4999, "Moderate"),
        (0.5, "High"),
        (1.0, "High"),
    ],
)
def test_severity_bands(score: float | None, expected: str) -> None:
    assert severity(score) == expected


def test_score_arithmetic() -> None:
    assert per_element([]) is None
    assert per_element(["outcome", "technique", "vocabulary", "broad", "narrow"]) == 0.5
    assert per_element(["technique"]) == 0.5
    assert combine(0.5, 1.0) == pytest.approx(0.7)
    assert combine(0.0, 0.0) == 0.0
    assert combine(0.25, None) == 0.25
    # a holistic number alone is not an assessment
    assert combine(None, 1.0) is None


# -- the command ---------------------------------------------------------------------------


def write_suite(tmp_path: Path, text: str = SUITE) -> Path:
    (tmp_path / "SKILL.md").write_text(textwrap.dedent(SKILL).lstrip(), encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def test_the_command_never_fails_on_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_suite(tmp_path)
    assert run_cli(["overfit", str(path), "--judge-model", "echo", "--json"]) == 0
    out, _ = capsys.readouterr()
    doc = json.loads(out)
    assert doc["overfit"]["severity"] == "Unknown"
    valid_block(doc["overfit"])
    assert run_cli(["overfit", str(path), "--judge-model", "echo"]) == 0
    err = capsys.readouterr().err
    assert "overfitting Unknown" in err
    assert "informational only" in err


def test_the_command_without_a_skill_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(DETERMINISTIC_ONLY.replace("skill: SKILL.md\n", ""), encoding="utf-8")
    assert run_cli(["overfit", str(path)]) == 2
    assert "has no `skill:`" in capsys.readouterr().err


# -- the embedded model --------------------------------------------------------------------


@pytest.mark.model
def test_the_embedded_model_gives_a_schema_valid_report(tmp_path: Path) -> None:
    from skilleval.engine.factory import create_provider
    from skilleval.engine.llama import gguf_spec
    from skilleval.judge import JudgeClient

    small = """
    version: 1
    skill: SKILL.md
    model: echo
    tests:
      - prompt: "Checkout failed for 40 minutes. Write it up."
        assert:
          - {type: llm-rubric, value: Uses the five whys}
          - {type: contains, value: "Bottom line:"}
    """
    suite = make_suite(tmp_path, small)
    provider = create_provider(gguf_spec(), home=tmp_path)
    judge = JudgeClient(provider, seed=0)
    try:
        block = overfit_report(suite, judge)
    finally:
        judge.close()
    valid_block(block)
    assert block["severity"] in ("Low", "Moderate", "High", "Unknown")
    labelled: Sequence[str] = [i["label"] for i in block["items"]]
    assert len(labelled) == 2
    if block["severity"] == "Unknown":
        assert block["reason"]
    else:
        assert block["score"] is not None
