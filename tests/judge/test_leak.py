"""A judge reply that repeats the rubric prompt's worked example is an error, not a grade."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeProvider
from hypothesis import given
from hypothesis import strategies as st

from skilleval.api import Check, Verdict
from skilleval.assertions.builtin.model import llm_rubric
from skilleval.cli import run_cli
from skilleval.judge import JudgeClient, leak
from skilleval.judge.leak import WORKED_EXAMPLE, copied_example

PALETTE = "The palette uses the brand's three primary colours and no others."


def graded(
    reply: dict[str, Any], value: Any = PALETTE, output: str = "Navy, teal, coral."
) -> Verdict:
    judge = JudgeClient(FakeProvider([reply]))
    check = Check(output=output, value=value, prompt="Suggest a palette.", judge=judge)
    verdict: Verdict = llm_rubric(check)
    return verdict


@pytest.mark.parametrize(
    "reason", [WORKED_EXAMPLE.good_reason, WORKED_EXAMPLE.bad_reason, WORKED_EXAMPLE.good]
)
def test_a_reason_copied_from_the_example_is_an_error(reason: str) -> None:
    verdict = graded({"reason": reason, "score": 5, "pass": True})
    assert not verdict.passed
    assert verdict.error is not None
    assert verdict.error.startswith("judge reply copies the prompt's worked example (")
    assert verdict.details["error_kind"] == "copied"
    assert verdict.details["judge_reply"]["reason"] == reason


def test_notes_copied_from_the_example_are_an_error_too() -> None:
    reply = {
        "reason": "The colours match.",
        "score": 4,
        "pass": True,
        "checks": [
            {"id": 1, "pass": True, "notes": "navy is listed"},
            {"id": 2, "pass": True, "notes": "Rome is the capital of Italy"},
        ],
    }
    verdict = graded(reply, value=["Uses navy", "Uses teal"])
    assert verdict.details["error_kind"] == "copied"


def test_a_suite_about_the_example_s_own_subject_is_graded() -> None:
    """Every word of "It names Rome" is in this rubric, so it is a reason, not a copy."""
    verdict = graded(
        {"reason": "It names Rome.", "score": 5, "pass": True},
        value="The answer names Rome as the capital of Italy.",
        output="Rome.",
    )
    assert verdict.error is None
    assert verdict.passed


def test_a_reason_in_the_example_s_form_about_another_subject_is_graded() -> None:
    verdict = graded(
        {"reason": "Paris is the capital of France.", "score": 5, "pass": True},
        value="Names Paris as the capital of France.",
        output="Paris.",
    )
    assert verdict.error is None


@pytest.mark.parametrize(
    "reason",
    [
        "It names the three colours.",
        "Navy is the first of the three colours.",
        "It names navy, not teal.",
        "",
    ],
)
def test_ordinary_reasons_are_not_copies(reason: str) -> None:
    verdict = graded({"reason": reason, "score": 4, "pass": True})
    assert verdict.error is None, verdict.error


def test_a_custom_rubric_prompt_has_no_example_to_copy() -> None:
    judge = JudgeClient(FakeProvider([{"reason": "It names Rome.", "score": 5, "pass": True}]))
    check = Check(
        output="Navy.",
        value=PALETTE,
        prompt="Palette?",
        judge=judge,
        options={"rubricPrompt": "Grade {{ output }} against {{ rubric }}"},
    )
    assert llm_rubric(check).error is None


def test_the_packaged_prompt_shows_the_example_it_checks_against() -> None:
    provider = FakeProvider([{"reason": "ok", "score": 5, "pass": True}])
    graded_by = JudgeClient(provider)
    llm_rubric(Check(output="x", value=PALETTE, prompt="p", judge=graded_by))
    system = provider.requests[0].messages[0].content
    for text in WORKED_EXAMPLE.texts:
        assert f'"{text}"' in system


def test_copied_example_names_the_shared_words() -> None:
    assert copied_example(["It names Rome."], ["a palette"]) == "it names rome"
    assert copied_example(["It names Milan, not Rome."], ["Milan Rome names"]) is None
    assert copied_example(["is the capital of"], ["Paris capital"]) is None


def test_a_scripted_judge_that_copies_the_example_gives_an_error_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = json.dumps({"reason": WORKED_EXAMPLE.good_reason, "score": 5, "pass": True})
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        textwrap.dedent(
            f"""\
            model: {{provider: scripted, default: "Navy, teal and coral."}}
            judge:
              provider: scripted
              responses:
                - match: "RUBRIC"
                  output: '{copy}'
            prompts: ["Suggest a palette."]
            tests:
              - id: palette
                assert:
                  - type: llm-rubric
                    value: {PALETTE}
            """
        ),
        encoding="utf-8",
    )
    code = run_cli(["run", str(suite), "--no-judge-check", "--json"])
    out = json.loads(capsys.readouterr().out)
    (record,) = out["records"]
    assert record["status"] == "error"
    (graded_assert,) = record["asserts"]
    assert graded_assert["status"] == "error"
    assert "worked example" in graded_assert["error"]
    assert code == 3


def _all_runs(tokens: list[str], example: list[str]) -> list[tuple[str, ...]]:
    """The definition, position by position: every maximal shared run of MIN_RUN words."""
    found = []
    for i in range(len(tokens)):
        for j in range(len(example)):
            if i and j and tokens[i - 1] == example[j - 1]:
                continue
            length = 0
            while (
                i + length < len(tokens)
                and j + length < len(example)
                and tokens[i + length] == example[j + length]
            ):
                length += 1
            if length >= leak.MIN_RUN:
                found.append(tuple(tokens[i : i + length]))
    return found


@given(
    st.lists(st.sampled_from("abcd"), max_size=30),
    st.lists(st.sampled_from("abcd"), max_size=30),
)
def test_shared_runs_are_found_in_the_definitions_order(
    tokens: list[str], example: list[str]
) -> None:
    where: dict[str, list[int]] = {}
    for j, word in enumerate(example):
        where.setdefault(word, []).append(j)
    assert list(leak.shared_runs(tokens, example, where)) == _all_runs(tokens, example)
