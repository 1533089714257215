"""What a record keeps beyond one model call: the agent's run and the test's metadata.

The agent loop's own objects (:class:`~skilleval.agent.records.AgentRun`, with its
:class:`~skilleval.trajectory.Step` s) hold live data, the transcript among it; a record keeps
their results form: every step as plain fields, each turn with the indices of its steps, and
the totals. The transcript is the record's ``messages`` and is not repeated here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any, Literal

from skilleval.results.codec import COUNT, OMIT_EMPTY, meta
from skilleval.util.frozen import frozen


@frozen
class AgentStep:
    """One model call of the agent loop and what came of it."""

    index: int = field(metadata=meta(minimum=0))
    turn: int = field(metadata=meta(minimum=0))
    kind: str = field(metadata=meta("final, tool, invalid or error."))
    thought: str | None
    tool: str | None
    arguments: Any
    result: str | None
    error: str | None = field(
        metadata=meta(
            "Why the step failed: not JSON, unknown tool, invalid arguments, the tool failed."
        )
    )
    ran: bool = field(metadata=meta("The tool's implementation actually ran."))
    truncated: bool
    exit_code: int | None
    timed_out: bool
    answer: str | None
    prompt_tokens: int = field(metadata=meta(ref=COUNT))
    completion_tokens: int = field(metadata=meta(ref=COUNT))
    tokens_evaluated: int = field(metadata=meta(ref=COUNT))
    latency_ms: float = field(metadata=meta(minimum=0))
    tool_ms: float = field(metadata=meta(minimum=0))
    cached: bool
    reply: str | None = field(
        default=None, metadata=meta("The model's raw reply.", omit=OMIT_EMPTY)
    )
    replaced: tuple[str, ...] = field(
        default=(),
        metadata=meta("Where lone surrogates were replaced with U+FFFD.", omit=OMIT_EMPTY),
    )


@frozen
class AgentTurn:
    """One user turn: its message, the indices of its steps and its answer."""

    index: int = field(metadata=meta(minimum=0))
    user: str
    output: str = field(metadata=meta("The turn's final answer; '' when it gave none."))
    stop_reason: Literal["answer", "max_steps", "error"]
    steps: tuple[int, ...]


@frozen
class AgentTotals:
    """The run's steps and their costs, summed."""

    steps: int = field(metadata=meta(ref=COUNT))
    tool_calls: int = field(metadata=meta("Steps whose tool ran.", ref=COUNT))
    error_steps: int = field(metadata=meta(ref=COUNT))
    prompt_tokens: int = field(metadata=meta(ref=COUNT))
    completion_tokens: int = field(metadata=meta(ref=COUNT))
    latency_ms: float = field(metadata=meta(minimum=0))
    tool_ms: float = field(metadata=meta(minimum=0))


@frozen
class AgentBlock:
    """A whole agent run, as a record keeps it."""

    final: str = field(metadata=meta("The last turn's answer; '' when it gave none."))
    error: str | None = field(metadata=meta("Why the run could not finish."))
    turns: tuple[AgentTurn, ...]
    steps: tuple[AgentStep, ...]
    totals: AgentTotals


@frozen
class RecordExtra:
    """What a record carries beyond its call: written as the record's ``extra`` object."""

    agent: AgentBlock | None = field(
        default=None, metadata=meta("The agent's run, for a test with tools.", omit=OMIT_EMPTY)
    )
    metadata: Mapping[str, Any] | None = field(
        default=None,
        metadata=meta(
            "The test's `metadata:`, as written (as promptfoo carries it).", omit=OMIT_EMPTY
        ),
    )
