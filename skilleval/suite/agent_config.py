"""Typed config of an agentic test: its tools, its workspace's environment, its turns.

The config layer (:mod:`skilleval.suite.agentic`) builds these while the suite loads; the
agent runtime (:mod:`skilleval.agent`) and the runner consume them. They are frozen, so one
loaded suite can be run by several workers at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

from skilleval.errors import Location
from skilleval.suite.model import AssertionEntry
from skilleval.trajectory import ToolImpl
from skilleval.util.frozen import frozen

DEFAULT_MAX_STEPS = 6
"""Model calls allowed per turn when a test does not say."""
SETUP_TIMEOUT_S = 60.0
"""Seconds each set-up command may take when the environment does not say."""


@frozen
class ToolConfig:
    """One declared tool, its implementation built by its tool kind."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    """JSON Schema (draft 2020-12) for the arguments, an object."""
    impl: ToolImpl
    where: Location = field(default_factory=lambda: Location("<tool>"))

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.parameters),
            "impl": self.impl.to_json(),
        }


@frozen
class FileCopy:
    """One ``files:`` entry: copy ``src`` (from the suite) to ``dest`` (in the workspace)."""

    src: Path
    dest: str
    where: Location


@frozen
class SetupCommand:
    """One ``commands:`` entry."""

    command: str | tuple[str, ...]
    where: Location

    def label(self) -> str:
        return self.command if isinstance(self.command, str) else " ".join(self.command)


@frozen
class EnvironmentConfig:
    """What a workspace starts with."""

    files: tuple[FileCopy, ...] = ()
    commands: tuple[SetupCommand, ...] = ()
    timeout_s: float = SETUP_TIMEOUT_S


@frozen
class Turn:
    """One user message of a multi-turn test, with the assertions on its answer."""

    user: str
    """A template, rendered with the test's vars."""
    asserts: tuple[AssertionEntry, ...]
    where: Location


@frozen
class AgentConfig:
    """How a test runs as an agent: its tools, workspace, turns and step limit."""

    tools: tuple[ToolConfig, ...] = ()
    environment: EnvironmentConfig | None = None
    turns: tuple[Turn, ...] = ()
    """Empty: the test's prompt is the single turn."""
    max_steps: int = DEFAULT_MAX_STEPS
