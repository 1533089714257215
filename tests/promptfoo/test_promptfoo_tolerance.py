"""What promptfoo fills in and tolerates, read the same way: keys it ignores, a rubric given
only as a ``rubricPrompt``, ``llm-rubric`` going by the judge's pass, CSV ``__config:``
columns, a hosted grader without its key, and the ``{text, embedding}`` grader map.

promptfoo 0.123.1 accepts a config with unknown keys at every level (``promptfoo validate``
says "Configuration is valid" and ``eval`` runs it); the CSV ``__config:`` verdicts are pinned
in tests/data/promptfoo/csv-config/ and compared by test_promptfoo_examples.py.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from skilleval.cli import run_cli
from skilleval.errors import DiagnosticsError
from skilleval.suite.files import csv_row_to_test
from skilleval.suite.load import Overrides, load_suite


def _write(tmp_path: Path, text: str, name: str = "promptfooconfig.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_keys_promptfoo_ignores_are_warnings_at_their_positions(tmp_path: Path) -> None:
    config = _write(
        tmp_path,
        """\
        prompts: ["hi {{x}}"]
        providers: [echo]
        filters: {a: 1}
        tests:
          - vars: {x: 1}
            outputs: foo
            assert:
              - type: contains
                value: hi
                note: mine
        """,
    )
    suite, _ = load_suite(config, Overrides(entry_points=False))
    assert len(suite.tests) == 1
    warned = [n for n in suite.notes if "promptfoo ignores it" in n]
    assert [n.split(": warning:")[0].rsplit(":", 2)[1:] for n in warned] == [
        ["3", "1"],
        ["6", "5"],
        ["10", "9"],
    ]


def test_a_key_skilleval_refuses_is_still_an_error_in_a_promptfoo_config(tmp_path: Path) -> None:
    config = _write(
        tmp_path,
        """\
        prompts: ["hi"]
        providers: [echo]
        redteam: {purpose: x}
        tests:
          - vars: {}
        """,
    )
    with pytest.raises(DiagnosticsError) as caught:
        load_suite(config, Overrides(entry_points=False))
    assert "unsupported key 'redteam'" in str(caught.value)


def test_the_same_unknown_key_is_an_error_in_skillevals_own_suite(tmp_path: Path) -> None:
    suite = _write(
        tmp_path,
        "version: 1\nmodel: echo\nfilters: {}\ntests:\n  - prompt: hi\n",
        "suite.yaml",
    )
    with pytest.raises(DiagnosticsError) as caught:
        load_suite(suite, Overrides(entry_points=False))
    assert "unknown key 'filters'" in str(caught.value)


JUDGE = """\
version: 1
{compat}
model: echo
judge:
  provider: scripted
  responses:
    - match: "Grade by the house rules"
      output: '{{"reason": "meets the house rules", "score": 2, "pass": true}}'
    - output: '{{"reason": "meh", "score": 2, "pass": true}}'
prompts: ["{{{{q}}}}"]
defaultTest:
  options:
    rubricPrompt: "Grade by the house rules: {{{{output}}}}"
tests:
  - vars: {{q: hello}}
    assert:
      - type: llm-rubric
{threshold}
"""


def _verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str], **fill: str) -> dict:
    suite = _write(tmp_path, JUDGE.format(**{"compat": "", "threshold": "", **fill}), "suite.yaml")
    run_cli(["run", str(suite), "--json", "--no-entry-points", "--no-cache"])
    (record,) = json.loads(capsys.readouterr().out)["records"]
    (check,) = record["asserts"]
    return check


def test_llm_rubric_with_only_a_rubric_prompt_goes_by_the_judges_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    check = _verdict(tmp_path, capsys, compat="compat: promptfoo")
    # The judge said pass with a low score (2 of 5): promptfoo's verdict is the judge's pass.
    assert check["status"] == "pass", check
    assert "meets the house rules" in check["reason"]


def test_a_threshold_the_config_sets_still_applies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    check = _verdict(
        tmp_path, capsys, compat="compat: promptfoo", threshold="        threshold: 0.5"
    )
    assert check["status"] == "fail", check


def test_skillevals_own_suite_keeps_its_threshold_and_needs_a_rubric(tmp_path: Path) -> None:
    suite = _write(tmp_path, JUDGE.format(compat="", threshold=""), "suite.yaml")
    with pytest.raises(DiagnosticsError) as caught:
        load_suite(suite, Overrides(entry_points=False))
    assert "'llm-rubric' needs a `value:`" in str(caught.value)


def test_csv_config_columns_set_the_nth_assertions_threshold() -> None:
    row = {
        "text": "hi",
        "__expected1": "contains:hi",
        "__expected2": "levenshtein:hello",
        "__config:__expected2:threshold": "2",
    }
    test = csv_row_to_test(row, lambda name: name in {"contains", "levenshtein"})
    assert test["assert"][1] == {"type": "levenshtein", "value": "hello", "threshold": 2.0}
    assert "threshold" not in test["assert"][0]
    assert test["metadata"] == {"threshold": 2.0}


@pytest.mark.parametrize(
    ("column", "words"),
    [
        ("__config:__expected:weight", "the one setting a __config column takes is threshold"),
        ("__config:__expected0:threshold", "is not `__config:__expected:threshold`"),
        ("__config:threshold", "is not `__config:__expected:threshold`"),
    ],
)
def test_a_bad_csv_config_column_is_refused(column: str, words: str) -> None:
    with pytest.raises(ValueError, match=words.replace("`", ".")):
        csv_row_to_test({"__expected": "contains:a", column: "1"}, lambda name: True)


GRADED = """\
prompts: ["hi"]
providers: [echo]
defaultTest:
  options:
    provider: {grader}
tests:
  - vars: {{}}
    assert:
      - type: llm-rubric
        value: is a greeting
"""


def test_a_hosted_grader_without_its_key_warns_at_validate_and_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    config = _write(tmp_path, GRADED.format(grader="openai:gpt-4o-mini"))
    assert run_cli(["validate", str(config), "--no-entry-points"]) == 0
    err = capsys.readouterr().err
    assert "5:15: warning: the grader `openai:gpt-4o-mini` is hosted and OPENAI_API_KEY" in err
    code = run_cli(["run", str(config), "--no-entry-points", "-q"])
    assert code != 0
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().err


def test_the_grader_map_reads_its_text_grader_and_notes_another_embedding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
    grader = "{text: 'ollama:chat:qwen', embedding: 'ollama:nomic-embed-text'}"
    suite, _ = load_suite(
        _write(tmp_path, GRADED.format(grader=grader)), Overrides(entry_points=False)
    )
    assert suite.judge is not None
    assert suite.judge.config.model == "qwen"
    assert any("the `embedding` grader is not used" in n for n in suite.notes)
    same = "{text: 'ollama:chat:qwen', embedding: 'ollama:chat:qwen'}"
    suite, _ = load_suite(
        _write(tmp_path, GRADED.format(grader=same)), Overrides(entry_points=False)
    )
    assert not any("grader is not used" in n for n in suite.notes)
