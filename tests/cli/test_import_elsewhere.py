"""`skilleval import promptfoo` writing elsewhere, and never writing a suite that is not one:
``-o`` to another folder rewrites relative paths, a provider that does not carry over becomes
an explicit ``model:`` with a comment, and the text is parsed before it is written."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from promptfoo_support import with_echo

from skilleval.cli import run_cli
from skilleval.suite.load import Overrides, load_suite

DATA = Path(__file__).resolve().parents[1] / "data" / "promptfoo"


def _shape(suite: Any) -> list[Any]:
    return [
        (
            t.prompt.label,
            t.prompt.text,
            t.prompt.messages,
            dict(t.vars),
            [a.type for a in t.asserts],
        )
        for t in suite.tests
    ]


@pytest.mark.parametrize(
    "folder",
    [
        "var-rendering",
        "csv-config",
        "self-grading",
        "own-apps/hooks",
        "own-apps/python",
        "own-apps/filters",
    ],
)
def test_import_to_another_folder_reaches_the_same_files(
    folder: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = shutil.copytree(DATA / folder, tmp_path / "config" / folder)
    config = copy / "promptfooconfig.yaml"
    target = tmp_path / "elsewhere" / "deeper" / "suite.yaml"
    target.parent.mkdir(parents=True)
    code = run_cli(["import", "promptfoo", str(config), "-o", str(target)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "relative paths are rewritten" in target.read_text()
    ours, _ = load_suite(target, Overrides(entry_points=False, model="echo"))
    config.write_text(with_echo(config.read_text()))  # a hosted model needs no key to load
    theirs, _ = load_suite(config, Overrides(entry_points=False, model="echo"))
    assert ours.tests
    assert _shape(ours) == _shape(theirs)


def test_a_python_provider_imported_elsewhere_still_runs_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = shutil.copytree(DATA / "own-apps" / "python", tmp_path / "app")
    target = tmp_path / "suites" / "suite.yaml"
    target.parent.mkdir()
    assert (
        run_cli(["import", "promptfoo", str(copy / "promptfooconfig.yaml"), "-o", str(target)]) == 0
    )
    capsys.readouterr()
    suite, _ = load_suite(target, Overrides(entry_points=False))
    assert suite.model.kind == "python"
    assert suite.model.config.path.resolve() == (copy / "app.py").resolve()


def test_a_provider_that_does_not_carry_over_becomes_an_explicit_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        'prompts: ["hi"]\nproviders:\n  - bedrock:anthropic.claude-v2\ntests:\n  - vars: {}\n'
    )
    assert run_cli(["import", "promptfoo", str(config)]) == 0
    err = capsys.readouterr().err
    assert "not carried over: providers[0]: `bedrock:anthropic.claude-v2` is AWS Bedrock" in err
    text = (tmp_path / "suite.yaml").read_text()
    assert "\nmodel: default\n" in text
    assert "# None of promptfoo's `providers:` carries over (see above)" in text
    suite, _ = load_suite(tmp_path / "suite.yaml", Overrides(entry_points=False))
    assert suite.model.kind == "gguf"


def test_a_default_test_emptied_by_the_import_is_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        'prompts: ["hi {{x}}"]\nproviders: [echo]\ndefaultTest:\n  # the grader\n  options:\n'
        "    provider: echo\ntests:\n  - vars: {x: 1}\n    assert:\n      - type: llm-rubric\n"
        "        value: fine\n"
    )
    code = run_cli(["import", "promptfoo", str(config)])
    err = capsys.readouterr().err
    assert code == 0, err
    text = (tmp_path / "suite.yaml").read_text()
    assert "defaultTest:" not in text
    assert "judge: echo" in text


@pytest.mark.parametrize("command", [["promptfoo"], ["pai"]])
def test_an_output_in_a_folder_that_does_not_exist_is_named_as_such(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "config.yaml"
    if command == ["pai"]:
        source.write_text("cases:\n  - {id: a, input: hi}\n", encoding="utf-8")
    else:
        source.write_text("providers: [echo]\ntests:\n  - vars: {q: hi}\n", encoding="utf-8")
    target = tmp_path / "nowhere" / "suite.yaml"
    assert run_cli(["import", *command, str(source), "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert f"the folder {target.parent} does not exist (create it first)" in err
    assert not target.parent.exists()
