"""Agentic tests: tools, the agent loop, and per-run workspaces.

``tools`` declares what a model may call, ``workspace`` builds the folder each run works in,
``loop`` runs the model as an agent and records its trajectory, and ``process`` is the one
place commands are run (with a timeout and an output cap). ``schema`` holds the YAML shapes.
"""

from __future__ import annotations

from skilleval.agent.loop import AgentRun, Step, TurnResult, run_agent, step_schema
from skilleval.agent.process import ProcessResult, run_process
from skilleval.agent.tools import (
    CommandTool,
    MockCase,
    MockTool,
    PythonTool,
    ToolResult,
    ToolSpec,
    args_match,
    merge_tools,
    parse_tools,
)
from skilleval.agent.workspace import (
    Environment,
    FileCopy,
    SetupCommand,
    Workspace,
    create_workspace,
    parse_environment,
    resolve_inside,
)
from skilleval.errors import PathEscape

__all__ = [
    "AgentRun",
    "CommandTool",
    "Environment",
    "FileCopy",
    "MockCase",
    "MockTool",
    "PathEscape",
    "ProcessResult",
    "PythonTool",
    "SetupCommand",
    "Step",
    "ToolResult",
    "ToolSpec",
    "TurnResult",
    "Workspace",
    "args_match",
    "create_workspace",
    "merge_tools",
    "parse_environment",
    "parse_tools",
    "resolve_inside",
    "run_agent",
    "run_process",
    "step_schema",
]
