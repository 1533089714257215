"""What an agent run produced: its turns, its steps and the transcript.

The steps themselves (:class:`~skilleval.trajectory.Step`) belong to the plugin contract,
because assertions read them; a run and its turns are the runtime's own record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from skilleval.engine.base import Completion, Message
from skilleval.trajectory import Step
from skilleval.util.frozen import frozen

StopReason = Literal["answer", "max_steps", "error"]


@frozen
class TurnResult:
    """One user turn: its message, its steps and its answer."""

    index: int
    user: str
    output: str
    """The final answer; '' when the turn ended without one."""
    stop_reason: StopReason
    steps: tuple[Step, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "user": self.user,
            "output": self.output,
            "stop_reason": self.stop_reason,
            "steps": [s.index for s in self.steps],
        }


@frozen
class AgentRun:
    """A whole agent run: the transcript, every step, the per-turn answers and totals."""

    final: str
    """The last turn's answer ('' when it gave none)."""
    messages: tuple[Message, ...]
    turns: tuple[TurnResult, ...]
    steps: tuple[Step, ...]
    error: str | None = None
    """Why the run could not finish (the provider failed, the workspace could not be set up)."""

    @classmethod
    def failed(cls, error: str, messages: Sequence[Message] = ()) -> AgentRun:
        """A run that never started, e.g. because the workspace set-up failed."""
        return cls(final="", messages=tuple(messages), turns=(), steps=(), error=error)

    @property
    def tool_calls(self) -> int:
        return sum(1 for s in self.steps if s.ran)

    def trajectory(self) -> list[dict[str, Any]]:
        """The steps as plain data: what trajectory assertions and JMESPath queries see."""
        return [s.to_json() for s in self.steps]

    def totals(self) -> dict[str, Any]:
        return {
            "steps": len(self.steps),
            "tool_calls": self.tool_calls,
            "error_steps": sum(1 for s in self.steps if s.error is not None),
            "prompt_tokens": sum(s.prompt_tokens for s in self.steps),
            "completion_tokens": sum(s.completion_tokens for s in self.steps),
            "latency_ms": round(sum(s.latency_ms for s in self.steps), 3),
            "tool_ms": round(sum(s.tool_ms for s in self.steps), 3),
        }

    def as_completion(self) -> Completion:
        """The run summed up as one completion, for code that reports single calls."""
        last = self.steps[-1] if self.steps else None
        return Completion(
            text=self.final,
            finish_reason="stop" if last is None or last.kind == "final" else "max_steps",
            prompt_tokens=sum(s.prompt_tokens for s in self.steps),
            completion_tokens=sum(s.completion_tokens for s in self.steps),
            latency_ms=sum(s.latency_ms for s in self.steps),
            cached=bool(self.steps) and all(s.cached for s in self.steps),
            tokens_evaluated=sum(s.tokens_evaluated for s in self.steps),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "final": self.final,
            "error": self.error,
            "turns": [t.to_json() for t in self.turns],
            "steps": self.trajectory(),
            "totals": self.totals(),
            "messages": [m.to_json() for m in self.messages],
        }
