"""A plugin from outside the package adds a provider, an output format, a tool kind and a
lint check.

Its output format reads the typed run, as the built-in ones do, and writes a run on several
models side by side.

The plugin is a real installed distribution (an entry point in ``skilleval.plugins``, built
in the test) or the same file in a plugin folder; each of its three registrations is used in
a real ``skilleval run`` through the CLI.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from skilleval.cli import run_cli
from skilleval.exitcodes import ExitCode

PLUGIN = '''
import json
from dataclasses import dataclass

from skilleval import LintCheck, Matrix, Record, Run, lint_check, provider, reporter, tool_kind
from skilleval.trajectory import ToolResult
from skilleval.engine.base import Completion, ModelIdentity


@dataclass
class Relay:
    """Calls the `shout` tool with its word, then answers with what the tool returned."""

    word: str
    max_concurrency: int = 1

    def identity(self):
        return ModelIdentity(kind="relay", name="relay", details={"word": self.word})

    def complete(self, request):
        for message in request.messages:
            if message.content.startswith("Result of shout:"):
                answer = message.content.split("\\n", 1)[1]
                return Completion(text=json.dumps({"thought": "t", "action": {"final": answer}}))
        call = {"tool": "shout", "arguments": {"text": self.word}}
        return Completion(text=json.dumps({"thought": "t", "action": call}))

    def cache_salt(self, request):
        return ""

    def close(self):
        pass


@provider(
    "relay",
    schema={
        "type": "object",
        "properties": {"word": {"type": "string", "minLength": 1}},
        "required": ["word"],
    },
)
def relay(config, context):
    """Relays one tool call (a test provider)."""
    return Relay(config["word"])


def write_tsv_matrix(matrix: Matrix, dest):
    """Each model and its primary arm's pass rate."""
    rows = [f"{c.label}\\t{c.summary.arms[c.primary_arm].pass_rate}" for c in matrix.columns]
    dest.write_text("\\n".join(rows) + "\\n", encoding="utf-8")


@reporter("tsv", suffix=".tsv", side_by_side=write_tsv_matrix)
def write_tsv(run: Run, dest):
    """Test id, status and tool calls, tab-separated, from the typed run."""
    assert isinstance(run, Run) and all(isinstance(r, Record) for r in run.records)
    rows = [f"{r.test_id}\\t{r.status}\\t{r.agent.totals.tool_calls}" for r in run.records]
    dest.write_text("\\n".join(rows) + "\\n", encoding="utf-8")


@lint_check(LintCheck("RX001", "vague-prompt", "warning", "a prompt ends with 'it'"))
def vague(view):
    """A prompt that ends with 'it' leaves the model guessing."""
    for test in view.tests:
        if test.prompt.rstrip(".!?").endswith(" it"):
            yield test.where, f"the prompt of test '{test.id}' ends with 'it'"


class Prefixed:
    kind = "prefix"

    def __init__(self, prefix):
        self.prefix = prefix

    def run(self, arguments, workspace):
        return ToolResult(self.prefix + str(arguments.get("text", "")))

    def to_json(self):
        return {"kind": self.kind, "prefix": self.prefix}


@tool_kind("prefix", schema={"type": "string", "minLength": 1})
def prefix(value, ctx):
    """Returns its text argument after a fixed prefix."""
    if not value.endswith(" "):
        ctx.error("prefix must end with a space")
        return None
    return Prefixed(value)
'''

SUITE = """
version: 1
model: {provider: relay, word: hello}
tools:
  - name: shout
    parameters: {type: object, properties: {text: {type: string}}, required: [text]}
    prefix: "you said: "
tests:
  - id: relayed
    prompt: Say it
    assert:
      - {type: tool-called, value: {name: shout, args: {text: hello}}}
      - {type: equals, value: "you said: hello"}
"""


@pytest.fixture
def installed(tmp_path: Path) -> Iterator[Path]:
    """A real installed distribution naming one module in the skilleval.plugins group."""
    site = tmp_path / "site"
    (site / "relaypkg").mkdir(parents=True)
    (site / "relaypkg" / "__init__.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    info = site / "relaypkg-0.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: relaypkg\nVersion: 0.3\n")
    (info / "entry_points.txt").write_text("[skilleval.plugins]\nrelay = relaypkg\n")
    sys.path.insert(0, str(site))
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("relaypkg", None)


def suite_at(folder: Path, text: str = SUITE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "suite.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def results_of(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    doc: dict[str, object] = json.loads(capsys.readouterr().out)
    return doc


def test_an_installed_plugin_adds_a_provider_a_format_and_a_tool_kind(
    installed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = suite_at(tmp_path / "s")
    out = tmp_path / "out" / "results.tsv"
    assert run_cli(["run", str(suite), "-o", str(out), "--json"]) == ExitCode.OK
    doc = results_of(capsys)
    assert out.read_text(encoding="utf-8") == "relayed\tpass\t1\n"
    environment = doc["environment"]
    assert isinstance(environment, dict)
    assert environment["model_spec"] == {
        "provider": "relay",
        "label": "relay",
        "config": {"word": "hello"},
    }
    assert environment["model"]["details"] == {"word": "hello"}
    [record] = doc["records"]  # type: ignore[misc]
    assert record["output"] == "you said: hello"


def test_the_same_file_works_from_a_plugin_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "s" / "plugins"
    folder.mkdir(parents=True)
    (folder / "relay.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    suite = suite_at(tmp_path / "s", "plugins: [plugins]\n" + textwrap.dedent(SUITE))
    out = tmp_path / "results.tsv"
    code = run_cli(["run", str(suite), "--no-entry-points", "-o", str(out), "--json"])
    assert code == ExitCode.OK
    assert out.read_text(encoding="utf-8") == "relayed\tpass\t1\n"


def test_a_failing_run_through_plugins_exits_1_and_still_writes(
    installed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = suite_at(tmp_path / "s", SUITE.replace("word: hello", "word: bye"))
    out = tmp_path / "results.tsv"
    assert run_cli(["run", str(suite), "-o", str(out), "--json"]) == ExitCode.GATE_FAILED
    assert out.read_text(encoding="utf-8") == "relayed\tfail\t1\n"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ("word: hello", "word: hello, colour: red"),
            "suite.yaml:3:39: error: 'colour' does not apply to the relay provider",
        ),
        (("word: hello", "word: ''"), "suite.yaml:3:32: error: 'word' must not be empty"),
        (("word: hello", "wurd: hello"), "error: 'wurd' does not apply to the relay provider"),
        (("provider: relay", "provider: rlay"), "did you mean 'relay'?"),
        (('prefix: "you said: "', 'prefix: "you said:"'), "prefix must end with a space"),
    ],
)
def test_plugin_configs_are_checked_at_load_with_positions(
    installed: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: tuple[str, str],
    expected: str,
) -> None:
    suite = suite_at(tmp_path / "s", SUITE.replace(*change))
    assert run_cli(["run", str(suite)]) == ExitCode.INVALID
    assert expected in capsys.readouterr().err


def test_an_unknown_output_extension_is_refused_before_the_run(
    installed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = suite_at(tmp_path / "s")
    code = run_cli(["run", str(suite), "-o", str(tmp_path / "r.tab")])
    assert code == ExitCode.USAGE
    assert "use one of .json, .jsonl, .html, .xml, .md, .csv, .tsv" in capsys.readouterr().err
    assert not (tmp_path / "r.tab").exists()


def test_plugins_lists_every_kind_with_its_origin(
    installed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(["plugins", "--json"]) == ExitCode.OK
    listing = json.loads(capsys.readouterr().out)
    by_kind = {(p["kind"], p["name"]): p for p in listing}
    origin = "entry point 'relay' (relaypkg 0.3)"
    assert by_kind["provider", "relay"]["origin"] == origin
    assert by_kind["reporter", "tsv"]["suffix"] == ".tsv"
    assert by_kind["tool_kind", "prefix"]["origin"] == origin
    assert by_kind["provider", "gguf"]["origin"] == "builtin"
    assert by_kind["tool_kind", "mock"]["origin"] == "builtin"
    assert by_kind["reporter", "junit"]["suffix"] == ".xml"
    assert by_kind["lint_check", "vague-prompt"]["checks"] == ["RX001"]
    assert by_kind["lint_check", "test-set"]["origin"] == "builtin"
    kinds = {"assertion", "provider", "reporter", "tool_kind", "lint_check"}
    assert kinds == {p["kind"] for p in listing}


def test_a_plugin_provider_named_on_the_command_line_is_checked_too(
    installed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = suite_at(tmp_path / "s")
    assert run_cli(["run", str(suite), "--model", "relay"]) == ExitCode.INVALID
    assert (
        "command line: error: the relay provider: 'word' is a required property"
        in capsys.readouterr().err
    )


def test_a_format_that_raises_is_a_plugin_error_and_leaves_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "s" / "plugins"
    folder.mkdir(parents=True)
    (folder / "broken.py").write_text(
        "from skilleval import reporter\n\n"
        "@reporter('broken', suffix='.brk')\n"
        "def write(results, dest):\n"
        "    dest.write_text('half')\n"
        "    raise ValueError('disk full')\n",
        encoding="utf-8",
    )
    suite = suite_at(tmp_path / "s", "plugins: [plugins]\nmodel: echo\ntests: [{prompt: hi}]\n")
    out = tmp_path / "r.brk"
    assert run_cli(["run", str(suite), "--no-entry-points", "-o", str(out)]) == ExitCode.INVALID
    err = capsys.readouterr().err
    assert "plugins/broken.py:3:1: error: output format 'broken' could not write" in err
    assert "ValueError: disk full" in err
    assert not out.exists()
    assert list(tmp_path.glob(".r.brk*")) == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "    raise RuntimeError('no GPU')\n",
            "provider 'bad' failed to start: RuntimeError: no GPU",
        ),
        ("    return 42\n", "provider 'bad' returned int, which lacks identity()"),
    ],
)
def test_a_provider_that_cannot_start_is_a_plugin_error_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, message: str
) -> None:
    folder = tmp_path / "s" / "plugins"
    folder.mkdir(parents=True)
    (folder / "bad.py").write_text(
        "from skilleval import provider\n\n@provider('bad')\ndef bad(config, context):\n" + body,
        encoding="utf-8",
    )
    suite = suite_at(tmp_path / "s", "plugins: [plugins]\nmodel: bad\ntests: [{prompt: hi}]\n")
    assert run_cli(["run", str(suite), "--no-entry-points"]) == ExitCode.INVALID
    assert f"plugins/bad.py:3:1: error: {message}" in capsys.readouterr().err


def test_an_installed_format_writes_a_run_on_several_models_side_by_side(
    installed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two = SUITE.replace(
        "model: {provider: relay, word: hello}",
        "models: [{provider: relay, word: hello}, {provider: relay, word: bye}]",
    )
    suite = suite_at(tmp_path / "s", two)
    out = tmp_path / "side.tsv"
    code = run_cli(["run", str(suite), "-o", str(out)])
    assert code == ExitCode.GATE_FAILED  # the second model fails
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [line.split("\t")[1] for line in lines] == ["1.0", "0.0"]


def test_a_format_without_a_side_by_side_writer_is_refused_for_several_models(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "s" / "plugins"
    folder.mkdir(parents=True)
    (folder / "plain.py").write_text(
        "from skilleval import reporter\n\n"
        "@reporter('plain', suffix='.txt')\n"
        "def write(run, dest):\n"
        "    dest.write_text(run.run_id)\n",
        encoding="utf-8",
    )
    suite = suite_at(
        tmp_path / "s", "plugins: [plugins]\nmodels: [echo, echo]\ntests: [{prompt: hi}]\n"
    )
    out = tmp_path / "r.txt"
    assert run_cli(["run", str(suite), "--no-entry-points", "-o", str(out)]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "a run on several models writes .json, .html, .md side by side, not '.txt'" in err
    assert not out.exists()


METERED = '''
from skilleval import Capabilities, provider
from skilleval.engine.base import Completion, ModelIdentity


class Metered:
    max_concurrency = 1

    def identity(self):
        return ModelIdentity(kind="metered", name="metered")

    def complete(self, request):
        return Completion(text="ok", completion_tokens=10, latency_ms=100.0)

    def cache_salt(self, request):
        return ""

    def close(self):
        pass


@provider("metered", capabilities=Capabilities(DECLARED))
def metered(config, context):
    """A remote model that bills per call."""
    return Metered()
'''


@pytest.mark.parametrize(
    ("declared", "cost", "timed"),
    [("timed=True, costed=True", "error", True), ("", "pass", False)],
)
def test_a_plugin_provider_declares_what_its_calls_are(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    declared: str,
    cost: str,
    timed: bool,
) -> None:
    folder = tmp_path / "s" / "plugins"
    folder.mkdir(parents=True)
    (folder / "metered.py").write_text(METERED.replace("DECLARED", declared), encoding="utf-8")
    suite = suite_at(
        tmp_path / "s",
        "plugins: [plugins]\nmodel: metered\n"
        "tests: [{prompt: hi, assert: [{type: cost, value: 1}]}]\n",
    )
    args = ["run", str(suite), "--no-entry-points", "--no-cache", "--json"]
    run_cli(args)
    doc = results_of(capsys)
    [record] = doc["records"]  # type: ignore[misc]
    assert record["asserts"][0]["status"] == cost
    # Tokens per second are reported for a timed provider only (a cost unknown is an error).
    assert (doc["calls"]["generation_tokens_per_s"] is not None) == timed  # type: ignore[index]
    assert run_cli(["plugins", str(suite), "--kind", "provider", "--json"]) == ExitCode.OK
    listing = {p["name"]: p for p in json.loads(capsys.readouterr().out)}
    assert listing["metered"]["capabilities"] == [c for c in ("timed", "costed") if c in declared]
    assert listing["gguf"]["capabilities"] == ["timed", "keep_loaded", "measured", "scores"]
    assert listing["echo"]["capabilities"] == []


def test_an_installed_plugin_adds_a_lint_check_that_lint_ignore_knows(
    installed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = suite_at(tmp_path / "s")
    assert run_cli(["lint", str(suite)]) == ExitCode.OK  # a warning only
    err = capsys.readouterr().err
    assert "suite.yaml:9:5: warning: the prompt of test 'relayed' ends with 'it'" in err
    assert "[RX001 vague-prompt]" in err
    quiet = suite_at(
        tmp_path / "q",
        SUITE + "lint:\n  ignore: [{id: vague-prompt, reason: the relay ignores prompts}]\n",
    )
    assert run_cli(["lint", str(quiet), "--json"]) == ExitCode.OK
    [file] = json.loads(capsys.readouterr().out)["files"]
    [finding] = file["findings"]
    assert (finding["code"], finding["silenced"]) == ("RX001", "the relay ignores prompts")


def test_a_lint_check_that_raises_is_an_error_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "s" / "plugins"
    folder.mkdir(parents=True)
    (folder / "broken.py").write_text(
        "from skilleval import LintCheck, lint_check\n\n"
        "@lint_check(LintCheck('BX001', 'broken', 'error', 'always raises'))\n"
        "def broken(view):\n"
        "    raise ValueError('no view today')\n",
        encoding="utf-8",
    )
    suite = suite_at(tmp_path / "s", "plugins: [plugins]\nmodel: echo\ntests: [{prompt: hi}]\n")
    assert run_cli(["lint", str(suite)]) != ExitCode.OK
    err = capsys.readouterr().err
    assert (
        "plugins/broken.py:3:1: error: lint check 'broken' failed: ValueError: no view today" in err
    )
