"""The agent machinery: tools, workspaces, the loop, and the agentic assertion types."""

from __future__ import annotations

import json
import os
import textwrap
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from skilleval.agent import (
    AgentRun,
    CommandTool,
    Environment,
    FileCopy,
    MockCase,
    MockTool,
    PathEscape,
    SetupCommand,
    ToolSpec,
    args_match,
    create_workspace,
    merge_tools,
    parse_environment,
    parse_tools,
    resolve_inside,
    run_agent,
    run_process,
    step_schema,
)
from skilleval.agent.loop import decoding_schema, parse_step
from skilleval.assertions.api import Check, Verdict
from skilleval.assertions.builtin import agentic
from skilleval.assertions.registry import Registry
from skilleval.engine.base import Completion, Message, ModelIdentity, Request
from skilleval.engine.testing import ScriptedConfig, ScriptedProvider
from skilleval.errors import Location, ProviderError
from skilleval.suite.yamlio import parse_yaml

# -- helpers ----------------------------------------------------------------------------------


class FakeProvider:
    """Replies from a queue, one per call; records every request."""

    max_concurrency = 1

    def __init__(self, replies: Iterable[str | dict[str, Any] | Completion | Exception]) -> None:
        self.replies = list(replies)
        self.requests: list[Request] = []

    def identity(self) -> ModelIdentity:
        return ModelIdentity(kind="fake", name="fake")

    def complete(self, request: Request) -> Completion:
        self.requests.append(request)
        reply = self.replies.pop(0) if self.replies else {"action": {"final": "out of replies"}}
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, Completion):
            return reply
        text = reply if isinstance(reply, str) else json.dumps(reply)
        return Completion(text=text, prompt_tokens=10, completion_tokens=5, latency_ms=1.0)

    def cache_salt(self, request: Request) -> str:
        return ""

    def close(self) -> None:
        pass


def call(tool: str, thought: str = "go", **arguments: Any) -> dict[str, Any]:
    return {"thought": thought, "action": {"tool": tool, "arguments": arguments}}


def final(text: str) -> dict[str, Any]:
    return {"thought": "done", "action": {"final": text}}


def mock_tool(name: str = "lookup", **kw: Any) -> ToolSpec:
    params = {
        "type": "object",
        "properties": {"id": {"type": "string"}, "n": {"type": "integer", "minimum": 1}},
        "required": ["id"],
    }
    impl = MockTool(
        kw.get("cases", (MockCase({"id": "A1"}, {"status": "shipped"}),)),
        kw.get("default", "no such order"),
    )
    return ToolSpec(name, "Look up an order", params, impl)


def command_tool(
    command: str | tuple[str, ...], name: str = "run", timeout: float = 5.0, cap: int = 16000
) -> ToolSpec:
    params = {"type": "object", "properties": {"text": {"type": "string"}}}
    return ToolSpec(name, "Run it", params, CommandTool(command, timeout, cap))


def agent(provider: Any, tools: list[ToolSpec], **kw: Any) -> AgentRun:
    options: dict[str, Any] = {
        "system": None,
        "turns": ["Where is order A1?"],
        "tools": tools,
        "workspace": None,
        "max_steps": 4,
        "max_tokens": 64,
        "test_id": "t",
        "arm": "on",
    }
    options.update(kw)
    return run_agent(provider, **options)


def doc_of(text: str) -> Any:
    return parse_yaml(textwrap.dedent(text).lstrip(), "suite.yaml")


def messages(diags: Iterable[Any]) -> list[str]:
    return [str(d) for d in diags]


# -- the loop ---------------------------------------------------------------------------------


def test_a_tool_call_is_observed_and_then_answered() -> None:
    provider = FakeProvider([call("lookup", id="A1"), final("It has shipped.")])
    run = agent(provider, [mock_tool()])
    assert run.error is None
    assert run.final == "It has shipped."
    assert [s.kind for s in run.steps] == ["tool", "final"]
    first = run.steps[0]
    assert (first.tool, first.arguments, first.ran, first.error) == (
        "lookup",
        {"id": "A1"},
        True,
        None,
    )
    assert first.result == '{"status": "shipped"}'
    roles = [m.role for m in run.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    assert run.messages[3].content == 'Result of lookup:\n{"status": "shipped"}'
    assert "lookup: Look up an order" in run.messages[0].content


def test_every_request_is_constrained_to_the_step_schema() -> None:
    provider = FakeProvider([call("lookup", id="A1"), final("ok")])
    tools = [mock_tool()]
    agent(provider, tools, seed=7, trial=2)
    assert [r.json_schema for r in provider.requests] == [step_schema(tools)] * 2
    assert {(r.seed, r.trial, r.test_id, r.arm) for r in provider.requests} == {(7, 2, "t", "on")}


def test_the_step_schema_offers_each_tool_and_a_final_answer() -> None:
    schema = step_schema([mock_tool("a"), mock_tool("b")])
    assert list(schema["properties"]) == ["thought", "action"]
    branches = schema["properties"]["action"]["anyOf"]
    assert [b["properties"].get("tool", {}).get("const") for b in branches] == ["a", "b", None]
    assert branches[2]["required"] == ["final"]


def test_the_decoding_schema_drops_what_a_grammar_cannot_enforce() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1, "description": "count"},
            "d": {"type": "string", "format": "date", "pattern": "^2"},
            "o": {"oneOf": [{"type": "string"}, {"$ref": "#/$defs/x"}]},
        },
        "$defs": {"x": {"type": "number"}},
    }
    assert decoding_schema(schema) == {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "d": {"type": "string"},
            "o": {"anyOf": [{"type": "string"}, {}]},
        },
    }


def test_the_loop_stops_at_max_steps_without_an_answer() -> None:
    provider = FakeProvider([call("lookup", id="A1")] * 10)
    run = agent(provider, [mock_tool()], max_steps=3)
    assert len(run.steps) == 3
    assert len(provider.requests) == 3
    assert run.final == ""
    assert run.turns[0].stop_reason == "max_steps"


def test_an_unknown_tool_is_an_error_step_and_the_loop_goes_on() -> None:
    provider = FakeProvider([call("delete_everything"), final("sorry")])
    run = agent(provider, [mock_tool()])
    bad = run.steps[0]
    assert (bad.kind, bad.tool, bad.ran) == ("tool", "delete_everything", False)
    assert bad.error == "unknown tool 'delete_everything'; the tools are: lookup"
    assert run.messages[3].content.startswith("Error: unknown tool 'delete_everything'")
    assert run.final == "sorry"


def test_invalid_arguments_are_an_error_step_and_the_loop_goes_on() -> None:
    provider = FakeProvider(
        [call("lookup"), call("lookup", id="A1", n=0), call("lookup", id="A1"), final("ok")]
    )
    run = agent(provider, [mock_tool()])
    assert [s.error for s in run.steps[:2]] == [
        "invalid arguments for lookup: at $: 'id' is a required property",
        "invalid arguments for lookup: at $.n: 0 is less than the minimum of 1",
    ]
    assert [s.ran for s in run.steps] == [False, False, True, False]
    assert run.final == "ok"


def test_a_reply_that_is_not_a_step_is_an_invalid_step() -> None:
    provider = FakeProvider(
        ["I think the answer is 4", {"thought": "hm"}, '{"action": {"tool": 3}}', final("4")]
    )
    run = agent(provider, [mock_tool()])
    assert [s.kind for s in run.steps] == ["invalid", "invalid", "invalid", "final"]
    assert run.steps[0].error == "reply is not a JSON object: 'I think the answer is 4'"
    assert run.steps[0].reply == "I think the answer is 4"
    assert run.steps[1].error == "reply is neither a tool call nor a final answer"
    assert run.steps[2].error == "`tool` must be a tool name, not 3"


def test_a_reply_cut_at_max_tokens_is_an_invalid_step() -> None:
    cut = Completion(text='{"thought": "I wi', finish_reason="length")
    run = agent(FakeProvider([cut, final("ok")]), [mock_tool()], max_tokens=9)
    assert run.steps[0].error == "reply was cut off at max_tokens (9)"
    assert run.final == "ok"


def test_replies_are_read_leniently() -> None:
    assert parse_step('{"final": "x"}').final == "x"
    assert parse_step('{"tool": "a", "arguments": {"k": 1}}').arguments == {"k": 1}
    assert parse_step('Sure! ```json\n{"action": {"final": "y"}}\n```').final == "y"


def test_a_provider_failure_ends_the_run_with_an_error() -> None:
    provider = FakeProvider([call("lookup", id="A1"), ProviderError("server went away")])
    run = agent(provider, [mock_tool()], turns=["one", "two"])
    assert run.error == "server went away"
    assert len(run.steps) == 1
    assert [t.stop_reason for t in run.turns] == ["error"]


def test_run_to_json_holds_steps_turns_totals_and_the_transcript() -> None:
    run = agent(FakeProvider([call("lookup", id="A1"), final("shipped")]), [mock_tool()])
    data = run.to_json()
    assert json.loads(json.dumps(data)) == data
    assert data["totals"] == {
        "steps": 2,
        "tool_calls": 1,
        "error_steps": 0,
        "prompt_tokens": 20,
        "completion_tokens": 10,
        "latency_ms": 2.0,
        "tool_ms": data["totals"]["tool_ms"],
    }
    assert data["turns"] == [
        {
            "index": 0,
            "user": "Where is order A1?",
            "output": "shipped",
            "stop_reason": "answer",
            "steps": [0, 1],
        }
    ]
    assert set(data["steps"][0]) >= {
        "index",
        "turn",
        "tool",
        "arguments",
        "result",
        "error",
        "truncated",
        "prompt_tokens",
        "completion_tokens",
        "latency_ms",
    }
    assert run.as_completion().text == "shipped"


def test_no_tools_still_runs_as_a_final_answer_only_loop() -> None:
    provider = FakeProvider([final("hello")])
    run = agent(provider, [], turns=["hi"])
    assert run.final == "hello"
    assert "tool" not in json.dumps(provider.requests[0].json_schema)


def test_the_skill_comes_first_in_the_system_message() -> None:
    provider = FakeProvider([final("x")])
    run = agent(provider, [mock_tool()], system="You are the order skill.")
    assert run.messages[0].content.startswith("You are the order skill.\n\nYou can use tools.")


def test_without_thought_the_schema_only_asks_for_the_action() -> None:
    schema = step_schema([mock_tool()], think=False)
    assert schema["required"] == ["action"]


# -- multi-turn -------------------------------------------------------------------------------


def test_each_turn_gets_its_own_loop_and_answer() -> None:
    provider = FakeProvider([call("lookup", id="A1"), final("shipped"), final("you're welcome")])
    seen: list[tuple[int, str, int]] = []
    run = agent(
        provider,
        [mock_tool()],
        turns=["Where is A1?", "Thanks!"],
        after_turn=lambda t: seen.append((t.index, t.output, len(t.steps))),
    )
    assert [(t.user, t.output) for t in run.turns] == [
        ("Where is A1?", "shipped"),
        ("Thanks!", "you're welcome"),
    ]
    assert seen == [(0, "shipped", 2), (1, "you're welcome", 1)]
    assert run.final == "you're welcome"
    assert [s.turn for s in run.steps] == [0, 0, 1]
    assert [m.role for m in run.messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]


def test_a_turn_out_of_steps_still_lets_the_next_turn_run() -> None:
    provider = FakeProvider([call("lookup", id="A1"), final("second")])
    run = agent(provider, [mock_tool()], turns=["first", "second"], max_steps=1)
    assert [(t.output, t.stop_reason) for t in run.turns] == [
        ("", "max_steps"),
        ("second", "answer"),
    ]
    # user and assistant keep alternating: the observation and the next message are joined
    assert run.messages[3].role == "user"
    assert run.messages[3].content.endswith("\n\nsecond")


def test_after_turn_sees_the_workspace_as_that_turn_left_it(tmp_path: Path) -> None:
    tool = ToolSpec(
        "write",
        "Write a file",
        {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        CommandTool("printf %s {text} > note.txt"),
    )
    provider = FakeProvider(
        [call("write", text="one"), final("a"), call("write", text="two"), final("b")]
    )
    contents: list[str] = []
    agent(
        provider,
        [tool],
        turns=["1", "2"],
        workspace=tmp_path,
        after_turn=lambda t: contents.append((tmp_path / "note.txt").read_text()),
    )
    assert contents == ["one", "two"]


def test_the_scripted_provider_can_drive_a_trajectory() -> None:
    spec = ScriptedConfig(
        responses=(
            {"match": "Result of lookup", "output": json.dumps(final("It shipped."))},
            {"id": "t", "output": json.dumps(call("lookup", id="A1"))},
        ),
    )
    run = agent(ScriptedProvider(spec), [mock_tool()])
    assert [s.kind for s in run.steps] == ["tool", "final"]
    assert run.final == "It shipped."


# -- mock tools -------------------------------------------------------------------------------


def test_mock_cases_match_by_subset_or_exactly_then_fall_back_to_the_default() -> None:
    mock = MockTool(
        (
            MockCase({"id": "A1", "n": 2}, "exact two", exact=True),
            MockCase({"id": "A1"}, "any A1"),
            MockCase(None, "catch-all"),
        ),
        "default",
    )
    assert mock.run({"id": "A1", "n": 2}, None).output == "exact two"
    assert mock.run({"id": "A1", "n": 3}, None).output == "any A1"
    assert mock.run({"id": "B2"}, None).output == "catch-all"
    assert (
        MockTool((MockCase({"id": "A1"}, "x"),), "default").run({"id": "Z"}, None).output
        == "default"
    )


def test_a_mock_without_a_default_makes_an_unmatched_call_an_error() -> None:
    result = MockTool((MockCase({"id": "A1"}, "x"),)).run({"id": "B"}, None)
    assert result.error == 'the mock has no result for arguments {"id": "B"}'


@pytest.mark.parametrize(
    ("actual", "expected", "exact", "matches"),
    [
        ({"a": 1, "b": 2}, {"a": 1}, False, True),
        ({"a": 1, "b": 2}, {"a": 1}, True, False),
        ({"a": {"x": 1, "y": 2}}, {"a": {"x": 1}}, False, True),
        ({"a": [1, 2]}, {"a": [1]}, False, False),
        ({"a": True}, {"a": 1}, False, False),
        ({"a": 1.0}, {"a": 1}, False, True),
        ({}, {"a": None}, False, False),
    ],
)
def test_argument_matching(
    actual: dict[str, Any], expected: dict[str, Any], exact: bool, matches: bool
) -> None:
    assert args_match(actual, expected, exact=exact) is matches


# -- command tools ----------------------------------------------------------------------------


def test_arguments_reach_a_command_line_shell_quoted(tmp_path: Path) -> None:
    tool = command_tool("echo {text}")
    result, _ = tool.call({"text": "hi; touch pwned $(touch pwned2)"}, tmp_path)
    assert result.output == "hi; touch pwned $(touch pwned2)"
    assert not (tmp_path / "pwned").exists()
    assert not (tmp_path / "pwned2").exists()


def test_arguments_reach_an_argv_command_verbatim_and_as_env_vars(tmp_path: Path) -> None:
    tool = command_tool(
        (
            "python3",
            "-c",
            "import os,sys; print(sys.argv[1], os.environ['SKILLEVAL_ARG_TEXT'], os.environ['SKILLEVAL_ARGS'])",
            "{text}",
        )
    )
    result, _ = tool.call({"text": "a b"}, tmp_path)
    assert result.output == 'a b a b {"text": "a b"}'


def test_a_command_runs_in_the_workspace_and_reports_its_exit_code(tmp_path: Path) -> None:
    (tmp_path / "here.txt").write_text("x")
    result, _ = command_tool("ls; echo oops >&2; exit 3").call({}, tmp_path)
    assert result.exit_code == 3
    assert result.error is None
    assert result.output == "exit code 3\nhere.txt\nstderr:\noops"


def test_a_hung_command_is_killed_at_its_timeout(tmp_path: Path) -> None:
    start = time.monotonic()
    result, _ = command_tool("echo started; sleep 30", timeout=0.5).call({}, tmp_path)
    assert time.monotonic() - start < 10
    assert result.timed_out
    assert result.exit_code is None
    assert result.error == "timed out after 0.5 s and was killed"
    assert result.output == "started"


def test_a_timeout_kills_the_commands_children_too(tmp_path: Path) -> None:
    result = run_process(
        "sleep 30 & echo $! > pid; wait", cwd=tmp_path, timeout_s=0.5, max_output=100
    )
    assert result.timed_out
    pid = int((tmp_path / "pid").read_text())
    time.sleep(0.2)
    assert _gone(pid)


def _gone(pid: int) -> bool:
    # A killed orphan may linger as a zombie until its new parent reaps it; that is dead too.
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_huge_output_is_capped_and_marked_truncated(tmp_path: Path) -> None:
    result, _ = command_tool("yes | head -c 5000000", cap=1000).call({}, tmp_path)
    assert result.truncated
    assert result.exit_code == 0
    assert len(result.output) < 1200
    assert result.output.endswith("[output cut at 1000 bytes per stream]")


def test_a_long_result_is_cut_before_the_model_sees_it(tmp_path: Path) -> None:
    provider = FakeProvider([call("run"), final("ok")])
    run = agent(
        provider, [command_tool("yes | head -c 3000")], workspace=tmp_path, max_observation=100
    )
    assert run.steps[0].truncated
    assert run.messages[3].content.endswith("[result cut at 100 characters]")


def test_a_command_tool_without_a_workspace_is_an_error_step() -> None:
    run = agent(FakeProvider([call("run"), final("ok")]), [command_tool("true")])
    assert run.steps[0].error == "a command tool needs a workspace, and this run has none"


def test_a_missing_program_is_reported_not_raised(tmp_path: Path) -> None:
    result = run_process(["no-such-program-xyz"], cwd=tmp_path, timeout_s=5, max_output=100)
    assert result.error is not None
    assert result.error.startswith("cannot run 'no-such-program-xyz'")


# -- python tools and parsing -----------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


TOOLS_YAML = """
tools:
  - name: lookup
    description: Look up an order
    parameters:
      type: object
      properties: {id: {type: string}}
      required: [id]
    mock:
      results:
        - {args: {id: A1}, result: {status: shipped}}
      default: unknown
  - name: count
    parameters: {type: object, properties: {word: {type: string}}}
    command: grep -c {word} notes.txt
    timeout: 3
  - name: peek
    python: file://tools.py:peek
  - name: size
    python: helpers.py:size
"""


def test_tools_parse_from_yaml_with_every_implementation(tmp_path: Path) -> None:
    write(
        tmp_path / "tools.py",
        "def peek(arguments, workspace):\n    return sorted(p.name for p in workspace.iterdir())\n",
    )
    write(
        tmp_path / "plugins" / "helpers.py",
        "def size(arguments, workspace):\n    return {'n': 3}\n",
    )
    write(tmp_path / "notes.txt", "milk\nmilk\n")
    tools, diags = parse_tools(
        doc_of(TOOLS_YAML), ["tools"], base_dir=tmp_path, plugin_dirs=[tmp_path / "plugins"]
    )
    assert diags == []
    by_name = {t.name: t for t in tools}
    assert [t.impl.kind for t in tools] == ["mock", "command", "python", "python"]
    assert by_name["lookup"].call({"id": "A1"}, None)[0].output == '{"status": "shipped"}'
    assert by_name["count"].call({"word": "milk"}, tmp_path)[0].output == "2"
    assert by_name["peek"].call({}, tmp_path)[0].output.startswith('["notes.txt"')
    assert by_name["size"].call({}, tmp_path)[0].output == '{"n": 3}'
    assert by_name["lookup"].where == Location("suite.yaml", 2, 5)


def test_a_python_tool_that_raises_is_an_error_result(tmp_path: Path) -> None:
    write(tmp_path / "tools.py", "def boom(arguments, workspace):\n    raise KeyError('nope')\n")
    tools, diags = parse_tools(
        doc_of("tools:\n  - {name: boom, python: 'file://tools.py:boom'}\n"),
        ["tools"],
        base_dir=tmp_path,
    )
    assert diags == []
    assert tools[0].call({}, tmp_path)[0].error == "KeyError: 'nope'"


BAD_TOOLS = {
    "invalid parameter schema": (
        "tools:\n  - name: a\n    parameters: {type: object, properties: {x: {type: strng}}}\n    mock: {default: 1}\n",
        "suite.yaml:3:17: error: tool 'a': invalid parameters schema at $.properties.x.type: "
        "'strng' is not valid under any of the given schemas",
    ),
    "parameters not an object": (
        "tools:\n  - {name: a, parameters: {type: string}, mock: {default: 1}}\n",
        "suite.yaml:2:27: error: tool 'a': parameters must describe an object (type: object), not type 'string'",
    ),
    "duplicate name": (
        "tools:\n  - {name: a, mock: {default: 1}}\n  - {name: a, mock: {default: 2}}\n",
        "suite.yaml:3:12: error: duplicate tool name 'a' (first at suite.yaml:2:12)",
    ),
    "no implementation": (
        "tools:\n  - {name: a}\n",
        "suite.yaml:2:5: error: tool 'a' needs an implementation: mock, command or python",
    ),
    "two implementations": (
        "tools:\n  - {name: a, mock: {default: 1}, command: ls}\n",
        "suite.yaml:2:35: error: tool 'a' has both mock and command; give exactly one",
    ),
    "unknown implementation": (
        "tools:\n  - {name: a, http: 'http://x'}\n",
        "suite.yaml:2:15: error: unknown key 'http'",
    ),
    "placeholder that is no parameter": (
        "tools:\n  - {name: a, command: 'cat {path}'}\n",
        "suite.yaml:2:24: error: command uses {path}, which is not a parameter of tool 'a'",
    ),
    "timeout on a mock": (
        "tools:\n  - {name: a, mock: {default: 1}, timeout: 3}\n",
        "suite.yaml:2:35: error: 'timeout' applies to command tools only",
    ),
    "python file missing": (
        "tools:\n  - {name: a, python: 'file://nope.py:f'}\n",
        "suite.yaml:2:23: error: python tool file not found: nope.py (looked in ",
    ),
    "python function missing": (
        "tools:\n  - {name: a, python: 'file://tools.py:nope'}\n",
        "suite.yaml:2:23: error: tools.py has no function 'nope'",
    ),
    "python reference malformed": (
        "tools:\n  - {name: a, python: tools.py}\n",
        "suite.yaml:2:23: error: python tool must be file://path.py:function or module.py:function, not 'tools.py'",
    ),
    "bad name": (
        "tools:\n  - {name: 'two words', mock: {default: 1}}\n",
        "suite.yaml:2:12: error: 'name': 'two words' does not match",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_TOOLS), ids=lambda c: c.replace(" ", "-"))
def test_bad_tool_declarations_are_positioned_diagnostics(case: str, tmp_path: Path) -> None:
    text, expected = BAD_TOOLS[case]
    write(tmp_path / "tools.py", "def peek(arguments, workspace):\n    return 1\n")
    _, diags = parse_tools(doc_of(text), ["tools"], base_dir=tmp_path)
    assert len(diags) == 1, messages(diags)
    assert messages(diags)[0].startswith(expected)


def test_later_tool_levels_replace_earlier_ones_by_name() -> None:
    a1, b, a2 = mock_tool("a"), mock_tool("b"), mock_tool("a", default="test-level")
    assert merge_tools([a1, b], [a2]) == (a2, b)


# -- workspaces -------------------------------------------------------------------------------


def test_a_workspace_gets_its_files_and_runs_its_commands(tmp_path: Path) -> None:
    write(tmp_path / "fixtures" / "app" / "main.py", "print('hi')\n")
    write(tmp_path / "fixtures" / "notes.txt", "milk\n")
    doc = doc_of(
        """
        environment:
          files:
            - {src: fixtures/app, dest: src}
            - fixtures/notes.txt
            - {src: fixtures/notes.txt, dest: deep/er/copy.txt}
          commands:
            - python3 src/main.py > out.txt
            - [touch, made-by-argv]
        """
    )
    env, diags = parse_environment(doc, ["environment"], base_dir=tmp_path)
    assert diags == []
    assert env is not None
    with create_workspace(env, label="t/1 on 0") as ws:
        assert ws.error is None
        names = sorted(str(p.relative_to(ws.path)) for p in ws.path.rglob("*") if p.is_file())
        assert names == ["deep/er/copy.txt", "made-by-argv", "notes.txt", "out.txt", "src/main.py"]
        assert (ws.path / "out.txt").read_text() == "hi\n"
        assert "skilleval-t_1_on_0-" in ws.path.name
        root = ws.path
    assert not root.exists()


def test_every_run_gets_a_fresh_workspace_so_arms_never_share_files(tmp_path: Path) -> None:
    write(tmp_path / "seed.txt", "original\n")
    env = Environment(files=(FileCopy(tmp_path / "seed.txt", "seed.txt", Location("x")),))
    tool = ToolSpec(
        "write",
        "",
        {"type": "object", "properties": {"text": {"type": "string"}}},
        CommandTool("printf %s {text} > seed.txt; touch {text}.marker"),
    )
    seen = {}
    for arm in ("off", "on"):
        with create_workspace(env, label=f"t-{arm}-0") as ws:
            seen[arm] = sorted(p.name for p in ws.path.iterdir())
            assert (ws.path / "seed.txt").read_text() == "original\n"
            agent(FakeProvider([call("write", text=arm), final("ok")]), [tool], workspace=ws.path)
            assert (ws.path / "seed.txt").read_text() == arm
    assert seen == {"off": ["seed.txt"], "on": ["seed.txt"]}


@pytest.mark.parametrize(
    ("rel", "message"),
    [
        ("../outside.txt", "'../outside.txt' leads outside the workspace"),
        ("a/../../outside.txt", "'a/../../outside.txt' leads outside the workspace"),
        ("/etc/passwd", "'/etc/passwd' is absolute; workspace paths are relative to the workspace"),
        ("~/x", "'~/x' is absolute; workspace paths are relative to the workspace"),
        ("link/secret.txt", "'link/secret.txt' leads outside the workspace through a symlink"),
        ("filelink", "'filelink' leads outside the workspace through a symlink"),
    ],
)
def test_paths_that_escape_the_workspace_are_rejected(
    tmp_path: Path, rel: str, message: str
) -> None:
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    write(outside / "secret.txt", "s")
    root.mkdir()
    (root / "link").symlink_to(outside)
    (root / "filelink").symlink_to(outside / "secret.txt")
    with pytest.raises(PathEscape) as info:
        resolve_inside(root, rel)
    assert str(info.value) == message


def test_a_symlink_loop_is_rejected_not_raised(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(PathEscape, match="'a/x' cannot be resolved: it is a symlink loop"):
        resolve_inside(tmp_path, "a/x")
    verdict = check(agentic.file_exists, "a/x", workspace=tmp_path)
    assert verdict.error == "'a/x' cannot be resolved: it is a symlink loop"


def test_paths_inside_the_workspace_resolve(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "inner").symlink_to(tmp_path / "sub")
    assert resolve_inside(tmp_path, "a/../b.txt") == tmp_path.resolve() / "b.txt"
    assert resolve_inside(tmp_path, "inner/x") == (tmp_path / "sub" / "x").resolve()
    assert resolve_inside(tmp_path, ".") == tmp_path.resolve()


def test_a_malformed_environment_is_a_positioned_diagnostic(tmp_path: Path) -> None:
    doc = doc_of("environment:\n  files: [{src: a.txt, dst: b.txt}]\n  commands: [ls, 3]\n")
    env, diags = parse_environment(doc, ["environment"], base_dir=tmp_path)
    assert env is None
    assert messages(diags) == [
        "suite.yaml:2:24: error: unknown key 'dst'; did you mean 'dest'?",
        "suite.yaml:3:18: error: 'commands' must be a string or a list, not a number",
    ]


def test_bad_environment_files_are_positioned_diagnostics(tmp_path: Path) -> None:
    outside = write(tmp_path / "secret.txt", "s")
    write(tmp_path / "fixtures" / "ok.txt", "x")
    (tmp_path / "fixtures" / "escape").symlink_to(outside)
    doc = doc_of(
        """
        environment:
          files:
            - {src: missing.txt}
            - {src: fixtures/ok.txt, dest: ../up.txt}
            - {src: fixtures/ok.txt, dest: /abs.txt}
            - {src: fixtures}
        """
    )
    env, diags = parse_environment(doc, ["environment"], base_dir=tmp_path)
    assert env is None
    assert messages(diags) == [
        f"suite.yaml:3:13: error: file not found: missing.txt (looked for {tmp_path / 'missing.txt'})",
        "suite.yaml:4:36: error: dest: '../up.txt' leads outside the workspace",
        "suite.yaml:5:36: error: dest: '/abs.txt' is absolute; workspace paths are relative to the workspace",
        "suite.yaml:6:13: error: fixtures holds a symlink that points outside it: escape",
    ]


def test_a_copy_through_a_symlink_made_by_an_earlier_copy_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    (fixture / "link").symlink_to("/tmp")
    write(tmp_path / "payload.txt", "p")
    env = Environment(
        files=(
            FileCopy(fixture, ".", Location("x")),
            FileCopy(tmp_path / "payload.txt", "link/payload.txt", Location("x")),
        )
    )
    with create_workspace(env) as ws:
        assert ws.error == (
            "set-up: cannot copy payload.txt to link/payload.txt: "
            "'link/payload.txt' leads outside the workspace through a symlink"
        )


def test_a_failing_setup_command_is_an_error_and_stops_setup(tmp_path: Path) -> None:
    env = Environment(
        commands=(
            SetupCommand("echo building; echo 'no such target' >&2; exit 2", Location("x")),
            SetupCommand("touch never", Location("x")),
        )
    )
    with create_workspace(env) as ws:
        assert ws.error == (
            "set-up command 1 `echo building; echo 'no such target' >&2; exit 2` "
            "exited with 2: no such target"
        )
        assert not (ws.path / "never").exists()
        assert ws.setup[0].stdout == "building\n"
    failed = AgentRun.failed(ws.error)
    assert (failed.error, failed.final, failed.steps) == (ws.error, "", ())


def test_a_hung_setup_command_is_killed_and_is_an_error() -> None:
    env = Environment(commands=(SetupCommand("sleep 30", Location("x")),), timeout_s=0.3)
    with create_workspace(env) as ws:
        assert ws.error == "set-up command 1 `sleep 30` timed out after 0.3 s and was killed"


def test_a_kept_workspace_survives_cleanup() -> None:
    ws = create_workspace(None, keep=True)
    ws.cleanup()
    assert ws.path.is_dir()
    ws.path.rmdir()


# -- assertions -------------------------------------------------------------------------------


def steps_of(*specs: tuple[str, dict[str, Any], bool]) -> list[dict[str, Any]]:
    out = []
    for i, (tool, args, ran) in enumerate(specs):
        out.append(
            {
                "index": i,
                "turn": 0,
                "kind": "tool",
                "tool": tool,
                "arguments": args,
                "ran": ran,
                "error": None if ran else "invalid",
            }
        )
    out.append(
        {
            "index": len(specs),
            "turn": 0,
            "kind": "final",
            "tool": None,
            "arguments": None,
            "ran": False,
            "answer": "done",
        }
    )
    return out


TRAJECTORY = steps_of(
    ("search", {"q": "milk", "limit": 5}, True),
    ("search", {"q": "eggs"}, True),
    ("read", {"path": "a"}, False),
    ("read", {"path": "b"}, True),
)


def check(
    fn: Callable[[Check], Any],
    value: Any,
    *,
    steps: list[dict[str, Any]] | None = None,
    workspace: Path | None = None,
) -> Verdict:
    extra: dict[str, Any] = {
        "trajectory": TRAJECTORY if steps is None else steps,
        "workspace": str(workspace) if workspace else None,
    }
    result = fn(Check(output="", value=value, extra=extra))
    assert isinstance(result, Verdict)
    return result


def test_every_agentic_type_is_a_registered_builtin() -> None:
    registry = Registry()
    registry.load_builtins()
    names = {
        "tool-called",
        "tool-not-called",
        "tool-call-count",
        "max-steps",
        "trajectory",
        "file-exists",
        "file-not-exists",
        "file-contains",
        "file-not-contains",
        "file-matches",
        "run-command",
    }
    assert names <= {spec.name for spec in registry}
    assert all(registry.get(n).tier == "deterministic" for n in names)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("value", "passed", "reason"),
    [
        ("search", True, "search was called 2 times (steps 0, 1)"),
        ("read", True, "read was called once (step 3)"),
        ("write", False, "write was never called; calls: search ×2, read"),
        (
            {"name": "search", "args": {"q": "eggs"}},
            True,
            'search was called with arguments matching {"q":"eggs"} (step 1)',
        ),
        (
            {"name": "search", "args": {"q": "milk"}, "match": "exact"},
            False,
            'search was called 2 times, never with arguments equal to {"q":"milk"}; got {"limit":5,"q":"milk"}, {"q":"eggs"}',
        ),
        (
            {"name": "read", "args": {"path": "a"}},
            False,
            'read was called once, never with arguments matching {"path":"a"}; got {"path":"b"}',
        ),
    ],
)
def test_tool_called(value: Any, passed: bool, reason: str) -> None:
    verdict = check(agentic.tool_called, value)
    assert (verdict.passed, verdict.reason) == (passed, reason)


def test_tool_called_mentions_rejected_attempts() -> None:
    verdict = check(agentic.tool_called, "write", steps=steps_of(("write", {}, False)))
    assert (
        verdict.reason == "write was never called (1 attempt rejected before running); no tool ran"
    )


@pytest.mark.parametrize(
    ("value", "passed", "reason"),
    [
        ("write", True, "write was not called; calls: search ×2, read"),
        ("search", False, "search was called 2 times (steps 0, 1)"),
        (
            {"name": "read", "args": {"path": "a"}},
            True,
            'read was not called with arguments matching {"path":"a"}; calls: search ×2, read',
        ),
        (
            {"name": "read", "args": {"path": "b"}},
            False,
            'read was called with arguments matching {"path":"b"} once (step 3)',
        ),
    ],
)
def test_tool_not_called(value: Any, passed: bool, reason: str) -> None:
    verdict = check(agentic.tool_not_called, value)
    assert (verdict.passed, verdict.reason) == (passed, reason)


@pytest.mark.parametrize(
    ("value", "passed", "reason"),
    [
        (
            {"name": "search", "min": 1, "max": 2},
            True,
            "search was called 2 times; expected at least 1 and at most 2",
        ),
        ({"name": "search", "max": 1}, False, "search was called 2 times; expected at most 1"),
        ({"name": "read", "min": 2}, False, "read was called once; expected at least 2"),
        ({"min": 3}, True, "tools were called 3 times; expected at least 3"),
    ],
)
def test_tool_call_count(value: Any, passed: bool, reason: str) -> None:
    verdict = check(agentic.tool_call_count, value)
    assert (verdict.passed, verdict.reason) == (passed, reason)


def test_tool_call_count_checks_its_bounds_at_load() -> None:
    assert agentic.check_count({"name": "a"}) == "tool-call-count needs `min`, `max` or both"
    assert (
        agentic.check_count({"min": 3, "max": 1})
        == "tool-call-count: min (3) is greater than max (1)"
    )
    assert agentic.check_count({"min": 1}) is None


def test_max_steps() -> None:
    assert check(agentic.max_steps, 5).reason == "the agent took 5 steps (limit 5)"
    assert check(agentic.max_steps, 5).passed
    failed = check(agentic.max_steps, 4)
    assert (failed.passed, failed.reason) == (False, "the agent took 5 steps (limit 4)")


@pytest.mark.parametrize(
    ("value", "passed", "reason"),
    [
        (
            "[?tool=='read' && ran] | length(@) == `1`",
            True,
            "query \"[?tool=='read' && ran] | length(@) == `1`\" gives true, which is truthy",
        ),
        ("[?tool=='write']", False, "query \"[?tool=='write']\" gives [], which is falsy"),
        (
            {"query": "[?ran].tool", "equals": ["search", "search", "read"]},
            True,
            'query \'[?ran].tool\' gives ["search","search","read"]',
        ),
        (
            {"query": "[0].arguments.q", "equals": "eggs"},
            False,
            'query \'[0].arguments.q\' gives "milk", which differs: $ is "milk", expected "eggs"',
        ),
    ],
)
def test_trajectory_queries(value: Any, passed: bool, reason: str) -> None:
    verdict = check(agentic.trajectory, value)
    assert (verdict.passed, verdict.reason) == (passed, reason)


def test_a_bad_trajectory_query_is_caught_at_load() -> None:
    assert agentic.check_query("[?tool==") is not None


def test_trajectory_types_need_a_trajectory() -> None:
    verdict = agentic.tool_called(Check(output="", value="a"))
    assert verdict.error == "this test has no trajectory (it runs no agent loop)"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write(root / "out" / "report.md", "# Report\ntotal: 42\n")
    write(root / "empty.txt", "")
    write(tmp_path / "secret.txt", "password\n")
    (root / "escape").symlink_to(tmp_path / "secret.txt")
    return root


@pytest.mark.parametrize(
    ("fn", "value", "passed", "reason"),
    [
        (agentic.file_exists, "out/report.md", True, "out/report.md exists (19 bytes)"),
        (agentic.file_exists, "out", True, "out exists (a directory)"),
        (
            agentic.file_exists,
            "out/summary.md",
            False,
            "out/summary.md does not exist; its folder has report.md",
        ),
        (agentic.file_not_exists, "out/summary.md", True, "out/summary.md does not exist"),
        (agentic.file_not_exists, "empty.txt", False, "empty.txt exists (0 bytes)"),
        (
            agentic.file_contains,
            {"path": "out/report.md", "value": "total: 42"},
            True,
            "out/report.md contains 'total: 42' at line 2",
        ),
        (
            agentic.file_contains,
            {"path": "out/report.md", "value": 43},
            False,
            "out/report.md lacks '43'; it has 2 lines starting '# Report\\ntotal: 42\\n'",
        ),
        (
            agentic.file_contains,
            {"path": "nope.md", "value": "x"},
            False,
            "nope.md does not exist; its folder has empty.txt, escape, out",
        ),
        (
            agentic.file_contains,
            {"path": "out", "value": "x"},
            False,
            "out is a directory, not a file",
        ),
        (
            agentic.file_contains,
            {"path": "empty.txt", "value": "x"},
            False,
            "empty.txt lacks 'x'; it has no content (0 bytes)",
        ),
        (
            agentic.file_not_contains,
            {"path": "out/report.md", "value": "TODO"},
            True,
            "out/report.md does not contain 'TODO'",
        ),
        (
            agentic.file_not_contains,
            {"path": "out/report.md", "value": "Report"},
            False,
            "out/report.md contains 'Report' at line 1",
        ),
        (
            agentic.file_not_contains,
            {"path": "gone.md", "value": "x"},
            True,
            "gone.md does not exist, so it does not contain 'x'",
        ),
        (
            agentic.file_matches,
            {"path": "out/report.md", "pattern": r"^total: \d+$"},
            True,
            "out/report.md matches /^total: \\d+$/ at line 2: 'total: 42'",
        ),
        (
            agentic.file_matches,
            {"path": "out/report.md", "pattern": "^## "},
            False,
            "out/report.md has no match for /^## /; it has 2 lines starting '# Report\\ntotal: 42\\n'",
        ),
    ],
)
def test_file_checks(
    ws: Path, fn: Callable[[Check], Any], value: Any, passed: bool, reason: str
) -> None:
    verdict = check(fn, value, workspace=ws)
    assert verdict.error is None
    assert (verdict.passed, verdict.reason) == (passed, reason)


@pytest.mark.parametrize(
    ("fn", "value", "error"),
    [
        (agentic.file_exists, "../secret.txt", "'../secret.txt' leads outside the workspace"),
        (
            agentic.file_contains,
            {"path": "/etc/passwd", "value": "root"},
            "'/etc/passwd' is absolute; workspace paths are relative to the workspace",
        ),
        (
            agentic.file_matches,
            {"path": "escape", "pattern": "pass"},
            "'escape' leads outside the workspace through a symlink",
        ),
        (
            agentic.file_not_exists,
            "escape",
            "'escape' leads outside the workspace through a symlink",
        ),
    ],
)
def test_file_paths_that_escape_the_workspace_are_errors(
    ws: Path, fn: Callable[[Check], Any], value: Any, error: str
) -> None:
    verdict = check(fn, value, workspace=ws)
    assert verdict.error == error


def test_file_checks_need_a_workspace() -> None:
    verdict = check(agentic.file_exists, "x")
    assert verdict.error == "this test has no workspace"
    assert check(agentic.run_command, "true").error == "this test has no workspace"


def test_file_paths_are_checked_at_load() -> None:
    assert agentic.check_path("../x") == "'../x' leads outside the workspace"
    assert agentic.check_path({"path": "/x", "value": "y"}) is not None
    assert agentic.check_path("{{ name }}/x") is None
    assert agentic.check_pattern({"path": "a", "pattern": "("}) is not None
    assert agentic.check_run({"command": "x", "stdout": "["}) is not None


@pytest.mark.parametrize(
    ("value", "passed", "reason"),
    [
        ("test -f out/report.md", True, "`test -f out/report.md` exited with 0"),
        (
            {"command": "grep -c total out/report.md", "stdout": r"^1$"},
            True,
            "`grep -c total out/report.md` exited with 0; stdout matches /^1$/",
        ),
        (
            {"command": ["grep", "-q", "missing", "out/report.md"], "exit_code": 1},
            True,
            "`grep -q missing out/report.md` exited with 1",
        ),
        (
            {"command": "echo nope >&2; exit 4"},
            False,
            "`echo nope >&2; exit 4` exited with 4: nope; expected exit code 0",
        ),
        (
            {"command": "echo 3", "stdout": "^42$"},
            False,
            "`echo 3` exited with 0 but its stdout has no match for /^42$/: '3\\n'",
        ),
        (
            {"command": "sleep 20", "timeout": 0.3},
            False,
            "`sleep 20` timed out after 0.3 s and was killed",
        ),
        (
            {"command": ["no-such-program-xyz"]},
            False,
            "`no-such-program-xyz` could not run: cannot run 'no-such-program-xyz': No such file or directory",
        ),
    ],
)
def test_run_command(ws: Path, value: Any, passed: bool, reason: str) -> None:
    verdict = check(agentic.run_command, value, workspace=ws)
    assert (verdict.passed, verdict.reason) == (passed, reason)


# -- a real model -----------------------------------------------------------------------------


@pytest.mark.model
def test_the_embedded_model_runs_a_two_step_agent(tmp_path: Path) -> None:
    from skilleval.engine.llama import LlamaConfig, LlamaProvider

    write(tmp_path / "notes.txt", "Buy milk.\n")
    read = ToolSpec(
        "read_file",
        "Read a file in the workspace and return its text.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        CommandTool(("cat", "--", "{path}")),
    )
    lookup = mock_tool()
    provider = LlamaProvider(LlamaConfig(), tmp_path / "memo")
    try:
        run = run_agent(
            provider,
            system=None,
            turns=["What does notes.txt say?"],
            tools=[read, lookup],
            workspace=tmp_path,
            max_steps=2,
            max_tokens=96,
            temperature=0.0,
            top_p=1.0,
            seed=0,
        )
    finally:
        provider.close()
    assert run.error is None
    assert 1 <= len(run.steps) <= 2
    tools = {"read_file": read, "lookup": lookup}
    for step in run.steps:
        # the grammar admits only a declared tool with well-formed arguments, or an answer
        assert step.kind in ("tool", "final"), step
        if step.kind == "tool":
            assert step.tool in tools
            assert tools[step.tool].argument_error(step.arguments) is None
            assert step.ran
    replies = [m.content for m in run.messages if m.role == "assistant"]
    assert all(isinstance(json.loads(r), Mapping) for r in replies)
    assert [json.loads(r) for r in replies] == [
        {"thought": s.thought, "action": {"tool": s.tool, "arguments": s.arguments}}
        if s.kind == "tool"
        else {"thought": s.thought, "action": {"final": s.answer}}
        for s in run.steps
    ]
    assert {str(m.role) for m in run.messages} <= {"system", "user", "assistant"}
    assert isinstance(Message("user", "x"), Message)


# -- suites: loading and running agentic tests ------------------------------------------------

SUITE = """
model:
  provider: scripted
  responses:
    - {match: "Thanks", output: '{"thought": "t", "action": {"final": "You are welcome."}}'}
    - {match: "Result of write_note", output: '{"thought": "d", "action": {"final": "Saved."}}'}
    - {id: notes, output: '{"thought": "w", "action": {"tool": "write_note", "arguments": {"text": "milk"}}}'}
tools:
  - name: write_note
    description: Append a line to notes.txt
    parameters: {type: object, properties: {text: {type: string}}, required: [text]}
    command: "printf '%s\\\\n' {text} >> notes.txt"
defaultTest:
  environment:
    files: [{src: seed.txt, dest: notes.txt}]
tests:
  - id: notes
    vars: {item: milk}
    max_steps: 3
    turns:
      - user: "Add {{item}} to my notes"
        assert:
          - {type: tool-called, value: {name: write_note, args: {text: milk}}}
          - {type: file-contains, value: {path: notes.txt, value: milk}}
          - {type: equals, value: Saved.}
      - user: "Thanks"
    assert:
      - {type: contains, value: welcome}
      - {type: file-matches, value: {path: notes.txt, pattern: "^eggs$"}}
      - {type: max-steps, value: 3}
      - {type: tool-call-count, value: {max: 1}}
  - id: plain
    prompt: "Just answer"
    tools:
      - {name: write_note, description: replaced, mock: {default: ok}}
    assert: [{type: file-exists, value: notes.txt}]
"""


def load(tmp_path: Path, text: str = SUITE) -> Any:
    from skilleval.suite.load import load_suite

    write(tmp_path / "seed.txt", "eggs\n")
    suite, _ = load_suite(write(tmp_path / "suite.yaml", text))
    return suite


def test_a_suite_with_tools_environment_and_turns_loads(tmp_path: Path) -> None:
    suite = load(tmp_path)
    notes, plain = suite.tests
    assert notes.agent is not None
    assert [t.name for t in notes.agent.tools] == ["write_note"]
    assert notes.agent.max_steps == 3
    assert [t.user for t in notes.agent.turns] == ["Add {{item}} to my notes", "Thanks"]
    assert [a.type for a in notes.agent.turns[0].asserts] == [
        "tool-called",
        "file-contains",
        "equals",
    ]
    assert notes.agent.environment is not None
    assert notes.agent.environment.files[0].dest == "notes.txt"
    assert notes.prompt.text == "Add {{item}} to my notes"
    assert len(notes.every_assert) == 7
    assert plain.agent is not None
    assert plain.agent.tools[0].description == "replaced"


def test_a_test_without_agentic_keys_is_a_plain_test(tmp_path: Path) -> None:
    suite = load(
        tmp_path, "model: echo\ntests:\n  - {prompt: hi, assert: [{type: contains, value: hi}]}\n"
    )
    assert suite.tests[0].agent is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "model: echo\ntools:\n  - {name: a, parameters: {type: object, required: 3}, mock: {default: 1}}\ntests: [{prompt: x}]\n",
            "suite.yaml:3:27: error: tool 'a': invalid parameters schema at $.required: 3 is not of type 'array'",
        ),
        (
            "model: echo\ntests:\n  - prompt: x\n    turns: [{user: y}]\n",
            "suite.yaml:3:5: error: a test has `prompt:` or `turns:`, not both",
        ),
        (
            "model: echo\ndefaultTest: {turns: [{user: y}]}\ntests: [{prompt: x}]\n",
            "suite.yaml:2:15: error: `turns` belongs on a test, not on defaultTest",
        ),
        (
            "model: echo\ntests:\n  - turns: [{user: 'hi {{nme}}'}, {user: 'and {{nme}}'}]\n    vars: {name: x}\n",
            "suite.yaml:3:20: error: prompt 'turn 1' uses 'nme', which this test's vars do not define; did you mean 'name'?",
        ),
        (
            "model: echo\ntests:\n  - prompt: x\n    environment: {files: [{src: x, dest: ../y}]}\n",
            "suite.yaml:4:33: error: file not found: x (looked for ",
        ),
        (
            "model: echo\ntests:\n  - turns: [{user: y, assert: [{type: file-exists, value: ../y}]}]\n",
            "suite.yaml:3:59: error: '../y' leads outside the workspace",
        ),
    ],
)
def test_bad_agentic_suites_fail_to_load_with_positions(
    tmp_path: Path, text: str, message: str
) -> None:
    from skilleval.errors import SuiteError

    with pytest.raises(SuiteError) as info:
        load(tmp_path, text)
    found = [f"suite.yaml:{str(d).split('suite.yaml:', 1)[1]}" for d in info.value.diagnostics]
    assert any(f.startswith(message) for f in found), found


def jobs_of(suite: Any, arms: tuple[str, ...] = ("default",)) -> list[Any]:
    from skilleval.runner.plan import plan

    return plan(suite, suite.tests, arms, lambda arm, test: "SKILL" if arm == "on" else None)


def test_an_agentic_job_runs_grades_every_turn_and_cleans_up(tmp_path: Path) -> None:
    from skilleval.runner.agentic import is_agentic, run_job

    suite = load(tmp_path)
    job = jobs_of(suite)[0]
    assert is_agentic(job)
    record = run_job(job, ScriptedProvider(suite.model.config), None, {})
    assert record.error is None
    assert [(a.type, a.status, a.details.get("turn")) for a in record.asserts] == [
        ("tool-called", "pass", 0),
        ("file-contains", "pass", 0),
        ("equals", "pass", 0),
        ("contains", "pass", None),
        ("file-matches", "pass", None),
        ("max-steps", "pass", None),
        ("tool-call-count", "pass", None),
    ]
    assert record.status == "pass"
    assert record.output == "You are welcome."
    assert record.stats is not None
    assert record.stats.steps == 3
    assert record.stats.tool_calls == 1
    agent_block = record.extra["agent"]
    assert [t["output"] for t in agent_block["turns"]] == ["Saved.", "You are welcome."]
    assert agent_block["steps"][0]["tool"] == "write_note"
    assert record.messages[-1].role == "assistant"
    leftovers = list(Path(os.environ.get("TMPDIR", "/tmp")).glob("skilleval-notes-default-0-*"))
    assert leftovers == []


def test_the_on_arm_gets_the_skill_before_the_tool_guide(tmp_path: Path) -> None:
    from skilleval.runner.agentic import run_job

    suite = load(tmp_path)
    on = next(j for j in jobs_of(suite, ("off", "on")) if j.arm == "on" and j.test.id == "notes")
    record = run_job(on, ScriptedProvider(suite.model.config), None, {})
    assert record.messages[0].content.startswith("SKILL\n\nYou can use tools.")


def test_a_failed_setup_makes_the_record_an_error(tmp_path: Path) -> None:
    from skilleval.runner.agentic import run_job

    text = SUITE.replace("files: [{src: seed.txt, dest: notes.txt}]", "commands: ['exit 7']")
    suite = load(tmp_path, text)
    record = run_job(jobs_of(suite)[0], ScriptedProvider(suite.model.config), None, {})
    assert (record.status, record.error) == ("error", "set-up command 1 `exit 7` exited with 7")
    assert record.asserts == ()


def test_a_provider_failure_makes_the_record_an_error_with_its_trajectory(tmp_path: Path) -> None:
    from skilleval.runner.agentic import run_job

    suite = load(tmp_path)
    provider = FakeProvider([call("write_note", text="x"), ProviderError("model crashed")])
    record = run_job(jobs_of(suite)[0], provider, None, {})
    assert (record.status, record.error) == ("error", "model crashed")
    assert len(record.extra["agent"]["steps"]) == 1


def test_a_plain_prompt_is_the_single_turn(tmp_path: Path) -> None:
    from skilleval.runner.agentic import run_job

    suite = load(tmp_path)
    job = jobs_of(suite)[1]
    record = run_job(job, FakeProvider([final("done")]), None, {})
    assert record.extra["agent"]["turns"][0]["user"] == "Just answer"
    assert [a.status for a in record.asserts] == ["pass"]


def test_skilleval_run_runs_agentic_tests_in_both_arms(tmp_path: Path, capsys: Any) -> None:
    from skilleval.cli import run_cli

    write(
        tmp_path / "skill" / "SKILL.md",
        "---\nname: notes\ndescription: Keep notes.\n---\nWrite notes.\n",
    )
    text = SUITE.replace("model:", "skill: skill/SKILL.md\nmodel:", 1)
    load(tmp_path, text)
    code = run_cli(["run", str(tmp_path / "suite.yaml"), "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0
    notes = [r for r in document["records"] if r["test_id"] == "notes"]
    assert [(r["arm"], r["status"]) for r in notes] == [("off", "pass"), ("on", "pass")]
    assert [s["tool"] for s in notes[0]["extra"]["agent"]["steps"]] == ["write_note", None, None]
    report = Path(os.environ["SKILLEVAL_HOME"]) / "runs" / document["run_id"] / "report.html"
    assert "Result of write_note" in report.read_text(encoding="utf-8")


def test_the_loop_works_through_an_openai_compatible_server(tmp_path: Path) -> None:
    import httpx

    from skilleval.engine.openai import OpenAIProvider
    from skilleval.engine.openai_provider import OpenAIConfig

    replies = [call("lookup", id="A1"), final("It has shipped.")]
    sent: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append(body)
        content = json.dumps(replies[len(sent) - 1])
        message = {"role": "assistant", "content": content}
        return httpx.Response(
            200,
            json={
                "choices": [{"message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 12},
            },
        )

    spec = OpenAIConfig(base_url="http://test/v1", model="m")
    with OpenAIProvider(spec, transport=httpx.MockTransport(handler)) as provider:
        run = agent(provider, [mock_tool()])
    assert run.final == "It has shipped."
    assert [s.kind for s in run.steps] == ["tool", "final"]
    tools = [mock_tool()]
    assert sent[0]["response_format"]["json_schema"]["schema"] == step_schema(tools)
    assert [m["role"] for m in sent[1]["messages"]] == ["system", "user", "assistant", "user"]
