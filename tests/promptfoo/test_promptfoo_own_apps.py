"""promptfoo configs whose provider is the user's own application run as written: a Python
file (``call_api(prompt, options, context)``), an ``exec:`` command, an HTTP endpoint.

The configs in tests/data/promptfoo/own-apps/ are written for this test; what promptfoo
0.123.1 decided on each (outputs, verdicts, errors) is pinned beside it by
``tools/promptfoo_verdicts.py --as-written``. skilleval must reach the same output and the
same verdict for every test and provider; where promptfoo records an error, so does skilleval.
The HTTP endpoint is ``server.py`` of that folder, served on 127.0.0.1 by the test.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli
from skilleval.errors import DiagnosticsError
from skilleval.suite.load import Overrides, load_suite

DATA = Path(__file__).resolve().parents[1] / "data" / "promptfoo" / "own-apps"


@pytest.fixture
def server() -> Iterator[int]:
    spec = importlib.util.spec_from_file_location("own_app_server", DATA / "http" / "server.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    httpd = module.serve(0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield int(httpd.server_address[1])
    httpd.shutdown()
    httpd.server_close()


def _copy(folder: str, tmp_path: Path, port: int | None = None) -> Path:
    work = tmp_path / folder
    shutil.copytree(DATA / folder, work)
    if port is not None:
        for path in work.glob("*.yaml"):
            path.write_text(path.read_text().replace("__PORT__", str(port)))
    return work


def _records(config: Path, capsys: pytest.CaptureFixture[str]) -> list[list[dict[str, Any]]]:
    """Per model (column), its records in test order."""
    code = run_cli(["run", str(config), "--json", "--no-entry-points", "--no-cache"])
    doc = json.loads(capsys.readouterr().out)
    if "columns" not in doc:
        return [doc["records"]]
    assert code in (0, 1, 3)
    columns = []
    for column in doc["columns"]:
        lines = (Path(column["run_dir"]) / "results.jsonl").read_text().splitlines()
        columns.append([json.loads(line) for line in lines if line.strip()])
    return columns


def _pinned(config: Path) -> list[list[dict[str, Any]]]:
    name = (
        "promptfoo-verdicts.json"
        if config.stem == "promptfooconfig"
        else f"{config.stem}-verdicts.json"
    )
    rows = json.loads((config.parent / name).read_text())["results"]
    providers: list[str] = []
    for row in rows:
        if row["provider"] not in providers:
            providers.append(row["provider"])
    return [
        sorted((r for r in rows if r["provider"] == p), key=lambda r: r["test_index"])
        for p in providers
    ]


def _agree(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    if theirs["error"] and not theirs["asserts"]:
        assert ours["status"] == "error", (ours, theirs)
        assert ours["error"], ours
        return
    output = theirs["output"]
    if not isinstance(output, str):
        output = json.dumps(output, separators=(",", ":"))
    assert ours["output"] == output
    got = [(a["type"], a["status"] == "pass") for a in ours["asserts"]]
    assert got == [(a["type"], a["pass"]) for a in theirs["asserts"]]


CONFIGS = [
    ("python", "promptfooconfig.yaml"),
    ("python", "async.yaml"),
    ("exec", "promptfooconfig.yaml"),
    ("http", "promptfooconfig.yaml"),
    ("http", "status.yaml"),
    ("http", "plain.yaml"),
    ("tools", "promptfooconfig.yaml"),
    ("tools", "listed.yaml"),
]


@pytest.mark.parametrize(("folder", "name"), CONFIGS, ids=[f"{f}/{n}" for f, n in CONFIGS])
def test_own_application_gives_promptfoos_outputs_and_verdicts(
    folder: str,
    name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    server: int,
) -> None:
    work = _copy(folder, tmp_path, server if folder == "http" else None)
    monkeypatch.chdir(work)
    ours = _records(work / name, capsys)
    theirs = _pinned(DATA / folder / name)
    assert len(ours) == len(theirs)
    for column, pinned in zip(ours, theirs, strict=True):
        assert len(column) == len(pinned)
        for record, row in zip(column, pinned, strict=True):
            _agree(record, row)


def test_a_python_providers_error_names_its_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    work = _copy("python", tmp_path)
    monkeypatch.chdir(work)
    (record,) = [
        r
        for r in _records(work / "promptfooconfig.yaml", capsys)[0]
        if r["test_id"] == "bats-raise"
    ]
    assert record["status"] == "error"
    assert "raised ValueError at app.py:9: the app failed" in record["error"]


def test_a_python_provider_past_its_time_limit_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "slow.py").write_text(
        "def call_api(prompt, options, context):\n    while True:\n        pass\n"
    )
    (tmp_path / "suite.yaml").write_text(
        "version: 1\nmodel: {provider: python, path: slow.py, timeout: 0.5}\n"
        "prompts: ['{{q}}']\ntests:\n  - vars: {q: hi}\n    assert: [{type: contains, value: hi}]\n"
    )
    monkeypatch.chdir(tmp_path)
    (record,) = _records(tmp_path / "suite.yaml", capsys)[0]
    assert record["status"] == "error"
    assert "stopped after 0.5 s" in record["error"]


def test_an_exec_command_past_its_time_limit_is_killed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "suite.yaml").write_text(
        "version: 1\nmodel:\n  provider: exec\n  command: python3 -c 'import time; time.sleep(30)'\n"
        "  timeout: 0.5\n"
        "prompts: ['{{q}}']\ntests:\n  - vars: {q: hi}\n    assert: [{type: contains, value: hi}]\n"
    )
    monkeypatch.chdir(tmp_path)
    (record,) = _records(tmp_path / "suite.yaml", capsys)[0]
    assert record["status"] == "error"
    assert "timed out after 0.5 s" in record["error"]


def test_a_missing_python_provider_file_is_refused_at_load(tmp_path: Path) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['{{q}}']\nproviders:\n  - file://nowhere.py\ntests:\n  - vars: {q: hi}\n"
    )
    with pytest.raises(DiagnosticsError) as caught:
        load_suite(config, Overrides(entry_points=False))
    assert "python provider file not found: nowhere.py" in str(caught.value)


@pytest.mark.parametrize(
    ("pid", "named", "nearest"),
    [
        ("bedrock:anthropic.claude-3", "AWS Bedrock", "`http` provider"),
        ("huggingface:text-generation:gpt2", "Hugging Face's inference API", "hf:OWNER/REPO:QUANT"),
        ("cerebras:llama3.1-8b", "Cerebras' API", "https://api.cerebras.ai/v1"),
        ("adaline:openai:chat:gpt-4o", "Adaline's gateway", "openai:chat:NAME"),
        ("file://provider.js", "JavaScript provider", "file://provider.py"),
    ],
)
def test_an_unsupported_provider_is_refused_by_name_at_its_position(
    tmp_path: Path, pid: str, named: str, nearest: str
) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(f"prompts: ['hi']\nproviders:\n  - echo\n  - {pid}\ntests:\n  - vars: {{}}\n")
    with pytest.raises(DiagnosticsError) as caught:
        load_suite(config, Overrides(entry_points=False))
    (diag,) = caught.value.diagnostics
    assert (diag.where.line, diag.where.col) == (4, 5)
    assert named in diag.message
    assert nearest in diag.message


def test_prompt_functions_and_a_test_generator_give_promptfoos_prompts_and_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    work = _copy("hooks", tmp_path)
    monkeypatch.chdir(work)
    suite, _ = load_suite(work / "promptfooconfig.yaml", Overrides(entry_points=False))
    chats = [t for t in suite.tests if t.prompt.messages]
    # promptfoo renders what a prompt function returns again, with the vars.
    assert [m for _, m in chats[0].prompt.messages] == [
        "Answer in one line.",
        "Tell me about ants ({{ topic }} again)",
    ]
    (column,) = _records(work / "promptfooconfig.yaml", capsys)
    pinned = json.loads((DATA / "hooks" / "promptfoo-verdicts.json").read_text())["results"]
    assert len(column) == len(pinned) == 6
    by_place = {(r["test_index"], r["prompt_index"]): r for r in pinned}
    prompts = ["file://prompt.py:build", "file://prompt.js", "file://prompt.js:shout"]
    for n, record in enumerate(column):
        theirs = by_place[(n // 3, n % 3)]
        assert record["status"] == "pass"
        assert theirs["pass"]
        if record["messages"][0]["role"] != "system":
            assert record["output"] == theirs["output"], prompts[n % 3]
        else:  # promptfoo's echo returns the chat as JSON; skilleval's, its last user message
            assert record["output"] in theirs["output"]


def test_an_es_module_prompt_function_is_refused_with_its_reason(tmp_path: Path) -> None:
    work = _copy("hooks", tmp_path)
    config = work / "promptfooconfig.yaml"
    config.write_text(config.read_text().replace("file://prompt.js:shout", "file://esm.mjs"))
    with pytest.raises(DiagnosticsError) as caught:
        load_suite(config, Overrides(entry_points=False))
    (diag,) = caught.value.diagnostics
    assert diag.where.line == 7
    assert "`esm.mjs` is an ES module (import/export)" in diag.message
    assert "not found" not in diag.message


def test_a_prompt_function_that_raises_is_refused_at_the_test_with_its_line(
    tmp_path: Path,
) -> None:
    work = _copy("hooks", tmp_path)
    (work / "prompt.py").write_text("def build(context):\n    return 1 / 0\n")
    with pytest.raises(DiagnosticsError) as caught:
        load_suite(work / "promptfooconfig.yaml", Overrides(entry_points=False))
    messages = [d.message for d in caught.value.diagnostics]
    assert messages
    assert all("prompt.py:build raised ZeroDivisionError at " in m for m in messages)
    assert all("prompt.py:2: division by zero" in m for m in messages)


def test_a_test_generator_must_return_a_list(tmp_path: Path) -> None:
    work = _copy("hooks", tmp_path)
    (work / "gen.py").write_text("def generate_tests():\n    return {'vars': {}}\n")
    with pytest.raises(DiagnosticsError) as caught:
        load_suite(work / "promptfooconfig.yaml", Overrides(entry_points=False))
    (diag,) = caught.value.diagnostics
    assert "must return a list of tests, not dict" in diag.message
    assert diag.where.line == 10


def test_nunjucks_filters_in_javascript_give_promptfoos_prompt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    work = _copy("filters", tmp_path)
    monkeypatch.chdir(work)
    ((record,),) = _records(work / "promptfooconfig.yaml", capsys)
    (pinned,) = _pinned(DATA / "filters" / "promptfooconfig.yaml")
    assert len(pinned) == 1
    _agree(record, pinned[0])
    assert record["status"] == "pass"


@pytest.mark.parametrize(
    ("written", "source", "words"),
    [
        ("file://shout.js", None, "promptfoo reads a filter's file as a path"),
        ("esm.js", "import x from 'y';\nexport default (v) => v;\n", "is an ES module"),
        ("missing.js", None, "filter file not found: missing.js"),
        ("broken.js", "module.exports = (v) => {\n", "JavaScript syntax error"),
    ],
)
def test_a_filter_that_cannot_run_is_refused_at_its_key(
    tmp_path: Path, written: str, source: str | None, words: str
) -> None:
    work = _copy("filters", tmp_path)
    if source is not None:
        (work / written).write_text(source)
    config = work / "promptfooconfig.yaml"
    config.write_text(config.read_text().replace("shout: ./shout.js", f"shout: {written}"))
    with pytest.raises(DiagnosticsError) as caught:
        load_suite(config, Overrides(entry_points=False))
    (diag,) = caught.value.diagnostics
    assert (diag.where.line, diag.where.col) == (4, 10)
    assert words in diag.message


def test_a_filter_that_throws_is_that_tests_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    work = _copy("filters", tmp_path)
    (work / "shout.js").write_text("module.exports = (v) => { throw new Error('no shouting'); };\n")
    monkeypatch.chdir(work)
    ((record,),) = _records(work / "promptfooconfig.yaml", capsys)
    assert record["status"] == "error"
    assert "no shouting" in record["error"]


def test_a_config_of_own_applications_is_not_warned_about_decoding(tmp_path: Path) -> None:
    work = _copy("exec", tmp_path)
    suite, _ = load_suite(work / "promptfooconfig.yaml", Overrides(entry_points=False))
    assert not any("decoding is greedy" in n for n in suite.notes)
    config = work / "promptfooconfig.yaml"
    config.write_text(config.read_text().replace("providers:\n", "providers:\n  - echo\n"))
    suite, _ = load_suite(config, Overrides(entry_points=False))
    assert any("decoding is greedy" in n for n in suite.notes)


def test_validate_without_plugins_runs_no_python_hook(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = _copy("hooks", tmp_path)
    (work / "ran").unlink(missing_ok=True)
    (work / "prompt.py").write_text(
        "from pathlib import Path\n\n\ndef build(context):\n"
        "    Path(__file__).with_name('ran').write_text('yes')\n    return 'hi'\n"
    )
    config = work / "promptfooconfig.yaml"
    assert run_cli(["validate", "--no-plugins", str(config)]) == 4
    assert "the test generator gen.py is not run (--no-plugins)" in capsys.readouterr().err
    config.write_text(
        config.read_text().replace("tests: file://gen.py", "tests:\n  - vars: {topic: bees}")
    )
    assert run_cli(["validate", "--no-plugins", str(config)]) == 0
    assert "prompt function prompt.py:build is not run (--no-plugins)" in capsys.readouterr().err
    assert not (work / "ran").exists()
    assert run_cli(["validate", str(config)]) == 0
    assert (work / "ran").exists()


def test_a_transform_that_does_not_parse_is_refused_at_load(tmp_path: Path) -> None:
    work = _copy("http", tmp_path, 1)
    config = work / "promptfooconfig.yaml"
    text = config.read_text()
    start = text.index("transformResponse:")
    end = text.index("\n", start)
    config.write_text(text[:start] + "transformResponse: 'json.reply +'" + text[end:])
    with pytest.raises(DiagnosticsError) as caught:
        load_suite(config, Overrides(entry_points=False))
    (diag,) = caught.value.diagnostics
    assert diag.where.line == 7
    assert "JavaScript syntax error at `transform_response`, line 1 of the value" in diag.message


def test_a_transform_that_throws_is_that_tests_error(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    server: int,
) -> None:
    work = _copy("http", tmp_path, server)
    config = work / "promptfooconfig.yaml"
    text = config.read_text()
    start = text.index("transformResponse:")
    end = text.index("\n", start)
    config.write_text(text[:start] + "transformResponse: 'json.missing.field'" + text[end:])
    monkeypatch.chdir(work)
    (column,) = _records(config, capsys)
    assert [r["status"] for r in column] == ["error", "error"]
    assert "JavaScript at `transform_response`" in column[0]["error"]
    assert "TypeError" in column[0]["error"]


@pytest.mark.parametrize(("name", "count"), [("js-tests.yaml", 2), ("generator-config.yaml", 3)])
def test_a_generators_tests_are_promptfoos(
    name: str,
    count: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    work = _copy("hooks", tmp_path)
    monkeypatch.chdir(work)
    ours = _records(work / name, capsys)
    theirs = _pinned(DATA / "hooks" / name)
    assert [len(c) for c in ours] == [len(c) for c in theirs] == [count]
    for record, row in zip(ours[0], theirs[0], strict=True):
        _agree(record, row)


def test_nunjucks_filters_belong_to_promptfoos_templates(tmp_path: Path) -> None:
    work = _copy("filters", tmp_path)
    suite = work / "suite.yaml"
    suite.write_text(
        "version: 1\nmodel: echo\nnunjucksFilters: {shout: shout.js}\n"
        "prompts: ['{{ name | shout }}']\ntests:\n  - vars: {name: ada}\n"
    )
    with pytest.raises(DiagnosticsError) as caught:
        load_suite(suite, Overrides(entry_points=False))
    assert "`nunjucksFilters` is promptfoo's" in str(caught.value)
    suite.write_text(suite.read_text().replace("version: 1\n", "version: 1\ncompat: promptfoo\n"))
    loaded, _ = load_suite(suite, Overrides(entry_points=False))
    assert loaded.tests
