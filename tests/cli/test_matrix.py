"""A suite on several models: one run per model, one column each, each with its own lift."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from fakes import COMMIT_SKILL

from skilleval.cli import run_cli
from skilleval.errors import DiagnosticsError
from skilleval.results.codec import decode
from skilleval.results.matrix import Matrix
from skilleval.results.write import matrix_json
from skilleval.suite.load import load_suite


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


# The scripted model follows the skill (a Conventional Commits line only when the skill is
# loaded); echo repeats the request, skill or not.
TWO_MODELS = """
    version: 1
    type: capability
    skill: skill/SKILL.md
    models:
      - echo
      - provider: scripted
        responses:
          - arm: "on"
            output: "fix(parser): handle empty rows"
          - arm: "off"
            output: "I fixed the parser."
        default: commit-message
    prompts: ["{{request}}"]
    tests:
      - id: t1
        should_trigger: true
        vars: {request: "Commit message: fixed the CSV parser crash"}
        assert: &cc
          - type: regex
            value: "^(feat|fix|docs)(\\\\([a-z-]+\\\\))?: "
      - id: t2
        should_trigger: true
        vars: {request: "Commit message: added dark mode"}
        assert: *cc
      - id: t3
        should_trigger: false
        vars: {request: "What is the capital of France?"}
        assert:
          - type: not-contains
            value: "zzz"
"""


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    write(tmp_path / "skill" / "SKILL.md", COMMIT_SKILL)
    return write(tmp_path / "suite.yaml", TWO_MODELS)


def matrices() -> list[Path]:
    return sorted((Path(os.environ["SKILLEVAL_HOME"]) / "matrices").iterdir())


def test_two_models_give_two_columns_each_with_its_own_lift(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md, html, out_json = tmp_path / "m.md", tmp_path / "m.html", tmp_path / "m.json"
    code = run_cli(["run", str(suite), "-o", str(md), "-o", str(html), "-o", str(out_json)])
    err = capsys.readouterr().err
    assert code == 0, err  # a capability suite reports
    data = json.loads(out_json.read_text(encoding="utf-8"))
    assert data["kind"] == "matrix"
    labels = [c["label"] for c in data["columns"]]
    assert labels == ["echo", "scripted"]
    echo, scripted = data["columns"]
    # Each column is a whole run with its own lift: the scripted model is helped, echo is not.
    assert echo["lift"]["b"] == 0
    assert echo["lift"]["lift"] == 0
    # (The lift is over the tests the skill is for: those with should_trigger true.)
    assert scripted["lift"]["n"] == 2
    assert scripted["lift"]["b"] == 2
    assert scripted["lift"]["lift"] == 1.0
    assert echo["trigger"] is not None
    assert scripted["trigger"] is not None
    for column in data["columns"]:
        run_dir = Path(column["run_dir"])
        results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
        assert results["environment"]["model"]["kind"] == column["model"]["kind"]
        assert (run_dir / "report.html").is_file()
    # The terminal and Markdown show a column per model and a lift row.
    assert "echo" in err
    assert "scripted" in err
    assert "lift verdict" in err
    table = md.read_text(encoding="utf-8")
    assert "| | echo | scripted |" in table.replace("|  |", "| |")
    assert "lift (ON − OFF)" in table
    page = html.read_text(encoding="utf-8")
    assert page.count('<th scope="col" class="model">') == 2
    assert "<script" not in page
    # The matrix is also written beside the runs, with its own report.
    (folder,) = matrices()
    assert (folder / "matrix.json").is_file()
    assert (folder / "report.html").is_file()
    # The document reads back into the typed model unchanged.
    assert matrix_json(decode(Matrix, data)) == data


def test_a_model_that_cannot_load_is_an_error_column_and_the_others_still_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write(
        tmp_path / "s.yaml",
        """
        version: 1
        models: [echo, ./missing.gguf]
        tests:
          - prompt: "Say hi."
            assert: [{type: contains, value: hi}]
        """,
    )
    out = tmp_path / "m.json"
    code = run_cli(["run", str(suite), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 3, err
    echo, broken = json.loads(out.read_text(encoding="utf-8"))["columns"]
    assert echo["status"] == "complete"
    assert echo["gate"]["passed"] is True
    assert broken["status"] == "error"
    assert "missing.gguf" in broken["error"]
    assert "Traceback" not in err


def test_exit_code_is_the_worst_column(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.yaml",
        """
        version: 1
        models: [echo, {provider: scripted, default: "no"}]
        tests:
          - prompt: "yes"
            assert: [{type: contains, value: "yes"}]
        """,
    )
    assert run_cli(["run", str(suite), "-q"]) == 1


def test_model_option_runs_one_model_and_says_so(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_cli(["run", str(suite), "--model", "echo", "-q"])
    err = capsys.readouterr().err
    assert code == 0
    assert "--model echo replaces the suite's `models:`; one model runs" in err
    assert not (Path(os.environ["SKILLEVAL_HOME"]) / "matrices").exists()


def test_an_output_format_the_matrix_cannot_write_is_refused_before_running(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_cli(["run", str(suite), "-o", str(tmp_path / "r.xml")])
    assert code == 2
    assert "writes .json, .html, .md side by side" in capsys.readouterr().err
    assert not (Path(os.environ["SKILLEVAL_HOME"]) / "runs").exists()


def test_promptfoo_providers_become_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
    suite = write(
        tmp_path / "promptfooconfig.yaml",
        """
        providers:
          - echo
          - id: openai:chat:qwen2.5
            label: local-qwen
            config:
              apiBaseUrl: http://127.0.0.1:8080/v1
              temperature: 0.2
          - ollama:chat:llama3.2
        tests:
          - vars: {q: hi}
        prompts: ["{{q}}"]
        """,
    )
    loaded, _ = load_suite(suite)
    assert [m.label for m in loaded.models] == ["echo", "local-qwen", "ollama:llama3.2"]
    server = loaded.models[1].to_json()
    assert server["base_url"] == "http://127.0.0.1:8080/v1"
    assert server["model"] == "qwen2.5"
    assert loaded.models[2].to_json()["base_url"] == "http://127.0.0.1:11434/v1"
    assert any("config.temperature" in note for note in loaded.notes)


def test_hosted_provider_is_accepted_when_its_key_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    suite = write(
        tmp_path / "s.yaml",
        """
        providers: [openai:gpt-4o-mini]
        tests:
          - prompt: hi
        """,
    )
    loaded, _ = load_suite(suite)
    assert loaded.models == ()
    assert loaded.model.label == "gpt-4o-mini"
    spec = loaded.model.to_json()
    assert spec["base_url"] == "https://api.openai.com/v1"
    assert spec["model"] == "gpt-4o-mini"


def test_promptfoo_per_provider_prompts_pick_each_columns_tests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write(
        tmp_path / "promptfooconfig.yaml",
        """
        prompts:
          - {raw: "A: {{m}}", label: short}
          - {raw: "B: {{m}}", label: long}
        providers:
          - {id: echo, label: first, prompts: [short]}
          - {id: echo, label: second}
        tests:
          - vars: {m: hi}
            assert: [{type: starts-with, value: "A:"}]
        """,
    )
    loaded, _ = load_suite(suite)
    first, second = loaded.columns()
    assert [t.prompt.label for t in first.tests] == ["short"]
    assert [t.prompt.label for t in second.tests] == ["short", "long"]
    out = tmp_path / "m.json"
    assert run_cli(["run", str(suite), "-q", "-o", str(out)]) == 1
    columns = json.loads(out.read_text(encoding="utf-8"))["columns"]
    assert columns[0]["gate"]["passed"] is True
    assert columns[1]["summary"]["arms"]["default"]["failed"] == 1


def test_a_per_provider_prompt_label_that_names_no_prompt_is_an_error(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "promptfooconfig.yaml",
        """
        prompts: [{raw: "A: {{m}}", label: short}]
        providers:
          - {id: echo, prompts: [shrot]}
        tests:
          - vars: {m: hi}
        """,
    )
    with pytest.raises(DiagnosticsError, match="no prompt is labelled 'shrot'"):
        load_suite(suite)
