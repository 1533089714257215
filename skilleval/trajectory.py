"""What an agent run leaves for assertions, and what a tool kind implements.

This is part of the plugin contract, below every layer that runs anything:

* :class:`Step` is one model call of the agent loop and what came of it. The runner hands
  the steps to assertions as :attr:`~skilleval.api.Check.trajectory`.
* :class:`ToolImpl`, :class:`ToolResult` and :class:`ToolContext` are what a tool kind
  (:func:`~skilleval.plugins.tool_kind`) builds, returns and is given while it builds.
* :func:`args_match` is how a call's arguments are compared with expected ones, the same for
  a mock's cases and for the ``tool-called`` assertion.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

StepKind = Literal["tool", "final", "invalid"]


@dataclass(frozen=True, slots=True)
class Step:
    """One model call of the loop and what came of it."""

    index: int
    """Position in the whole run, from 0."""
    turn: int
    """Which user turn it belongs to, from 0."""
    kind: StepKind
    """``tool`` (a call was attempted), ``final`` (an answer) or ``invalid`` (neither parsed)."""
    thought: str | None = None
    tool: str | None = None
    arguments: Any = None
    result: str | None = None
    """The observation the model was shown (tool steps)."""
    error: str | None = None
    """Why the step failed: not JSON, unknown tool, invalid arguments, the tool failed."""
    ran: bool = False
    """True when the tool's implementation actually ran: a command that could not start
    (a missing program, an argument over the OS limit) did not."""
    truncated: bool = False
    """True when the tool's output was cut (command output cap or the observation limit)."""
    exit_code: int | None = None
    timed_out: bool = False
    answer: str | None = None
    """The final answer (final steps)."""
    reply: str | None = None
    """The model's raw reply, kept for invalid steps only (the transcript has the rest)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_evaluated: int = 0
    """Prompt tokens the model actually evaluated (the rest came from its KV cache)."""
    latency_ms: float = 0.0
    """Time of the model call."""
    tool_ms: float = 0.0
    """Time the tool took."""
    cached: bool = False
    replaced: tuple[str, ...] = ()
    """What was replaced in the reply's text before it was used (NUL bytes, lone surrogates),
    one note per place, e.g. ``arguments.path: 1 NUL byte``."""

    def to_json(self) -> dict[str, Any]:
        """The step as plain data: what reports show and JMESPath queries see."""
        out: dict[str, Any] = {
            "index": self.index,
            "turn": self.turn,
            "kind": self.kind,
            "thought": self.thought,
            "tool": self.tool,
            "arguments": self.arguments,
            "result": self.result,
            "error": self.error,
            "ran": self.ran,
            "truncated": self.truncated,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "answer": self.answer,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "tokens_evaluated": self.tokens_evaluated,
            "latency_ms": round(self.latency_ms, 3),
            "tool_ms": round(self.tool_ms, 3),
            "cached": self.cached,
        }
        if self.reply is not None:
            out["reply"] = self.reply
        if self.replaced:
            out["replaced"] = list(self.replaced)
        return out


# -- the tool contract ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What one call returned."""

    output: str
    """The observation shown to the model."""
    error: str | None = None
    """Why the call failed (no matching mock, a timeout, an exception); shown to the model too."""
    truncated: bool = False
    exit_code: int | None = None
    """command: the exit code (None if it was killed or could not start)."""
    timed_out: bool = False
    started: bool = True
    """False when the implementation never got going (a command that could not start, no
    workspace): the step is then not a call that ran."""


@runtime_checkable
class ToolImpl(Protocol):
    """How a tool answers; what a tool kind's factory returns."""

    @property
    def kind(self) -> str:
        """The tool kind's name (mock, command, python …)."""
        ...

    def run(self, arguments: Mapping[str, Any], workspace: Path | None) -> ToolResult: ...

    def to_json(self) -> dict[str, Any]: ...


class ToolContext(Protocol):
    """What a tool kind's factory may use while it builds one tool's implementation.

    Errors are collected, not raised, so one load reports every problem at its position.
    """

    @property
    def name(self) -> str:
        """The tool's name."""
        ...

    @property
    def parameters(self) -> Mapping[str, Any]:
        """The tool's parameters schema."""
        ...

    @property
    def options(self) -> Mapping[str, Any]:
        """The whole tool mapping as written (for the kind's own ``options`` keys)."""
        ...

    @property
    def base_dir(self) -> Path:
        """The folder ``file://`` references are relative to."""
        ...

    @property
    def plugin_dirs(self) -> Sequence[Path]:
        """The suite's plugin folders."""
        ...

    def error(self, message: str, key: str | None = None) -> None:
        """Record a problem at ``key`` of the tool (default: at the kind's value)."""
        ...


def result_text(value: Any) -> str:
    """A result as the model sees it: text unchanged, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _same(actual: Any, expected: Any, subset: bool) -> bool:
    # JSON equality: true is not 1, though 1 and 1.0 are equal.
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return False
        if not subset and set(actual) != set(expected):
            return False
        return all(k in actual and _same(actual[k], v, subset) for k, v in expected.items())
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(_same(a, e, False) for a, e in zip(actual, expected, strict=True))
        )
    return bool(actual == expected)


def args_match(
    actual: Mapping[str, Any], expected: Mapping[str, Any], *, exact: bool = False
) -> bool:
    """Whether a call's arguments match ``expected``.

    Subset matching (the default) needs every key of ``expected``, at any depth of nested
    mappings, with an equal value; lists must be equal item for item. Exact matching needs
    equal mappings.
    """
    return _same(actual, expected, not exact)
