"""What one graded output looks like: the record streamed to ``results.jsonl``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["pass", "fail", "error"]


@dataclass(frozen=True, slots=True)
class AssertionResult:
    """One assertion's verdict on one output, negation already applied."""

    type: str
    negated: bool
    tier: str
    status: Status
    score: float | None
    reason: str
    weight: float
    metric: str | None = None
    error: str | None = None
    where: str = ""
    from_default: bool = False
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "negated": self.negated,
            "tier": self.tier,
            "status": self.status,
            "pass": self.status == "pass",
            "score": None if self.score is None else round(self.score, 6),
            "reason": self.reason,
            "weight": self.weight,
            "metric": self.metric,
            "error": self.error,
            "where": self.where,
        }
        if self.from_default:
            out["from_default"] = True
        if self.details:
            out["details"] = dict(self.details)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AssertionResult:
        return cls(
            type=data["type"],
            negated=data["negated"],
            tier=data["tier"],
            status=data["status"],
            score=data.get("score"),
            reason=data.get("reason", ""),
            weight=data.get("weight", 1.0),
            metric=data.get("metric"),
            error=data.get("error"),
            where=data.get("where", ""),
            from_default=data.get("from_default", False),
            details=data.get("details") or {},
        )


@dataclass(frozen=True, slots=True)
class Record:
    """One test × arm × trial: the prompt, the transcript, the output and its verdicts."""

    test_id: str
    arm: str
    trial: int
    status: Status
    score: float
    output: str
    prompt: str
    messages: tuple[Mapping[str, str], ...]
    asserts: tuple[AssertionResult, ...]
    stats: Mapping[str, Any]
    error: str | None = None
    tiers: Mapping[str, Status] = field(default_factory=dict)
    metrics: Mapping[str, float] = field(default_factory=dict)
    trigger: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.test_id, self.arm, self.trial)

    @classmethod
    def failed(
        cls,
        key: tuple[str, str, int],
        prompt: str,
        message: str,
        messages: Sequence[Mapping[str, str]] = (),
        extra: Mapping[str, Any] | None = None,
    ) -> Record:
        """A result that could not be produced or graded: an ``error``, never a fail."""
        test_id, arm, trial = key
        return cls(
            test_id=test_id,
            arm=arm,
            trial=trial,
            status="error",
            score=0.0,
            output="",
            prompt=prompt,
            messages=tuple(messages),
            asserts=(),
            stats={},
            error=message,
            extra=dict(extra or {}),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "test_id": self.test_id,
            "arm": self.arm,
            "trial": self.trial,
            "status": self.status,
            "score": round(self.score, 6),
            "error": self.error,
            "prompt": self.prompt,
            "messages": [dict(m) for m in self.messages],
            "output": self.output,
            "stats": dict(self.stats),
            "tiers": dict(self.tiers),
            "metrics": {k: round(v, 6) for k, v in self.metrics.items()},
            "asserts": [a.to_json() for a in self.asserts],
            "trigger": dict(self.trigger) if self.trigger is not None else None,
        }
        if self.extra:
            out["extra"] = dict(self.extra)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Record:
        return cls(
            test_id=data["test_id"],
            arm=data["arm"],
            trial=data["trial"],
            status=data["status"],
            score=data["score"],
            output=data["output"],
            prompt=data["prompt"],
            messages=tuple(data.get("messages") or ()),
            asserts=tuple(AssertionResult.from_json(a) for a in data.get("asserts") or ()),
            stats=data.get("stats") or {},
            error=data.get("error"),
            tiers=data.get("tiers") or {},
            metrics=data.get("metrics") or {},
            trigger=data.get("trigger"),
            extra=data.get("extra") or {},
        )
