"""A suite after loading: validated, resolved, and immutable.

The defaults declared here are the suite format's defaults: the loader leaves a key the
suite does not write to them, and the schema generator shows them
(:mod:`skilleval.suite.defaults`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from skilleval.api import AssertionType
from skilleval.errors import Location
from skilleval.expr import Expr
from skilleval.suite.defaults import defaults
from skilleval.suite.gate import GateConfig
from skilleval.suite.model_config import Decoding, ModelSpec
from skilleval.suite.skills import Skill
from skilleval.util.frozen import frozen

if TYPE_CHECKING:
    # The agent config holds assertion entries of this module: a cycle only for the checker.
    from skilleval.suite.agent_config import AgentConfig

SuiteType = Literal["regression", "capability"]


PARSED_REPLY = "__parsed_reply"
"""The option skilleval sets on a JavaScript check of a :attr:`Prompt.parsed_reply` prompt:
the check sees the reply parsed from JSON (text that does not parse stays text)."""


@frozen
class Transform:
    """A rewrite of the output before assertions see it."""

    kind: Literal["expr", "jmespath", "javascript"]
    source: str
    """The code; for a JavaScript file, ``file://`` and its absolute path (``:fn`` kept)."""
    where: Location


@frozen
class AssertionEntry:
    """One assertion of one test, with its type resolved."""

    type: str
    """As written, ``not-`` included."""
    spec: AssertionType
    negated: bool
    value: Any
    where: Location
    base_dir: Path
    threshold: float | None = None
    weight: float = 1.0
    metric: str | None = None
    transform: Transform | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    """reference, require, rubricPrompt … (type-specific keys)."""
    from_default: bool = False
    """True when the assertion came from ``defaultTest``."""
    context_transform: Transform | None = None
    """``contextTransform``: where a ``context-*`` type finds its context in the output."""
    children: tuple[AssertionEntry, ...] = ()
    """The assertions of an ``assert-set``, in order; empty for every other type."""
    value_where: Location | None = None
    """Where ``value:`` is written, when it is."""

    @property
    def tier(self) -> Literal["deterministic", "model"]:
        """The type's tier; a set is in the model tier when any of its assertions is."""
        if self.children:
            return "model" if any(c.tier == "model" for c in self.children) else "deterministic"
        return self.spec.tier

    def describe(self) -> str:
        """A short label: the type and a glimpse of the value."""
        if self.value is None:
            return self.type
        text = self.value if isinstance(self.value, str) else repr(self.value)
        text = " ".join(str(text).split())
        return f"{self.type} {text[:40]}{'…' if len(text) > 40 else ''}"


@frozen
class PromptFunction:
    """A prompt written as code (``file://prompt.py:fn``, ``file://prompt.js``): called with
    each test's vars when the suite loads (:mod:`skilleval.suite.code_hooks`)."""

    kind: str
    """``python`` or ``javascript``."""
    path: Path
    name: str | None
    """The function (None: a JavaScript file's own export)."""
    source: str
    """A JavaScript file's source ('' for Python, imported when called)."""
    shown: str
    """The reference as written, without ``file://``, for messages and the label."""


@frozen
class Prompt:
    """A prompt template: plain text, or a list of chat messages."""

    label: str
    text: str | None = None
    messages: tuple[tuple[str, str], ...] = ()
    """(role, template) pairs when the prompt is a chat."""
    where: Location = field(default_factory=lambda: Location("<prompt>"))
    json_schema: Mapping[str, Any] | None = None
    """The JSON Schema a reply is held to (promptfoo's ``config.response_format``)."""
    parsed_reply: bool = False
    """A promptfoo config's ``response_format: {type: json_schema}``: promptfoo hands the
    reply to JavaScript checks parsed (``output.field``), so skilleval does too."""
    function: PromptFunction | None = None
    """Set on a prompt function until a test calls it; the test's prompt is what it returns."""


@frozen
class TestCase:
    """One test of the suite (one per prompt when ``prompts:`` lists several)."""

    id: str
    description: str
    prompt: Prompt
    vars: Mapping[str, Any]
    asserts: tuple[AssertionEntry, ...]
    where: Location
    base_dir: Path
    should_trigger: bool | None = None
    should_trigger_at: Location | None = None
    threshold: float | None = None
    transform: Transform | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    agent: AgentConfig | None = None
    """Set when the test runs the agent loop (it has tools, an environment or turns)."""
    split: Literal["train", "selection", "confirm"] | None = None
    """The set `skilleval improve` must put the test in (`split:`); None lets it choose."""

    @property
    def every_assert(self) -> tuple[AssertionEntry, ...]:
        """The test's assertions and those of its turns."""
        if self.agent is None:
            return self.asserts
        return self.asserts + tuple(a for t in self.agent.turns for a in t.asserts)


@frozen
class DerivedMetric:
    """One of promptfoo's ``derivedMetrics``: a formula over the named metrics' totals."""

    name: str
    source: str
    """As written."""
    kind: Literal["expr", "javascript"]
    """The formula's language: expr, or JavaScript when expr cannot read it."""
    formula: Expr | None
    """The compiled expr formula; None for JavaScript, which runs in the sandbox."""
    where: Location


@frozen
class LiftConfig:
    """How the ON-vs-OFF lift is judged (``lift:`` in the suite)."""

    alpha: float = 0.05
    min_lift: float = 0.0
    sidedness: Literal["two-sided", "one-sided"] = "two-sided"


@frozen
class TriggerConfig:
    """How triggering is measured (``trigger:`` in the suite)."""

    calibrate: bool = False
    """Also report contextual calibration: every margin minus a content-free request's."""
    runs: int = 1
    """Routing runs per test. Above 1 (distribution mode only) each run is sampled with its
    own seed, and the test triggers when at least ``rate`` of them pick the skill:
    skill-creator's rule is ``runs: 3, rate: 0.5``. 1 is one greedy call."""
    rate: float = 0.5
    """The share of sampled runs that must pick the skill for the test to trigger."""

    def rule(self) -> str:
        """The rule that decides a test's trigger, as the results name it."""
        if self.runs == 1:
            return "greedy"
        return f"sampled {self.runs} runs, rate >= {self.rate:g}"


@frozen
class Suite:
    """A loaded suite, ready to plan and run."""

    path: Path
    display: str
    tests: tuple[TestCase, ...]
    model: ModelSpec
    decoding: Decoding
    description: str = ""
    type: SuiteType = "regression"
    trials: int = 1
    threshold: float = 1.0
    plugin_dirs: tuple[Path, ...] = ()
    judge: ModelSpec | None = None
    files: frozenset[Path] = frozenset()
    """Every file the suite read: itself, test files, fixtures, plugins (for watch)."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    registry_listing: tuple[Mapping[str, Any], ...] = ()
    skill: Skill | None = None
    distractors: tuple[Skill, ...] = ()
    arms: tuple[str, ...] = ("default",)
    lift: LiftConfig = field(default_factory=lambda: LiftConfig())
    trigger: TriggerConfig = field(default_factory=lambda: TriggerConfig())
    gate: GateConfig = field(default_factory=GateConfig)
    models: tuple[ModelSpec, ...] = ()
    """The models of a side-by-side run (``models:``, or promptfoo's ``providers:``), in
    column order; empty for a one-model suite. ``model`` is the first of them."""
    column_prompts: tuple[tuple[str, ...], ...] = ()
    """Per model of ``models``, the labels of the prompts it runs (promptfoo's per-provider
    ``prompts:``); an empty entry, or none at all, runs every prompt."""
    notes: tuple[str, ...] = ()
    """Warnings (``file:line:col: warning: …``): what loading read differently from how it
    was written (a promptfoo provider setting skilleval does not use …), shown with the run
    and kept in its results, never silently dropped."""
    outputs: tuple[Path, ...] = ()
    """promptfoo's ``outputPath``: written after a run when ``-o`` names none."""
    jobs: int | None = None
    """``evaluateOptions.maxConcurrency``: parallel requests when ``--jobs`` is not given."""
    delay_ms: int = 0
    """``evaluateOptions.delay``: a pause after each model call (cached replies excepted)."""
    use_cache: bool = True
    """``evaluateOptions.cache``: false calls the model even when a cached reply exists."""
    derived_metrics: tuple[DerivedMetric, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Environment variables set for the run; never written to results or reports."""

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    def columns(self) -> tuple[Suite, ...]:
        """One one-model suite per model of a side-by-side run (just this suite otherwise)."""
        if len(self.models) < 2:
            return (self,)
        out: list[Suite] = []
        for i, model in enumerate(self.models):
            labels = self.column_prompts[i] if i < len(self.column_prompts) else ()
            tests = tuple(
                with_provider_tools(t, model.tools)
                for t in self.tests
                if not labels or t.prompt.label in labels
            )
            out.append(replace(self, model=model, models=(), column_prompts=(), tests=tests))
        return tuple(out)


TOOL_CHECKS = frozenset(
    {"is-valid-openai-tools-call", "is-valid-openai-function-call", "is-valid-function-call"}
)
"""The checks that read the tools and functions a promptfoo provider declares."""


def with_provider_tools(test: TestCase, tools: Mapping[str, Any]) -> TestCase:
    """``test`` with the ``tools`` and ``functions`` its model's provider declares (promptfoo's
    ``config: {tools, functions}``) handed to each tool-call check, in a set too, over any the
    check's own ``config`` names: promptfoo reads them from the provider."""
    if not tools:
        return test

    def given(entry: AssertionEntry) -> AssertionEntry:
        children = tuple(given(c) for c in entry.children)
        config = {**entry.config, **tools} if entry.spec.name in TOOL_CHECKS else entry.config
        return replace(entry, children=children, config=config)

    return replace(test, asserts=tuple(given(a) for a in test.asserts))


SUITE_DEFAULTS = defaults(Suite)
"""``trials``, ``threshold``, ``type`` …: what a suite that leaves them out gets."""
