"""Assertion values in a promptfoo config are read as promptfoo reads them; skilleval's own
suites keep their reading. promptfoo's verdicts on these shapes are pinned in
tests/data/promptfoo/assertion-values (run by test_promptfoo_examples.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skilleval.api import Stats
from skilleval.errors import DiagnosticsError
from skilleval.promptfoo.values import as_promptfoo_reads, split_csv
from skilleval.runner.grade import Subject, grade
from skilleval.suite.load import Overrides, load_suite

PROMPTFOO_HEAD = "providers: [echo]\nprompts: ['{{ out }}']\n"
SKILLEVAL_HEAD = "version: 1\nmodel: {provider: echo}\nprompts: ['{{ out }}']\n"


def _statuses(tmp_path: Path, head: str, output: str, asserts: str) -> list[str]:
    path = tmp_path / "suite.yaml"
    path.write_text(f"{head}tests:\n  - vars: {{out: x}}\n    assert:\n{asserts}", "utf-8")
    suite, _ = load_suite(path, Overrides(entry_points=False))
    subject = Subject(
        output=output, prompt="", messages=(), stats=Stats(), arm="a", trial=0, cost=None
    )
    return [r.status for r in grade(suite.tests[0], subject).asserts]


def test_a_whole_float_is_javascripts_text_only_in_a_promptfoo_config(tmp_path: Path) -> None:
    asserts = "      - {type: contains, value: 42.0}\n      - {type: equals, value: 1e3}\n"
    assert _statuses(tmp_path, PROMPTFOO_HEAD, "42 and", asserts)[0] == "pass"
    assert _statuses(tmp_path, PROMPTFOO_HEAD, "1000", asserts)[1] == "pass"
    assert _statuses(tmp_path, SKILLEVAL_HEAD, "42 and", asserts)[0] == "fail"
    assert _statuses(tmp_path, SKILLEVAL_HEAD, "42.0 and", asserts)[0] == "pass"


def test_equals_null_is_the_text_null_in_a_promptfoo_config(tmp_path: Path) -> None:
    asserts = "      - {type: equals, value: null}\n"
    assert _statuses(tmp_path, PROMPTFOO_HEAD, "null", asserts) == ["pass"]
    assert _statuses(tmp_path, PROMPTFOO_HEAD, "", asserts) == ["fail"]


def test_empty_lists_mean_all_of_nothing_and_none_of_nothing(tmp_path: Path) -> None:
    asserts = "      - {type: contains-all, value: []}\n      - {type: contains-any, value: []}\n"
    for head in (PROMPTFOO_HEAD, SKILLEVAL_HEAD):
        assert _statuses(tmp_path, head, "anything", asserts) == ["pass", "fail"]


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        ("a, b", ["a", "b"]),
        ("  a ,b  ", ["a", "b"]),
        ('"a, b", c', ["a, b", "c"]),
        ("one", ["one"]),
        ("", []),
    ],
)
def test_a_list_types_string_splits_as_one_csv_row(text: str, fields: list[str]) -> None:
    assert split_csv(text) == fields


def test_template_strings_are_left_for_rendering() -> None:
    assert as_promptfoo_reads("contains-any", "{{ words }}") == "{{ words }}"
    assert as_promptfoo_reads("contains", "{{ n }}") == "{{ n }}"
    assert as_promptfoo_reads("regex", 1.0) == 1.0


def test_a_weight_0_assertion_passes_only_in_a_promptfoo_config(tmp_path: Path) -> None:
    asserts = (
        "      - {type: equals, value: nope, weight: 0}\n"
        "      - {type: not-contains, value: hell, weight: 0}\n"
    )
    assert _statuses(tmp_path, PROMPTFOO_HEAD, "hello", asserts) == ["pass", "pass"]
    assert _statuses(tmp_path, SKILLEVAL_HEAD, "hello", asserts) == ["fail", "fail"]


@pytest.mark.parametrize("prompt", ["pf://greeting", "{id: 'pf://greeting:2', label: g}"])
def test_a_managed_prompt_is_refused_by_name_at_its_position(tmp_path: Path, prompt: str) -> None:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(f"providers: [echo]\nprompts:\n  - {prompt}\ntests:\n  - vars: {{}}\n", "utf-8")
    with pytest.raises(DiagnosticsError) as caught:
        load_suite(path, Overrides(entry_points=False))
    message = str(caught.value.diagnostics[0])
    assert "promptfooconfig.yaml:3:5: error: `pf://greeting" in message
    assert "file://" in message


def test_pf_text_in_skillevals_own_suite_is_text(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "version: 1\nmodel: {provider: echo}\nprompts: ['pf://x']\ntests:\n  - vars: {}\n",
        "utf-8",
    )
    suite, _ = load_suite(path, Overrides(entry_points=False))
    assert suite.tests[0].prompt.text == "pf://x"


def test_an_undefined_var_renders_empty_with_a_warning_in_a_promptfoo_config(
    tmp_path: Path,
) -> None:
    from skilleval.runner.plan import messages_for

    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(
        "providers: [echo]\nprompts: ['[{{ v }}][{{ v.x }}]']\ntests:\n  - vars: {w: 1}\n",
        "utf-8",
    )
    suite, _ = load_suite(path, Overrides(entry_points=False))
    assert messages_for(suite.tests[0], None)[1] == "[][]"
    assert any("'v'" in note and "renders empty" in note for note in suite.notes)
    own = tmp_path / "suite.yaml"
    own.write_text(
        "version: 1\nmodel: {provider: echo}\nprompts: ['[{{ v }}]']\ntests:\n  - vars: {w: 1}\n",
        "utf-8",
    )
    with pytest.raises(DiagnosticsError, match="do not define"):
        load_suite(own, Overrides(entry_points=False))


def test_a_promptfoo_config_without_a_grader_says_the_model_grades_itself(
    tmp_path: Path,
) -> None:
    path = tmp_path / "promptfooconfig.yaml"
    body = (
        "providers: [echo]\nprompts: [hi]\ntests:\n  - assert: [{type: llm-rubric, value: kind}]\n"
    )
    path.write_text(body, "utf-8")
    suite, _ = load_suite(path, Overrides(entry_points=False))
    assert any("grades its own outputs" in note for note in suite.notes)
    path.write_text(body + "defaultTest: {options: {provider: echo}}\n", "utf-8")
    suite, _ = load_suite(path, Overrides(entry_points=False))
    assert not any("grades its own outputs" in note for note in suite.notes)
