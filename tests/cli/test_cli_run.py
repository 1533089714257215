"""`skilleval run` from the outside: suite files in, exit codes and result files out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from skilleval.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def run_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code = run_cli([*args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def latest_run() -> Path:
    return Path(os.environ["SKILLEVAL_HOME"]) / "runs" / "latest"


SCRIPTED = """
version: 1
model:
  provider: scripted
  responses:
    - id: paris
      output: "Paris is the capital of France."
    - match: "(?i)spain"
      output: "I think it is Madrid."
prompts: ["Capital of {{country}}?"]
tests:
  - id: paris
    vars: {country: France}
    assert:
      - type: icontains
        value: paris
  - id: madrid
    vars: {country: Spain}
    assert:
      - type: icontains
        value: madrid
      - type: not-regex
        value: "(?i)i think"
"""


def test_run_writes_versioned_results_and_streams_jsonl(tmp_path: Path, capsys) -> None:
    suite = write(tmp_path / "suite.yaml", SCRIPTED)
    code, doc = run_json(["run", str(suite)], capsys)
    assert code == 1  # madrid hedges, so the regression gate (threshold 1.0) fails
    assert doc["version"] == 1
    assert doc["summary"]["arms"]["default"]["passed"] == 1
    run = latest_run()
    lines = (run / "results.jsonl").read_text().splitlines()
    assert [json.loads(line)["test_id"] for line in lines] == ["paris", "madrid"]
    assert json.loads((run / "results.json").read_text())["run_id"] == doc["run_id"]
    madrid = next(r for r in doc["records"] if r["test_id"] == "madrid")
    hedge = madrid["asserts"][1]
    assert (hedge["type"], hedge["negated"], hedge["status"]) == ("not-regex", True, "fail")


def test_json_flag_prints_exactly_one_document(tmp_path: Path, capsys) -> None:
    suite = write(tmp_path / "suite.yaml", SCRIPTED)
    run_cli(["run", str(suite), "--json"])
    captured = capsys.readouterr()
    json.loads(captured.out)  # one document, nothing else
    assert "pass rate" in captured.err


def test_threshold_and_capability_gates(tmp_path: Path, capsys) -> None:
    lenient = write(
        tmp_path / "lenient.yaml", SCRIPTED.replace("version: 1", "version: 1\nthreshold: 0.5")
    )
    assert run_cli(["run", str(lenient)]) == 0
    capability = write(
        tmp_path / "cap.yaml", SCRIPTED.replace("version: 1", "version: 1\ntype: capability")
    )
    assert run_cli(["run", str(capability)]) == 0


def test_filter_selects_tests_and_reports_no_match(tmp_path: Path, capsys) -> None:
    suite = write(tmp_path / "suite.yaml", SCRIPTED)
    code, doc = run_json(["run", str(suite), "-k", "par*"], capsys)
    assert code == 0
    assert [r["test_id"] for r in doc["records"]] == ["paris"]
    assert run_cli(["run", str(suite), "-k", "nothing-like-this"]) == 5


def test_second_run_is_served_from_the_cache(tmp_path: Path, capsys) -> None:
    suite = write(tmp_path / "suite.yaml", SCRIPTED)
    _, first = run_json(["run", str(suite)], capsys)
    _, second = run_json(["run", str(suite)], capsys)
    assert first["calls"]["model_calls"] == 2
    assert second["calls"]["model_calls"] == 0
    assert second["calls"]["cache_hits"] == 2
    _, third = run_json(["run", str(suite), "--no-cache"], capsys)
    assert third["calls"]["model_calls"] == 2


def test_plugin_folder_types_work_by_name_and_negated(capsys) -> None:
    code, doc = run_json(["run", str(ROOT / "examples/plugins/suite.yaml")], capsys)
    assert code == 0
    types = {a["type"] for r in doc["records"] for a in r["asserts"]}
    assert {"no-apology", "not-no-apology", "sentence-count"} <= types
    origins = {t["name"]: t["origin"] for t in doc["environment"]["registry"]}
    assert origins["no-apology"].endswith("asserts/style.py")


def test_plugin_that_raises_gives_an_error_verdict_and_the_run_goes_on(
    tmp_path: Path, capsys
) -> None:
    write(
        tmp_path / "asserts" / "flaky.py",
        """
        from skilleval import assertion

        @assertion("explodes")
        def explodes(check):
            "Always raises."
            raise RuntimeError("disk on fire")
    """,
    )
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        plugins: [asserts]
        model: echo
        tests:
          - id: first
            prompt: hello
            assert:
              - type: explodes
          - id: second
            prompt: world
            assert:
              - type: contains
                value: world
    """,
    )
    code, doc = run_json(["run", str(suite)], capsys)
    assert code == 3
    first, second = doc["records"]
    assert first["status"] == "error"
    assert "disk on fire" in first["asserts"][0]["error"]
    assert second["status"] == "pass"


def test_default_test_weights_metrics_and_threshold(tmp_path: Path, capsys) -> None:
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        model: echo
        defaultTest:
          assert:
            - type: max-length
              value: 5
              weight: 0
              metric: brevity
        tests:
          - id: partial
            prompt: alpha beta
            threshold: 0.5
            assert:
              - type: contains
                value: alpha
              - type: contains
                value: gamma
          - id: strict
            prompt: alpha beta
            assert:
              - type: contains
                value: alpha
              - type: contains
                value: gamma
    """,
    )
    code, doc = run_json(["run", str(suite), "--no-cache"], capsys)
    partial, strict = doc["records"]
    assert partial["status"] == "pass"
    assert partial["score"] == 0.5
    assert strict["status"] == "fail"
    assert partial["metrics"] == {"brevity": 0.0}
    assert partial["asserts"][0]["from_default"] is True
    assert code == 1


def test_tests_from_csv_jsonl_and_yaml_globs(tmp_path: Path, capsys) -> None:
    write(
        tmp_path / "data" / "a.csv",
        """
        country,__expected,__expected2,__description
        France,icontains:france,not-contains:Spain,csv row
    """,
    )
    write(
        tmp_path / "data" / "b.jsonl",
        """
        {"id": "jsonl-one", "vars": {"country": "Peru"}, "assert": [{"type": "contains", "value": "Peru"}]}
    """,
    )
    write(
        tmp_path / "data" / "more" / "c.yaml",
        """
        - id: yaml-one
          vars: {country: Chile}
          assert: [{type: icontains, value: chile}]
    """,
    )
    write(tmp_path / "fixtures" / "expected.txt", "Chile")
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        model: echo
        prompts: ["Capital of {{country}}?"]
        tests:
          - file://data/*.csv
          - file://data/b.jsonl
          - file://data/more/*.yaml
          - id: fixture
            vars: {country: Chile}
            assert:
              - type: contains
                value: file://fixtures/expected.txt
    """,
    )
    code, doc = run_json(["run", str(suite)], capsys)
    assert code == 0, doc["gate"]
    assert [r["test_id"] for r in doc["records"]] == ["csv-row", "jsonl-one", "yaml-one", "fixture"]
    csv_asserts = doc["records"][0]["asserts"]
    assert [a["type"] for a in csv_asserts] == ["icontains", "not-contains"]


def test_transform_expr_and_jmespath(tmp_path: Path, capsys) -> None:
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        model:
          provider: scripted
          default: '{"answer": "Paris", "confidence": 4}'
        tests:
          - id: jmes
            prompt: q
            options:
              transform: {jmespath: answer}
            assert:
              - type: equals
                value: Paris
          - id: expr
            prompt: q
            assert:
              - type: expr
                value: json.confidence >= 3 and len(output) < 100
              - type: contains
                transform: upper(json.answer)
                value: PARIS
    """,
    )
    code, doc = run_json(["run", str(suite)], capsys)
    assert code == 0, [a for r in doc["records"] for a in r["asserts"]]


def test_module_entry_point_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "skilleval", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0
    assert "skilleval" in proc.stdout


def test_unknown_output_extension_is_a_usage_error(tmp_path: Path, capsys) -> None:
    suite = write(tmp_path / "suite.yaml", SCRIPTED)
    assert run_cli(["run", str(suite), "-o", str(tmp_path / "x.pdf")]) == 2


def test_missing_gguf_is_an_error_result_not_a_crash(tmp_path: Path, capsys) -> None:
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        model: missing/model.gguf
        tests:
          - id: one
            prompt: hi
            assert: [{type: contains, value: hi}]
          - id: two
            prompt: hi again
    """,
    )
    code, doc = run_json(["run", str(suite)], capsys)
    assert code == 3
    assert all(r["status"] == "error" for r in doc["records"])
    assert "not found" in doc["records"][0]["error"].lower()


def test_a_test_with_its_own_prompt_does_not_rename_the_others(tmp_path: Path, capsys) -> None:
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        model: echo
        prompts: ["Say {{word}}"]
        tests:
          - {id: uses-the-shared-prompt, vars: {word: hi}}
          - {id: brings-its-own, prompt: "Just this"}
    """,
    )
    _, doc = run_json(["run", str(suite)], capsys)
    assert [r["test_id"] for r in doc["records"]] == ["uses-the-shared-prompt", "brings-its-own"]


def test_several_prompts_run_every_test_once_per_prompt(tmp_path: Path, capsys) -> None:
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        model: echo
        prompts:
          - {raw: "Say {{word}}", label: say}
          - {raw: "Shout {{word}}", label: shout}
        tests:
          - {id: greet, vars: {word: hi}, assert: [{type: contains, value: hi}]}
    """,
    )
    _, doc = run_json(["run", str(suite)], capsys)
    assert [r["test_id"] for r in doc["records"]] == ["greet[say]", "greet[shout]"]
    assert doc["records"][1]["prompt"] == "Shout hi"


def test_a_separate_judge_model_grades_alongside_generation(tmp_path: Path, capsys) -> None:
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        type: capability
        model:
          provider: scripted
          default: "Paris is the capital."
        judge:
          provider: scripted
          responses:
            - match: "names the capital"
              output: '{"reason": "names Paris", "score": 5, "pass": true}'
        tests:
          - {id: a, prompt: "Capital of France?", assert: [{type: llm-rubric, value: names the capital}]}
          - {id: b, prompt: "Capital, again?", assert: [{type: llm-rubric, value: names the capital}]}
          - {id: c, prompt: "No judge here", assert: [{type: contains, value: Paris}]}
    """,
    )
    code, doc = run_json(["run", str(suite)], capsys)
    assert code == 0
    assert [r["test_id"] for r in doc["records"]] == ["a", "b", "c"]
    assert all(r["status"] == "pass" for r in doc["records"])
    assert doc["calls"]["judge_calls"] == 2
    assert doc["judge"]["same_as_generator"] is False


def test_judge_model_flag_overrides_the_suite(tmp_path: Path, capsys) -> None:
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        type: capability
        model: {provider: scripted, default: "Paris."}
        tests:
          - {id: a, prompt: "Capital?", assert: [{type: llm-rubric, value: names a city}]}
    """,
    )
    _, doc = run_json(["run", str(suite), "--judge-model", "echo"], capsys)
    assert doc["judge"]["model"]["kind"] == "echo"
    assert doc["judge"]["same_as_generator"] is False
