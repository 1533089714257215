"""One graded output: the record streamed to ``results.jsonl`` and kept in ``results.json``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any, Literal

from skilleval.results.agent import AgentBlock, RecordExtra
from skilleval.results.codec import ARM, COUNT, OMIT_EMPTY, OMIT_FALSE, meta
from skilleval.util.frozen import frozen

Status = Literal["pass", "fail", "error"]
Tier = Literal["deterministic", "model"]

ARMS: tuple[str, ...] = ("default", "off", "on", "routed")


@frozen
class Message:
    """One message of the transcript sent to the model."""

    role: str
    content: str


@frozen
class CallStats:
    """What producing one output cost."""

    finish_reason: str | None
    prompt_tokens: int = field(metadata=meta(ref=COUNT))
    completion_tokens: int = field(metadata=meta(ref=COUNT))
    latency_ms: float = field(metadata=meta(minimum=0))
    tokens_per_s: float | None = field(metadata=meta(minimum=0))
    cached: bool
    tokens_evaluated: int = field(metadata=meta(ref=COUNT))
    steps: int | None = field(default=None, metadata=meta("Agent steps taken.", omit=OMIT_EMPTY))
    tool_calls: int | None = field(
        default=None, metadata=meta("Agent tool calls made.", omit=OMIT_EMPTY)
    )
    replaced_chars: int | None = field(
        default=None,
        metadata=meta(
            "Lone surrogates in the reply, replaced with U+FFFD (absent when none were).",
            omit=OMIT_EMPTY,
        ),
    )


@frozen
class TriggerOutcome:
    """The routing decision for one test: which skill the model chose."""

    test_id: str
    expected: bool | None
    chosen: str | None = field(
        metadata=meta("The label the model picked; null when the decision failed.")
    )
    triggered: bool | None = field(metadata=meta("Whether the skill under test was the choice."))
    correct: bool | None
    scores: Mapping[str, float] | None
    margin: float | None = field(
        metadata=meta("Score of the choice minus the runner-up: how close the decision was.")
    )
    error: str | None
    skill_margin: float | None = field(
        default=None,
        metadata=meta(
            "The skill's log-probability score minus the best other option's (with no "
            "distractors, minus none's): above 0 when the skill is chosen. The score the "
            "trigger AUROC ranks; absent when the router gives no scores.",
            omit=OMIT_EMPTY,
        ),
    )
    runs: tuple[str | None, ...] | None = field(
        default=None,
        metadata=meta(
            "With `trigger: {runs: N}`: the label chosen on each sampled routing run, in seed "
            "order (null for a run that failed). Absent when one greedy call decided.",
            omit=OMIT_EMPTY,
        ),
    )
    rate: float | None = field(
        default=None,
        metadata=meta(
            "With `trigger: {runs: N}`: the share of the runs that chose the skill; the test "
            "triggered when it reached the suite's `trigger.rate`.",
            omit=OMIT_EMPTY,
            digits=6,
            minimum=0,
            maximum=1,
        ),
    )


@frozen
class AssertionResult:
    """One assertion's verdict on one output, negation already applied."""

    type: str = field(metadata=meta("As written, including a not- prefix."))
    negated: bool
    tier: Tier
    status: Status
    passed: bool = field(init=False, metadata=meta(key="pass"))
    score: float | None = field(metadata=meta(digits=6))
    reason: str
    weight: float = field(metadata=meta(minimum=0))
    metric: str | None = None
    error: str | None = None
    where: str = field(default="", metadata=meta("path:line:col of the assertion in the suite."))
    from_default: bool = field(
        default=False, metadata=meta("Inherited from defaultTest.", omit=OMIT_FALSE)
    )
    details: Mapping[str, Any] = field(default_factory=dict, metadata=meta(omit=OMIT_EMPTY))

    def __post_init__(self) -> None:
        object.__setattr__(self, "passed", self.status == "pass")


@frozen
class Record:
    """One test × arm × trial: the prompt, the transcript, the output and its verdicts."""

    test_id: str
    arm: str = field(metadata=meta(ref=ARM))
    trial: int = field(metadata=meta(minimum=0))
    status: Status
    score: float = field(metadata=meta(digits=6))
    error: str | None
    prompt: str = field(metadata=meta("The rendered prompt."))
    messages: tuple[Message, ...] = field(metadata=meta("The full transcript sent to the model."))
    output: str
    stats: CallStats | None = field(
        metadata=meta("What the call cost; {} when no call was made.", none_as_empty=True)
    )
    tiers: Mapping[str, Status] = field(metadata=meta("Each tier's verdict: deterministic, model."))
    metrics: Mapping[str, float] = field(metadata=meta(digits=6))
    asserts: tuple[AssertionResult, ...]
    trigger: TriggerOutcome | None = None
    extra: RecordExtra | None = field(
        default=None,
        metadata=meta(
            "The agent's run and the test's metadata; absent when there is neither.",
            omit=OMIT_EMPTY,
        ),
    )

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.test_id, self.arm, self.trial)

    @property
    def agent(self) -> AgentBlock | None:
        """The agent's run, for a test with tools."""
        return None if self.extra is None else self.extra.agent

    @property
    def metadata(self) -> Mapping[str, Any] | None:
        """The test's ``metadata:``, when it has one."""
        return None if self.extra is None else self.extra.metadata

    @classmethod
    def failed(
        cls,
        key: tuple[str, str, int],
        prompt: str,
        message: str,
        messages: Sequence[Message] = (),
        agent: AgentBlock | None = None,
    ) -> Record:
        """A result that could not be produced or graded: an ``error``, never a fail."""
        test_id, arm, trial = key
        return cls(
            test_id=test_id,
            arm=arm,
            trial=trial,
            status="error",
            score=0.0,
            error=message,
            prompt=prompt,
            messages=tuple(messages),
            output="",
            stats=None,
            tiers={},
            metrics={},
            asserts=(),
            extra=None if agent is None else RecordExtra(agent=agent),
        )
