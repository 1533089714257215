"""The agent runtime: the loop that runs a model as an agent, and the workspaces it works in.

What a test's agent may do is config, read when the suite loads
(:mod:`skilleval.suite.agentic`, typed in :mod:`skilleval.suite.agent_config`). This package
runs it: ``loop`` drives the model one constrained JSON step at a time (``prompting`` says
what is asked, ``reply`` reads the answer, ``calls`` checks and runs a tool call), ``records``
holds what a run produced, ``workspace`` builds the folder each run works in, and ``kinds``
registers the built-in tool kinds. The steps assertions see are
:class:`skilleval.trajectory.Step`.
"""

from __future__ import annotations

from skilleval.agent.kinds import CommandTool, MockCase, MockTool, PythonTool
from skilleval.agent.loop import run_agent
from skilleval.agent.prompting import step_schema
from skilleval.agent.records import AgentRun, TurnResult
from skilleval.agent.workspace import Workspace, create_workspace, sigterm_as_interrupt

__all__ = [
    "AgentRun",
    "CommandTool",
    "MockCase",
    "MockTool",
    "PythonTool",
    "TurnResult",
    "Workspace",
    "create_workspace",
    "run_agent",
    "sigterm_as_interrupt",
    "step_schema",
]
