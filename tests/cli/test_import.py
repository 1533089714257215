"""`skilleval import promptfoo`: a promptfoo config becomes a skilleval suite that means the same."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from promptfoo_support import with_echo

from skilleval.cli import run_cli
from skilleval.suite.load import Overrides, load_suite

DATA = Path(__file__).resolve().parents[1] / "data" / "promptfoo"


def imported(folder: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    copy = shutil.copytree(DATA / folder, tmp_path / folder)
    code = run_cli(["import", "promptfoo", str(copy / "promptfooconfig.yaml")])
    err = capsys.readouterr().err
    assert code == 0, err
    return copy / "suite.yaml", err


def test_providers_become_labelled_models_with_their_prompts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite_file, err = imported("ollama", tmp_path, capsys)
    text = suite_file.read_text(encoding="utf-8")
    assert text.startswith("# Imported from promptfooconfig.yaml")
    assert "version: 1" in text
    assert "\nproviders:" not in text
    # The config's own comments are kept.
    assert "# yaml-language-server" in text or "Comparing local Ollama models" in text
    suite, _ = load_suite(suite_file, Overrides(entry_points=False))
    assert [m.label for m in suite.models] == [
        "ollama:llama4-scout",
        "ollama:llama4-maverick",
        "gpt-5-mini",
    ]
    scout, _, gpt = suite.columns()
    assert {t.prompt.label for t in scout.tests} == {"llama_prompt"}
    assert {t.prompt.label for t in gpt.tests} == {"openai_prompt"}
    # The hosted model is carried over naming its key, which the run asks for.
    assert gpt.model.to_json()["base_url"] == "https://api.openai.com/v1"
    assert "api_key_env: OPENAI_API_KEY" in text
    assert "Changed: ollama:llama4-scout: provider settings num_predict are not used" in text
    assert "ok (20 tests)" in err


def test_the_imported_suite_has_the_same_tests_as_the_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    suite_file, _ = imported("ollama-comparison", tmp_path, capsys)
    ours, _ = load_suite(suite_file, Overrides(entry_points=False))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    theirs, _ = load_suite(suite_file.with_name("promptfooconfig.yaml"))
    assert [m.label for m in ours.models] == [m.label for m in theirs.models]
    assert ours.column_prompts == theirs.column_prompts
    assert [t.id for t in ours.tests] == [t.id for t in theirs.tests]
    assert [[a.type for a in t.asserts] for t in ours.tests] == [
        [a.type for a in t.asserts] for t in theirs.tests
    ]


def test_what_cannot_be_carried_over_is_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite_file, err = imported("llama-gpt-comparison", tmp_path, capsys)
    assert "not carried over: providers[2]: `replicate:meta/meta-llama-3.1-405b-instruct`" in err
    assert "Not carried over: providers[2]" in suite_file.read_text(encoding="utf-8")


def test_an_existing_output_is_not_replaced_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite_file, _ = imported("simple-cli", tmp_path, capsys)
    config = suite_file.with_name("promptfooconfig.yaml")
    assert run_cli(["import", "promptfoo", str(config)]) == 2
    assert "exists; give --force" in capsys.readouterr().err
    assert run_cli(["import", "promptfoo", str(config), "--force"]) == 0


def test_a_promptfoo_config_run_directly_warns_of_every_difference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = shutil.copytree(DATA / "ollama", tmp_path / "ollama")
    code = run_cli(["validate", str(copy / "promptfooconfig.yaml"), "--no-entry-points"])
    err = capsys.readouterr().err
    assert code == 4  # the hosted model has no key here
    assert "OPENAI_API_KEY is not set" in err
    config = copy / "promptfooconfig.yaml"
    config.write_text(
        config.read_text(encoding="utf-8").replace("openai:gpt-5-mini", "echo"), encoding="utf-8"
    )
    assert run_cli(["validate", str(config), "--no-entry-points"]) == 0
    err = capsys.readouterr().err
    assert "warning: `providers:` is read as `models:`" in err
    assert "warning: decoding is greedy" in err
    assert "warning: `config.num_predict` is not used" in err
    assert "ok (20 tests, 3 models)" in err


def test_graders_stay_where_they_are_when_tests_name_their_own(tmp_path: Path) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "providers: [echo]\n"
        'prompts: ["{{q}}"]\n'
        "defaultTest:\n  options:\n    provider: echo\n"
        "tests:\n"
        "  - vars: {q: hi}\n    options: {provider: echo}\n"
        "    assert: [{type: llm-rubric, value: says hi}]\n",
        encoding="utf-8",
    )
    assert run_cli(["import", "promptfoo", str(config)]) == 0
    text = (tmp_path / "suite.yaml").read_text(encoding="utf-8")
    assert "\njudge:" not in text
    suite, _ = load_suite(tmp_path / "suite.yaml", Overrides(entry_points=False))
    assert suite.judge is not None
    assert suite.judge.kind == "echo"


EXAMPLES = sorted(p.parent.name for p in DATA.glob("*/promptfooconfig.yaml"))


def _shape(suite: Any) -> list[tuple[str, str, list[tuple[str, str]]]]:
    return [
        (t.id, t.prompt.label, [(a.type, repr(a.value)) for a in t.asserts]) for t in suite.tests
    ]


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_imports_to_a_suite_with_the_same_tests(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite_file, _ = imported(name, tmp_path, capsys)
    ours, _ = load_suite(suite_file, Overrides(entry_points=False, model="echo"))
    config = suite_file.with_name("promptfooconfig.yaml")
    config.write_text(with_echo(config.read_text(encoding="utf-8")), encoding="utf-8")
    theirs, _ = load_suite(config, Overrides(entry_points=False, model="echo"))
    assert ours.tests
    assert _shape(ours) == _shape(theirs)
    assert ours.judge == theirs.judge


def test_the_older_id_keyed_provider_form_imports_and_bad_prompts_are_pointed_at(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        'providers:\n  - echo: {label: first}\n  - {id: echo, prompts: 3}\nprompts: ["hi {{x}}"]\n'
        "tests:\n  - vars: {x: 1}\n",
        encoding="utf-8",
    )
    assert run_cli(["import", "promptfoo", str(config)]) == 4
    err = capsys.readouterr().err
    assert "suite.yaml:" in err
    assert "`prompts` must be a list of prompt labels" in err
    assert "Traceback" not in err
    assert ".partial" not in err
    # Validated before it is written: an invalid suite is never left behind.
    assert "suite.yaml was not written" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["promptfooconfig.yaml"]


@pytest.mark.parametrize("name", ["var-rendering", "assertion-values", "assertion-details"])
def test_an_imported_suite_keeps_promptfoos_verdicts(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The imported suite says `compat: promptfoo`, so vars, templates and values keep the
    meaning promptfoo gave them: on echo, each test passes where promptfoo's passed."""
    suite_file, _ = imported(name, tmp_path, capsys)
    assert "compat: promptfoo" in suite_file.read_text(encoding="utf-8")
    pinned = json.loads((DATA / name / "promptfoo-verdicts.json").read_text(encoding="utf-8"))
    run_cli(["run", str(suite_file), "--json", "--no-entry-points", "--model", "echo"])
    records = json.loads(capsys.readouterr().out)["records"]
    assert [r["status"] == "pass" for r in records] == [row["pass"] for row in pinned["results"]]
