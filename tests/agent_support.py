"""Fakes and helpers shared by the agent runtime's tests."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import fakes

from skilleval.agent import AgentRun, CommandTool, MockCase, MockTool, run_agent
from skilleval.engine.base import Completion
from skilleval.plugins.registry import default_registry
from skilleval.suite.agent_config import ToolConfig
from skilleval.suite.yamlio import parse_yaml

KINDS = default_registry(entry_points=False).tool_kinds()
"""The built-in tool kinds, as the plugin manager lists them."""


class FakeProvider(fakes.FakeProvider):
    """The shared fake; an agent that runs out of replies gives a final answer."""

    completion_tokens = 5

    def __init__(self, replies: Iterable[str | dict[str, Any] | Completion | Exception]) -> None:
        super().__init__(replies, default={"action": {"final": "out of replies"}})


def call(tool: str, thought: str = "go", **arguments: Any) -> dict[str, Any]:
    return {"thought": thought, "action": {"tool": tool, "arguments": arguments}}


def final(text: str) -> dict[str, Any]:
    return {"thought": "done", "action": {"final": text}}


def mock_tool(name: str = "lookup", **kw: Any) -> ToolConfig:
    params = {
        "type": "object",
        "properties": {"id": {"type": "string"}, "n": {"type": "integer", "minimum": 1}},
        "required": ["id"],
    }
    impl = MockTool(
        kw.get("cases", (MockCase({"id": "A1"}, {"status": "shipped"}),)),
        kw.get("default", "no such order"),
    )
    return ToolConfig(name, "Look up an order", params, impl)


def command_tool(
    command: str | tuple[str, ...], name: str = "run", timeout: float = 5.0, cap: int = 16000
) -> ToolConfig:
    params = {"type": "object", "properties": {"text": {"type": "string"}}}
    return ToolConfig(name, "Run it", params, CommandTool(command, timeout, cap))


def agent(provider: Any, tools: list[ToolConfig], **kw: Any) -> AgentRun:
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


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path
