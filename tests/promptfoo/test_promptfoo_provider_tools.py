"""A promptfoo provider's `config.tools` and `config.functions` are what its tool-call checks
validate calls against, as in promptfoo: per column, through `--model`, from files, and with a
warning where a file cannot be read or the tools will not reach the model. The verdicts on
`tests/data/promptfoo/own-apps/tools/` are compared with promptfoo's in
test_promptfoo_own_apps.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli

DATA = Path(__file__).resolve().parents[1] / "data" / "promptfoo"
CASES = DATA.parent / "promptfoo-cases" / "agent-types"
CALL = '{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}'
TOOLS_CALL = (
    '[{"type": "function", "function": {"name": "get_weather",'
    ' "arguments": "{\\"city\\": \\"Paris\\"}"}}]'
)


def _app(tmp_path: Path) -> Path:
    shutil.copy(DATA / "own-apps" / "tools" / "app.py", tmp_path / "app.py")
    shutil.copy(DATA / "own-apps" / "tools" / "tools.json", tmp_path / "tools.json")
    return tmp_path


def _run(
    config: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[list[dict[str, Any]], str]:
    code = run_cli(["run", str(config), "--json", "--no-entry-points", "--no-cache", *extra])
    out = capsys.readouterr()
    assert code in (0, 1), out.err
    assert "Traceback" not in out.err
    doc = json.loads(out.out)
    if "columns" in doc:
        records = []
        for column in doc["columns"]:
            lines = (Path(column["run_dir"]) / "results.jsonl").read_text().splitlines()
            records += [json.loads(line) for line in lines if line.strip()]
        return records, out.err
    return doc["records"], out.err


def _statuses(records: list[dict[str, Any]]) -> list[str]:
    return [a["status"] for r in records for a in r["asserts"]]


def test_function_calls_are_checked_against_the_providers_functions_as_promptfoo_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The function-call cases pinned from promptfoo's runAssertion, where the functions are
    an OpenAI provider's `config.functions`, here on the provider of a config."""
    pinned = json.loads((CASES / "promptfoo-verdicts.json").read_text(encoding="utf-8"))
    from ruamel.yaml import YAML

    written = YAML(typ="safe", pure=True).load((CASES / "promptfooconfig.yaml").read_text())
    rows = [
        (test, row)
        for test, row in zip(written["tests"], pinned["results"], strict=True)
        if test["assert"][0]["type"] in ("is-valid-openai-function-call", "is-valid-function-call")
    ]
    assert len(rows) == 4
    functions = rows[0][0]["assert"][0]["config"]["functions"]
    config = {
        "prompts": ["{{reply}}"],
        "providers": [{"id": "file://app.py", "config": {"functions": functions}}],
        "tests": [
            {
                "vars": {"reply": t["metadata"]["output"]},
                "assert": [{"type": t["assert"][0]["type"]}],
            }
            for t, _ in rows
        ],
    }
    path = _app(tmp_path) / "promptfooconfig.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    records, _ = _run(path, capsys)
    assert _statuses(records) == [
        "pass" if row["asserts"][0]["pass"] else "fail" for _, row in rows
    ]
    assert "pass" in _statuses(records)
    assert "fail" in _statuses(records)


QUOTED_CALL = TOOLS_CALL.replace("'", "''")
SIDE_BY_SIDE = """prompts: ["{{reply}}"]
providers:
  - id: file://app.py
    label: weather
    config: {tools: file://tools.json}
  - id: file://app.py
    label: nothing
    config:
      tools: [{type: function, function: {name: launch, parameters: {type: object}}}]
tests:
  - vars:
      reply: 'CALL'
    assert: [{type: is-valid-openai-tools-call}]
""".replace("CALL", QUOTED_CALL)


def test_each_column_checks_against_its_own_providers_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _app(tmp_path) / "promptfooconfig.yaml"
    path.write_text(SIDE_BY_SIDE, encoding="utf-8")
    records, _ = _run(path, capsys)
    assert _statuses(records) == ["pass", "fail"]
    assert "no function with that name" in records[1]["asserts"][0]["reason"]


def test_a_model_given_on_the_command_line_keeps_the_tools_the_providers_declare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")
    config = (
        f"prompts: ['{QUOTED_CALL}']\n"
        "providers:\n  - id: openai:chat:gpt-4o-mini\n    config: {tools: file://tools.json}\n"
        "tests:\n  - assert: [{type: is-valid-openai-tools-call}]\n"
    )
    path = _app(tmp_path) / "promptfooconfig.yaml"
    path.write_text(config, encoding="utf-8")
    records, _ = _run(path, capsys, "--model", "echo")
    assert _statuses(records) == ["pass"]
    assert records[0]["output"] == TOOLS_CALL


def test_tools_are_read_for_the_checks_and_not_sent_to_the_model_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")
    path = _app(tmp_path) / "promptfooconfig.yaml"
    path.write_text(
        "prompts: ['{{q}}']\n"
        "providers:\n  - id: openai:chat:gpt-4o-mini\n    config: {tools: file://tools.json}\n"
        "tests:\n  - vars: {q: hi}\n    assert: [{type: is-valid-openai-tools-call}]\n",
        encoding="utf-8",
    )
    assert run_cli(["validate", str(path), "--no-entry-points"]) == 0
    err = capsys.readouterr().err
    assert (
        "promptfooconfig.yaml:3:5: warning: `config.tools` is read by the tool-call checks" in err
    )
    assert "not sent to the model" in err
    assert "SE305" not in err


@pytest.mark.parametrize(
    ("tools", "named"),
    [
        ("file://missing.json", "cannot read missing.json"),
        ("file://tools.py:get_tools", "tools made by a Python or JavaScript function"),
        ("file://app.py", "tools made by a Python or JavaScript function"),
    ],
)
def test_tools_that_cannot_be_read_are_named_and_the_checks_see_none(
    tools: str, named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _app(tmp_path) / "promptfooconfig.yaml"
    path.write_text(
        "prompts: ['{{reply}}']\n"
        f"providers:\n  - id: file://app.py\n    config: {{tools: '{tools}'}}\n"
        f"tests:\n  - vars: {{reply: '{TOOLS_CALL}'}}\n"
        "    assert: [{type: is-valid-openai-tools-call}]\n",
        encoding="utf-8",
    )
    records, err = _run(path, capsys)
    assert f"promptfooconfig.yaml:3:5: warning: `config.tools`: `{tools}`" in err
    assert named in err
    assert "the tool-call checks see no tools" in err
    assert _statuses(records) == ["fail"]
    assert "no tools are declared" in records[0]["asserts"][0]["reason"]


def test_import_writes_the_providers_tools_into_the_checks_and_keeps_the_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = shutil.copytree(DATA / "own-apps" / "tools", tmp_path / "tools")
    target = tmp_path / "elsewhere" / "suite.yaml"
    target.parent.mkdir()
    config = source / "promptfooconfig.yaml"
    assert run_cli(["import", "promptfoo", str(config), "-o", str(target)]) == 0, (
        capsys.readouterr().err
    )
    capsys.readouterr()
    text = target.read_text(encoding="utf-8")
    assert "get_weather" in text  # the file's tools, as data in each check's config
    ours, _ = _run(target, capsys)
    theirs, _ = _run(config, capsys)
    assert _statuses(ours) == _statuses(theirs) == ["pass", "fail", "fail", "fail", "fail"]


def test_import_says_when_the_tool_checks_sit_in_a_test_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = _app(tmp_path)
    (work / "tests.yaml").write_text(
        "- vars: {reply: hi}\n  assert: [{type: is-valid-openai-tools-call}]\n", encoding="utf-8"
    )
    config = work / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['{{reply}}']\n"
        "providers:\n  - id: file://app.py\n    config: {tools: file://tools.json}\n"
        "tests: file://tests.yaml\n",
        encoding="utf-8",
    )
    assert run_cli(["import", "promptfoo", str(config)]) == 0
    text = (work / "suite.yaml").read_text(encoding="utf-8")
    assert "reach only the tool-call checks written in this file" in text
