"""The agent loop: steps, turns, what the model is asked for and how replies are read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_support import FakeProvider, agent, call, final, mock_tool, write

from skilleval.agent import CommandTool, run_agent, step_schema
from skilleval.agent.calls import argument_error
from skilleval.agent.prompting import decoding_schema
from skilleval.agent.reply import parse_step
from skilleval.engine.base import Completion, Message
from skilleval.engine.testing import ScriptedConfig, ScriptedProvider
from skilleval.errors import ProviderError
from skilleval.suite.agent_config import ToolConfig

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
    tool = ToolConfig(
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


# -- a real model -----------------------------------------------------------------------------


@pytest.mark.model
def test_the_embedded_model_runs_a_two_step_agent(tmp_path: Path) -> None:
    from skilleval.engine.llama import LlamaConfig, LlamaProvider

    write(tmp_path / "notes.txt", "Buy milk.\n")
    read = ToolConfig(
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
    replies = [m.content for m in run.messages if m.role == "assistant"]
    assert len(replies) == len(run.steps)
    for step, reply in zip(run.steps, replies, strict=True):
        if step.kind == "invalid":
            # The thought is free text: on some machine the model may write past the
            # budget. That is the one way a reply can fail the grammar's shape.
            assert step.error == "reply was cut off at max_tokens (96)", step
            assert step.completion_tokens == 96
            continue
        # the grammar admits only a declared tool with well-formed arguments, or an answer
        assert step.kind in ("tool", "final"), step
        if step.kind == "tool":
            assert step.tool in tools
            assert argument_error(tools[step.tool], step.arguments) is None
            assert step.ran
        assert json.loads(reply) == (
            {"thought": step.thought, "action": {"tool": step.tool, "arguments": step.arguments}}
            if step.kind == "tool"
            else {"thought": step.thought, "action": {"final": step.answer}}
        )
    assert {str(m.role) for m in run.messages} <= {"system", "user", "assistant"}
    assert isinstance(Message("user", "x"), Message)
