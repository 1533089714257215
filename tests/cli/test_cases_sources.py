"""``skilleval cases`` on suites whose tests live in other files, and on runs made with other
settings than the suite writes, or with nothing failed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from skilleval.cli import run_cli


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def latest_run() -> Path:
    return Path(os.environ["SKILLEVAL_HOME"]) / "runs" / "latest"


def run(suite: str, capsys: pytest.CaptureFixture[str], *args: str) -> int:
    code = run_cli(["run", suite, "-q", *args])
    capsys.readouterr()
    return code


def cases(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    got = run_cli(["cases", "--json", *args])
    out = capsys.readouterr()
    assert got == 0, out.err
    loaded: dict[str, Any] = json.loads(out.out)
    return loaded


def parse(text: str) -> Any:
    return YAML(typ="safe").load(text)


FILES_SUITE = """# yaml-language-server: $schema=schemas/suite.schema.json
version: 1
type: capability
model:
  provider: scripted
  responses:
    - match: "French"
      output: "bonjour"
    - match: "."
      output: "hello there"
tests:
  - file://cases/tests.yaml
  - file://cases/more.csv
# Two ways to say hello.
prompts:
  - {raw: "Say hi to {{who}}", label: plain}
  - {raw: "Please greet {{who}} warmly", label: warm}
"""

TESTS_FILE = """
- id: greet
  vars:
    who: [Ann, Bob]
  assert:
    - type: icontains
      value: hello
    - type: python
      value: file://check.py
"""


def test_cases_from_tests_files_keep_their_meaning_from_another_folder(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("files.yaml").write_text(FILES_SUITE, encoding="utf-8")
    Path("cases").mkdir()
    Path("cases/tests.yaml").write_text(TESTS_FILE, encoding="utf-8")
    Path("cases/check.py").write_text(
        "def get_assert(output, context):\n    return 'Bob' in context['vars']['who']\n",
        encoding="utf-8",
    )
    Path("cases/more.csv").write_text("who,__expected\nCarl,icontains:bonjour\n", "utf-8")
    run("files.yaml", capsys)
    Path("out").mkdir()
    doc = cases(capsys, str(latest_run()), "-o", "out/grown.yaml")
    found = {c["id"]: c for c in doc["cases"]}
    # Each prompt's failure of one written test is one case, which runs every prompt again;
    # a list var's item stays this test's item.
    assert sorted(found) == ["carl-plain/default/0", "greet-1-plain/default/0"]
    greet = found["greet-1-plain/default/0"]
    assert greet["also"] == [{"test": "greet-1[warm]", "arm": "default", "trial": 0}]
    assert greet["test"]["vars"] == {"who": "Ann"}
    # Paths are written for the folder of -o, in the file and in --json alike.
    assert greet["test"]["assert"] == [{"type": "python", "value": "file://../cases/check.py"}]
    # From CSV, the assertion is rebuilt from what was loaded.
    assert found["carl-plain/default/0"]["test"]["assert"] == [
        {"type": "icontains", "value": "bonjour"}
    ]
    text = Path("out/grown.yaml").read_text(encoding="utf-8")
    assert "# Two ways to say hello.\nprompts:\n" in text
    assert text.startswith("# yaml-language-server: $schema=../schemas/suite.schema.json\n")
    assert "file://cases/tests.yaml" not in text
    written = parse(text)
    assert written["tests"][0]["assert"] == [
        {"type": "python", "value": "file://../cases/check.py"}
    ]
    assert run_cli(["run", "out/grown.yaml", "-q"]) == 0
    capsys.readouterr()
    grown = json.loads((latest_run() / "results.json").read_text(encoding="utf-8"))
    statuses = {r["test_id"]: r["status"] for r in grown["records"]}
    assert statuses == {
        "greet-1-plain/default/0[plain]": "fail",
        "greet-1-plain/default/0[warm]": "fail",
        "carl-plain/default/0[plain]": "fail",
        "carl-plain/default/0[warm]": "fail",
    }


def test_a_run_without_failures_writes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    Path("fine.yaml").write_text(
        "version: 1\nmodel: echo\ntests:\n  - {prompt: hi, assert: [{type: equals, value: hi}]}\n",
        encoding="utf-8",
    )
    assert run("fine.yaml", capsys) == 0
    assert run_cli(["cases", str(latest_run()), "-o", "grown.yaml"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("0 cases, 0 notes: nothing in run ")
    assert not Path("grown.yaml").exists()
    doc = cases(capsys, str(latest_run()))
    assert (doc["cases"], doc["notes"], doc["output"]) == ([], [], None)


def test_settings_given_on_the_run_command_line_are_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("fine.yaml").write_text(
        "version: 1\nmodel: {provider: scripted, default: hi}\n"
        "tests:\n  - {id: t, prompt: hello, assert: [{type: equals, value: hi}]}\n",
        encoding="utf-8",
    )
    assert run("fine.yaml", capsys, "--model", "echo") == 1
    doc = cases(capsys, str(latest_run()))
    assert [c["id"] for c in doc["cases"]] == ["t/default/0"]
    assert doc["changed_settings"] == ["model"]
    assert run_cli(["cases", str(latest_run())]) == 0
    assert "# The run's model differed from what the suite writes" in capsys.readouterr().out


def test_a_run_of_a_skill_folder_finds_its_folder_again(
    capsys: pytest.CaptureFixture[str],
) -> None:
    (Path("my-skill") / "evals").mkdir(parents=True)
    Path("my-skill/SKILL.md").write_text(
        "---\nname: csv-summary\ndescription: Summarise CSV files.\n---\nCount the rows.\n",
        encoding="utf-8",
    )
    Path("my-skill/evals/evals.json").write_text(
        json.dumps({"evals": [{"id": 1, "prompt": "Rows?", "must_have": ["^never$"]}]}),
        encoding="utf-8",
    )
    assert run("my-skill/", capsys, "--model", "echo") == 0
    doc = cases(capsys, str(latest_run()))
    assert doc["suite"].endswith("my-skill")
    assert [c["id"] for c in doc["cases"]] == ["eval-1/on/0"]


def test_cases_from_another_tool_s_file_are_written_in_skilleval_s_terms(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A PAI case sends its `input:` and grades with `string_match`: the case must carry the
    # prompt and the `contains` check the run made, not PAI's keys, which a suite refuses.
    Path("pai.yaml").write_text(
        "cases:\n  - id: rows\n    input: How many rows?\n"
        "    graders:\n      - {type: string_match, params: {pattern: never-there}}\n",
        encoding="utf-8",
    )
    assert run("pai.yaml", capsys, "--model", "echo") == 0
    doc = cases(capsys, str(latest_run()))
    assert [c["id"] for c in doc["cases"]] == ["rows/default/0"]
    test = doc["cases"][0]["test"]
    assert test["prompt"] == "How many rows?"
    assert test["assert"] == [{"type": "contains", "value": "never-there"}]
    # Pasted into a suite of its own, the case loads and fails as it did.
    suite = {"version": 1, "model": "echo", "tests": [test]}
    Path("grown.yaml").write_text(json.dumps(suite), encoding="utf-8")
    assert run("grown.yaml", capsys) == 1
