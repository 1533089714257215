"""The typed results of one run: what ``results.json`` holds, block by block.

Every renderer, ``compare`` and ``watch`` read these objects; :mod:`skilleval.results.write`
is the one writer, :mod:`skilleval.results.load` the one loader, and
``schemas/results.schema.json`` is generated from these classes (``tools/results_schema.py``).
A field's name is its JSON key and the declaration order is the key order in the file. The
blocks live by concern (:mod:`~skilleval.results.records`, :mod:`~skilleval.results.blocks`,
:mod:`~skilleval.results.environment`, :mod:`~skilleval.results.agent`); this module puts
them together and exports every one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any, Literal

from skilleval.results.blocks import (
    ArmSummary,
    Auroc,
    CalibratedDecision,
    Confusion,
    CurvePoint,
    Fraction,
    Lift,
    LiftRow,
    LiftVerdict,
    Overfit,
    OverfitItem,
    Reliability,
    ReliabilityPoint,
    RouterFitness,
    Severity,
    Summary,
    Tally,
    TestReliability,
    TestRow,
    Trigger,
    TriggerCalibration,
)
from skilleval.results.codec import ARM, COUNT, OMIT_EMPTY, RATE, meta
from skilleval.results.environment import (
    DecodingInfo,
    Environment,
    KernelsInfo,
    LanesInfo,
    ModelError,
    ModelInfo,
    RegistryEntry,
    WaitPolicyInfo,
)
from skilleval.results.records import Record
from skilleval.util.frozen import frozen

__all__ = [
    "RESULTS_VERSION",
    "ArmSummary",
    "Auroc",
    "CalibratedDecision",
    "Calls",
    "Confusion",
    "CurvePoint",
    "DecodingInfo",
    "Environment",
    "Fraction",
    "Gate",
    "GateCheck",
    "JudgeDecoding",
    "JudgeFitness",
    "JudgeInfo",
    "KernelsInfo",
    "LanesInfo",
    "Lift",
    "LiftRow",
    "LiftVerdict",
    "ModelError",
    "ModelInfo",
    "Overfit",
    "OverfitItem",
    "RegistryEntry",
    "Reliability",
    "ReliabilityPoint",
    "RouterFitness",
    "Run",
    "RunStatus",
    "Severity",
    "SkillInfo",
    "SuiteInfo",
    "SuiteType",
    "Summary",
    "Tally",
    "TestReliability",
    "TestRow",
    "Timing",
    "Trigger",
    "TriggerCalibration",
    "WaitPolicyInfo",
]

RESULTS_VERSION = 1

RunStatus = Literal["complete", "interrupted", "incomplete"]
SuiteType = Literal["regression", "capability"]


@frozen
class SuiteInfo:
    """The suite that ran."""

    path: str | None = field(metadata=meta("The suite file as given on the command line."))
    description: str | None
    type: SuiteType | None = field(
        metadata=meta("regression gates the exit code; capability only reports.")
    )
    threshold: float | None = field(metadata=meta(minimum=0, maximum=1))
    trials: int | None = field(metadata=meta(minimum=1))
    tests: int = field(metadata=meta("Tests selected for the run.", ref=COUNT))
    metadata: Mapping[str, Any] = field(
        default_factory=dict,
        metadata=meta("The suite's own `metadata:`, as written.", omit=OMIT_EMPTY),
    )


@frozen
class SkillInfo:
    """The skill under evaluation."""

    name: str
    description: str | None
    path: str
    digest: str = field(metadata=meta("Content digest of the skill as loaded."))
    distractors: tuple[str, ...] = field(
        metadata=meta("Other skills offered beside it in the routed arm.")
    )


@frozen
class JudgeDecoding:
    greedy: bool
    temperature: float = field(metadata=meta(minimum=0))
    top_p: float = field(metadata=meta(minimum=0, maximum=1))
    seed: int


JudgeFitnessStatus = Literal["qualified", "unqualified", "not checked", "error"]


@frozen
class JudgeFitness:
    """How well the judge grades known-good and known-bad outputs (the judge-fitness set).

    Measured the first time a judge model grades a run, then read from the cache for that
    judge's identity.
    """

    status: JudgeFitnessStatus = field(
        metadata=meta(
            "qualified: both 95% intervals lie above chance. unqualified: one includes chance "
            "or lies below it, so the model tier's figures are not evidence. not checked: "
            "the check was skipped. error: the judge could not be measured."
        )
    )
    reason: str = field(metadata=meta("The status in one plain sentence, as reports show it."))
    fitness: float | None = field(
        default=None,
        metadata=meta(
            "Accuracy: the share of outputs graded right (good passes, bad fails; an error is "
            "wrong). A judge that gives every output the same grade scores 0.5.",
            ref=RATE,
        ),
    )
    ci95: tuple[float, float] | None = field(
        default=None,
        metadata=meta(
            "Wilson 95% interval for the fitness, over pairs (each pair scores 0, 0.5 or 1)."
        ),
    )
    discrimination: float | None = field(
        default=None,
        metadata=meta(
            "Over pairs scored on both sides: how often the good output scored above the bad "
            "one, ties counting half.",
            ref=RATE,
        ),
    )
    discrimination_ci95: tuple[float, float] | None = None
    error_rate: float | None = field(default=None, metadata=meta(ref=RATE))
    pairs: int = field(default=0, metadata=meta("Pairs graded.", ref=COUNT))
    scored_pairs: int = field(default=0, metadata=meta(ref=COUNT))
    outputs: int = field(default=0, metadata=meta(ref=COUNT))
    correct: int = field(default=0, metadata=meta(ref=COUNT))
    errors: int = field(default=0, metadata=meta(ref=COUNT))
    chance: float = field(default=0.5, metadata=meta(minimum=0, maximum=1))
    fitness_set: str | None = field(
        default=None, metadata=meta("The pairs' file and the SHA-256 of its text.")
    )
    measured_at: str | None = field(default=None, metadata=meta("ISO 8601, UTC."))
    seconds: float | None = field(
        default=None, metadata=meta("How long the measurement took.", minimum=0)
    )
    cached: bool = field(
        default=False,
        metadata=meta("Read from the cache of an earlier measurement of the same judge."),
    )


@frozen
class JudgeInfo:
    """The model that graded model-tier assertions."""

    model: ModelInfo | ModelError | None = field(default=None, metadata=meta(omit=OMIT_EMPTY))
    greedy: bool | None = field(default=None, metadata=meta(omit=OMIT_EMPTY))
    seed: int | None = field(default=None, metadata=meta(omit=OMIT_EMPTY))
    decoding: JudgeDecoding | None = field(default=None, metadata=meta(omit=OMIT_EMPTY))
    repair_retries: int | None = field(
        default=None,
        metadata=meta(
            "Retries allowed when the judge's reply does not fit its schema.",
            omit=OMIT_EMPTY,
            minimum=0,
        ),
    )
    retry_budget_factor: float | None = field(
        default=None, metadata=meta(omit=OMIT_EMPTY, minimum=0)
    )
    reply_validation: str | None = field(default=None, metadata=meta(omit=OMIT_EMPTY))
    rubric_verdict: str | None = field(
        default=None,
        metadata=meta(
            "How the judge reaches an llm-rubric verdict: `written` (its reply holds the score "
            "and pass) or `scored-expectation` (the expected score under the score scale's "
            "choice probabilities; a reason is written for failing verdicts only).",
            omit=OMIT_EMPTY,
        ),
    )
    same_as_generator: bool = field(
        default=False,
        metadata=meta("The judge is the model being tested, so it grades its own outputs."),
    )
    fitness: JudgeFitness | None = field(
        default=None,
        metadata=meta(
            "The judge's fitness on the judge-fitness set; null in results written before "
            "it was measured.",
            omit=OMIT_EMPTY,
        ),
    )
    side_by_side: JudgeFitness | None = field(
        default=None,
        metadata=meta(
            "With a side-by-side assertion: the judge's fitness at comparing two answers, the "
            "share of the judge-fitness set's pairs where it preferred the good output.",
            omit=OMIT_EMPTY,
        ),
    )


@frozen
class Calls:
    """How many model calls the run made and what they cost."""

    judge_calls: int | None = field(
        default=None,
        metadata=meta("Calls the judge model answered; cache hits excluded.", omit=OMIT_EMPTY),
    )
    judge_cache_hits: int | None = field(default=None, metadata=meta(omit=OMIT_EMPTY))
    judge_prompt_tokens: int | None = field(default=None, metadata=meta(omit=OMIT_EMPTY))
    judge_completion_tokens: int | None = field(default=None, metadata=meta(omit=OMIT_EMPTY))
    judge_tokens_evaluated: int | None = field(
        default=None,
        metadata=meta(
            "Prompt tokens the judge model evaluated (not reused from its KV cache).",
            omit=OMIT_EMPTY,
        ),
    )
    model_calls: int = field(
        default=0,
        metadata=meta(
            "Calls the model under test answered (generation and routing); cache hits excluded.",
            ref=COUNT,
        ),
    )
    cache_hits: int = field(default=0, metadata=meta(ref=COUNT))
    prompt_tokens: int = field(default=0, metadata=meta(ref=COUNT))
    completion_tokens: int = field(default=0, metadata=meta(ref=COUNT))
    tokens_evaluated: int = field(default=0, metadata=meta(ref=COUNT))
    generation_tokens_per_s: float | None = field(
        default=None,
        metadata=meta(
            "Tokens generated per second the model was busy (busy_s), over all its calls; "
            "null for providers whose timing means nothing (echo, scripted).",
            minimum=0,
        ),
    )
    busy_s: float | None = field(
        default=None,
        metadata=meta(
            "Seconds the model was busy generating: its own decoding time when it measures "
            "it (in-process), else the time at least one call was in flight; no queueing.",
            omit=OMIT_EMPTY,
            minimum=0,
        ),
    )


@frozen
class GateCheck:
    """One condition of the gate: what was required, what was measured."""

    name: str
    required: str = field(metadata=meta('The condition, e.g. ">= 0.9".'))
    actual: int | float | str | None
    passed: bool


@frozen
class Gate:
    """The verdict and its exit code."""

    type: SuiteType
    passed: bool
    exit_code: int = field(metadata=meta(minimum=0))
    checks: tuple[GateCheck, ...]
    reasons: tuple[str, ...] = field(metadata=meta("Why the gate did not pass; empty when it did."))


@frozen
class Timing:
    started_at: str | None = field(metadata=meta("ISO 8601, UTC."))
    duration_s: float | None = field(metadata=meta(minimum=0))


@frozen
class Run:
    """One run of a suite: what ran, on which model, every graded output and the aggregates."""

    version: int = field(
        metadata=meta(
            "Results format version. Readers refuse versions they do not know.",
            const=RESULTS_VERSION,
        )
    )
    skilleval: str | None = field(
        metadata=meta(
            "The skilleval version that wrote the run; null when rebuilt from results.jsonl."
        )
    )
    run_id: str = field(
        metadata=meta("The run directory's name: <UTC stamp>-<suite stem>-<random>.")
    )
    status: RunStatus = field(
        metadata=meta(
            "complete: every planned result is here. interrupted: stopped by Ctrl-C, results.json "
            "written with what finished. incomplete: results.json was missing and this document "
            "was rebuilt from a truncated results.jsonl."
        )
    )
    notes: tuple[str, ...] = field(
        metadata=meta(
            "Why the document is not the run's own results.json (added by readers, never by "
            "the runner).",
            omit=OMIT_EMPTY,
        )
    )
    suite: SuiteInfo
    environment: Environment | None = field(
        metadata=meta("Null only in a document rebuilt from results.jsonl.")
    )
    skill: SkillInfo | None = field(
        metadata=meta("The skill under evaluation; null for a plain prompt suite.")
    )
    judge: JudgeInfo | None = field(
        metadata=meta("The model that graded model-tier assertions; null when none ran.")
    )
    arms: tuple[str, ...] = field(
        metadata=meta(
            "The conditions every test ran under: [default], or some of off (no skill), on "
            "(skill loaded) and routed (skill among distractors).",
            minItems=1,
            uniqueItems=True,
        )
    )
    primary_arm: str = field(metadata=meta("The arm whose pass rate the gate uses.", ref=ARM))
    records: tuple[Record, ...] = field(
        metadata=meta("One item per test × arm × trial, in plan order.")
    )
    summary: Summary
    lift: Lift | None = field(
        metadata=meta("Does the skill help? Paired ON/OFF comparison; null without both arms.")
    )
    trigger: Trigger | None = field(
        metadata=meta(
            "Did the skill fire when it should, and only then? Null without trigger tests."
        )
    )
    reliability: Mapping[str, Reliability] | None = field(
        metadata=meta("pass@k and pass^k per arm; null when each test ran once.", keys=ARM)
    )
    overfit: Overfit | None = field(
        metadata=meta(
            "The overfitting check of the suite against the skill; null when it did not run."
        )
    )
    calls: Calls | None
    gate: Gate | None = field(
        metadata=meta(
            "The verdict and its exit code; null only in a document rebuilt from results.jsonl."
        )
    )
    timing: Timing

    @property
    def primary(self) -> ArmSummary | None:
        """The primary arm's summary."""
        return self.summary.arms.get(self.primary_arm)
