"""The contract between skilleval and its plugins: what an assertion type gets and gives, and
what every registration declares.

An assertion type is a plain function marked with :func:`assertion`. It receives one
:class:`Check` and returns a :class:`Verdict` (or a bool, a number, or a mapping with
``pass``/``score``/``reason``, which are normalised the same way). Negation (``not-<type>``)
is applied by the runner; handlers never see it.

The marker only attaches an :class:`AssertionType` to the function. Nothing is registered at
import time: a :class:`~skilleval.plugins.registry.Registry` scans modules for the mark.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeVar, runtime_checkable

from skilleval.trajectory import Step
from skilleval.util.frozen import frozen

if TYPE_CHECKING:
    from skilleval.errors import Location

Tier = Literal["deterministic", "model"]
MARK = "__skilleval_plugin__"
"""The attribute every marker sets on its function (a :class:`Registration`); the plugin
manager scans modules for it."""
NEGATION_PREFIX = "not-"


@frozen
class Stats:
    """What is known about the call that produced the output."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cached: bool = False
    finish_reason: str = "stop"

    def to_env(self) -> dict[str, Any]:
        """The ``stats`` mapping that expressions see."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_ms": self.latency_ms,
            "cached": self.cached,
        }


class Judge(Protocol):
    """A grader model, handed to model-tier assertions (see ``skilleval.judge``)."""

    def complete_json(
        self, messages: list[dict[str, str]], schema: Mapping[str, Any], max_tokens: int
    ) -> Any: ...


@runtime_checkable
class TextEmbedder(Protocol):
    """A judge that can also embed texts (``similar``, ``answer-relevance``).

    Optional: a judge without ``embed`` makes those types an ``error``.
    """

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@frozen
class Check:
    """Everything an assertion may look at. Fields are only ever added, never removed."""

    output: str
    """The model's final text, after any ``transform``."""
    value: Any = None
    """The assertion's ``value:``, rendered with the test's vars and validated."""
    vars: Mapping[str, Any] = field(default_factory=dict)
    """The test's variables."""
    prompt: str = ""
    """The rendered user prompt."""
    messages: tuple[Mapping[str, str], ...] = ()
    """The full conversation sent to the model, system prompt included."""
    threshold: float | None = None
    """The assertion's ``threshold:``, when given."""
    config: Mapping[str, Any] = field(default_factory=dict)
    """The assertion's ``config:`` mapping, free-form, for plugins."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Any other keys the assertion's type declared (``reference``, ``require`` …)."""
    stats: Stats = field(default_factory=Stats)
    """Token counts and timing of the call that produced the output."""
    raw_output: str = ""
    """The model's text before any transform."""
    transformed: Any = None
    """The transform's result when it was not a string (e.g. a parsed object)."""
    test_id: str = ""
    arm: str = ""
    trial: int = 0
    where: Location | None = None
    """Where the assertion is written, for messages."""
    base_dir: str = "."
    """The directory of the file the assertion came from, for relative paths."""
    judge: Judge | None = None
    """The grader model, for model-tier assertions; None for deterministic ones."""
    cost: float | None = None
    """What producing the output cost, in US dollars: 0 for a local model, None when the
    provider does not report it."""
    trajectory: tuple[Step, ...] | None = None
    """The agent's steps, for a test that runs the agent loop (on a turn's assertions, that
    turn's steps); None for a plain test."""
    workspace: Path | None = None
    """The run's workspace folder, for a test that runs the agent loop; None otherwise."""
    context: Any = None
    """What the assertion's ``contextTransform`` made of the output (a text or a list of
    texts) for the ``context-*`` types; None when it has none."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Deprecated: a free-form mapping kept for third-party code that builds its own checks.
    skilleval puts nothing here; read :attr:`cost`, :attr:`trajectory` and :attr:`workspace`."""
    value_where: Location | None = None
    """Where the assertion's ``value:`` is written (code in it reports lines from there)."""
    negated: bool = False
    """True when the assertion is written with ``not-``. The runner flips the verdict
    itself; a type reads this only where its negation means more than the flip (promptfoo's
    ``not-trajectory:tool-used: [a, b]`` is "none of them", not "not all of them")."""
    skills: tuple[str, ...] | None = None
    """The router's decision for this test: the skill it chose (one name, a distractor's
    included), or ``()`` when it chose none; None when the test was not routed."""
    logprobs: tuple[float, ...] | None = None
    """Each generated token's natural-log probability, for ``perplexity``: recorded by the
    in-process model when a test has such a check; None when the provider gives none."""
    results: tuple[tuple[str, float | None], ...] | None = None
    """For ``max-score``: the type and score of each of this output's other assertions
    (those that compare outputs left out), ``not-`` applied; an error's score is None.
    None for every other type."""


@frozen
class Verdict:
    """The outcome of one assertion on one output.

    ``error`` set means the assertion could not be evaluated: it is neither a pass nor a
    fail, and it is reported apart from both (:meth:`errored` builds one). ``passed`` must be
    a bool and ``score`` a finite number from 0 to 1; a check that returns anything else gets
    an ``error`` verdict saying so.
    """

    passed: bool
    reason: str = ""
    score: float | None = None
    """0..1; defaults to 1.0 for a pass and 0.0 for a fail."""
    error: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    """Structured extras for reports (judge replies, per-item results …)."""

    @property
    def effective_score(self) -> float:
        if self.score is not None:
            return self.score
        return 1.0 if self.passed else 0.0

    @classmethod
    def of(cls, passed: bool, reason: str, **kw: Any) -> Verdict:
        """A verdict whose reason describes what was found, whichever way it went."""
        return cls(passed=passed, reason=reason, **kw)

    @property
    def status(self) -> Literal["pass", "fail", "error"]:
        """``error`` when the assertion could not be evaluated, else ``pass`` or ``fail``."""
        if self.error is not None:
            return "error"
        return "pass" if self.passed else "fail"

    @classmethod
    def errored(cls, message: str, **kw: Any) -> Verdict:
        """The assertion could not be evaluated (the ``error`` status): neither a pass nor a fail.

        Raising :class:`~skilleval.errors.CannotEvaluate` from a check means the same.
        """
        return cls(passed=False, reason=message, error=message, **kw)


@frozen(kw_only=True)
class Capabilities:
    """What a provider says about its calls, so that skilleval never has to know it by name.

    A provider declares them with ``@provider(..., capabilities=Capabilities(...))``; each is
    False unless declared.
    """

    timed: bool = False
    """Its calls' durations are a model at work: the run reports tokens per second and busy
    time (not for echo or scripted replies, which take no time worth reporting)."""
    costed: bool = False
    """A call may cost money the provider does not report (a remote server): the ``cost``
    assertion sees it as unknown. Otherwise a call costs 0."""
    keep_loaded: bool = False
    """Loading it is slow (weights in this process): ``watch`` keeps it loaded from one run to
    the next while its settings stay the same, rather than build it for every run."""
    measured: bool = False
    """Its replies and routing choices come from a model, not from text written in advance:
    a kept ``router-check`` verdict for its identity applies to a run's trigger block."""
    scores: bool = False
    """It returns log-probabilities: a score for each option of a constrained choice, which the
    trigger AUROC and ``trigger: {calibrate: true}`` rank by, and, when a request asks, each
    generated token's (as ``logprobs``). Without it the run sends no content-free calibration
    requests."""
    logprobs: bool = False
    """When a request asks (:attr:`~skilleval.engine.base.Request.logprobs`), it returns each
    generated token's log-probability, which the ``perplexity`` checks read, though it may
    score no choices (an OpenAI-compatible server). ``scores`` implies it; without either the
    run asks for no token log-probabilities."""
    data_replies: bool = False
    """Its reply may be data rather than text (a Python function's return value, an endpoint's
    JSON): the JavaScript checks of a promptfoo config see it parsed, as promptfoo hands it."""

    @property
    def token_logprobs(self) -> bool:
        """Whether it returns token log-probabilities: declared, or implied by ``scores``."""
        return self.scores or self.logprobs

    def names(self) -> tuple[str, ...]:
        """The capabilities declared, by name, as listings show them."""
        return tuple(name for name in _CAPABILITIES if getattr(self, name))


_CAPABILITIES = (
    "timed",
    "costed",
    "keep_loaded",
    "measured",
    "scores",
    "logprobs",
    "data_replies",
)


AssertionFn = Callable[[Check], Any]
_Marked = TypeVar("_Marked", bound=Callable[..., Any])
ValueCheck = Callable[[Any], "str | None"]


Kind = Literal["assertion", "provider", "reporter", "tool_kind", "lint_check"]

#: Each kind of extension as messages and listings name it.
KIND_LABELS: Mapping[Kind, str] = {
    "assertion": "assertion type",
    "provider": "provider",
    "reporter": "output format",
    "tool_kind": "tool kind",
    "lint_check": "lint check",
}


@frozen(kw_only=True)
class Registration:
    """What every extension declares, whatever its kind: a name, a function, a JSON Schema
    for its configuration, and where it came from.

    A marker (:func:`assertion`, :func:`~skilleval.plugins.markers.provider`,
    :func:`~skilleval.plugins.markers.reporter`, :func:`~skilleval.plugins.markers.tool_kind`)
    attaches one to its function under :data:`MARK`; a plugin manager scans for it. Each kind
    is a subclass adding what only it declares.
    """

    name: str
    factory: Callable[..., Any]
    """The function: an assertion's check, a provider's or tool kind's constructor, an output
    format's writer."""
    schema: Mapping[str, Any] | None = None
    """JSON Schema (draft 2020-12) of its configuration (an assertion's ``value:``); None:
    it takes none."""
    summary: str = ""
    origin: str = "builtin"
    """``builtin``, ``entry point 'NAME' (DIST VERSION)`` or a plugin file's path."""
    external: bool = False
    """Its code comes from outside skilleval (an installed plugin or a plugin folder), as the
    plugin manager that loaded it knows: its checks run under the user-code guards and
    listings give the ``file:line`` it is defined at."""

    kind: ClassVar[Kind]
    """Which extension point; set by each subclass."""

    @property
    def defined_at(self) -> str:
        code = getattr(self.factory, "__code__", None)
        if code is None:
            return "<unknown>"
        return f"{code.co_filename}:{code.co_firstlineno}"

    def problem(self) -> str | None:
        """Why this registration cannot work, or None; checked when it is registered."""
        label = KIND_LABELS[self.kind]
        if not self.name or not all(c.isalnum() or c in "-_" for c in self.name):
            return f"{label} name '{self.name}' may only use letters, digits, '-' and '_'"
        return self.schema_problem("config")

    def schema_problem(self, what: str) -> str | None:
        """Why :attr:`schema` is not a valid JSON Schema, or None."""
        if self.schema is None:
            return None
        problem = _schema_problem(json.dumps(self.schema, sort_keys=True, default=str))
        if problem is None:
            return None
        return f"{KIND_LABELS[self.kind]} '{self.name}' has an invalid {what} schema: {problem}"


@frozen(kw_only=True)
class AssertionType(Registration):
    """The declaration attached to an assertion function by :func:`assertion`.

    Its :attr:`factory` is the check; :attr:`schema` is the JSON Schema of ``value:`` (None:
    the type takes no value).
    """

    tier: Tier = "deterministic"
    value_required: bool = True
    check_value: ValueCheck | None = None
    """Semantic checks beyond the schema (a regex compiles …); returns a message or None."""
    options_schema: Mapping[str, Any] = field(default_factory=dict)
    """Extra keys the type accepts beside the common ones, as JSON Schema properties."""
    uses_threshold: bool = False
    """True when ``threshold:`` can stand in for ``value:`` (promptfoo's latency, levenshtein)."""
    compares: bool | Literal["arms"] = False
    """True for a type that grades the outputs of one test under every prompt together
    (``select-best``): its function takes the list of their checks and returns one verdict
    per check, in order. ``"arms"``: the same, over the outputs of one test and trial in each
    arm (``side-by-side``), ordered by arm name."""

    kind: ClassVar[Kind] = "assertion"

    @property
    def fn(self) -> AssertionFn:
        """The check, under the name assertion code has always used."""
        return self.factory

    @property
    def value_schema(self) -> Mapping[str, Any] | None:
        """JSON Schema for ``value:``; None means the type takes no value."""
        return self.schema

    def problem(self) -> str | None:
        """Why this type cannot work, or None; checked when it is registered."""
        if self.name.startswith(NEGATION_PREFIX):
            return f"assertion type '{self.name}' must not start with '{NEGATION_PREFIX}'; negation is automatic"
        if not self.name or not all(c.isalnum() or c in "-_:" for c in self.name):
            return (
                f"assertion type name '{self.name}' may only use letters, digits, '-', '_' and ':'"
            )
        if self.tier not in ("deterministic", "model"):
            return f"assertion type '{self.name}' has an unknown tier '{self.tier}'"
        try:
            params = inspect.signature(self.factory).parameters
        except (TypeError, ValueError):
            return None
        if len(params) != 1:
            return f"assertion type '{self.name}' must take exactly one argument (a Check), not {len(params)}"
        return self.schema_problem("value")


@functools.lru_cache(maxsize=512)
def _schema_problem(schema_json: str) -> str | None:
    """Why a JSON Schema is invalid, or None. Cached: every load registers the built-ins."""
    from jsonschema import Draft202012Validator  # lazy: start-up time
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(json.loads(schema_json))
    except SchemaError as exc:
        return str(exc.message)
    return None


def assertion(
    name: str,
    *,
    value: Mapping[str, Any] | None = None,
    tier: Tier = "deterministic",
    value_required: bool | None = None,
    check_value: ValueCheck | None = None,
    options: Mapping[str, Any] | None = None,
    uses_threshold: bool = False,
    compares: bool | Literal["arms"] = False,
) -> Callable[[_Marked], _Marked]:
    """Mark ``fn`` as the assertion type ``name``.

    Args:
        name: The type name used in suites (kebab-case, without ``not-``).
        value: JSON Schema that ``value:`` must satisfy; omit for types without a value.
        tier: ``deterministic`` (no model) or ``model`` (needs the judge).
        value_required: Whether ``value:`` must be given; defaults to ``value is not None``.
        check_value: Extra validation run at load time; return an error message or None.
        options: Extra assertion keys this type accepts, as JSON Schema properties.
        uses_threshold: Accept ``threshold:`` in place of ``value:``.
        compares: The function grades the outputs of one test under every prompt at once: it
            takes a list of checks and returns a list of verdicts (see
            :attr:`AssertionType.compares`); ``"arms"``: the outputs of one test in every
            arm instead.
    """

    def mark(fn: _Marked) -> _Marked:
        doc = inspect.getdoc(fn) or ""
        spec = AssertionType(
            name=name,
            factory=fn,
            schema=value,
            tier=tier,
            value_required=(value is not None) if value_required is None else value_required,
            check_value=check_value,
            options_schema=dict(options or {}),
            summary=doc.strip().splitlines()[0] if doc.strip() else "",
            uses_threshold=uses_threshold,
            compares=compares,
        )
        setattr(fn, MARK, spec)
        return fn

    return mark
