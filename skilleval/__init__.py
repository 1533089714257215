"""skilleval: declarative test suites for agent skills and prompts, run on a local model.

What plugin authors need is exported here, and nothing else; these names are the stable
API (``docs/assertions.md``, "Writing a plugin"):

* the markers for each extension point: :func:`assertion`, :func:`provider`,
  :func:`reporter`, :func:`tool_kind`, :func:`lint_check`;
* what a lint check declares and gets: :class:`LintCheck`, the :class:`LintView` of a suite,
  and the :class:`Finding` s it yields;
* what an assertion receives and returns: :class:`Check` (with :class:`Stats`),
  :class:`Verdict`, and the :class:`Judge` a model-tier assertion grades with;
* how a check says it cannot grade an output: ``raise CannotEvaluate("why")`` or
  ``return Verdict.errored("why")``, both an ``error`` verdict, neither pass nor fail;
* what a provider declares about its calls (:class:`Capabilities`), and what its
  ``configure`` may use (:class:`ConfigContext`) and raise
  (:class:`ProviderError`, :class:`TruncatedError`, :class:`InvalidReplyError`);
* what an output format receives: the typed :class:`Run`, its :class:`Record` s (with
  :class:`AssertionResult`, :class:`CallStats` and the agent's :class:`AgentBlock`) and the
  blocks a renderer reads (:class:`Summary`, :class:`ArmSummary`, :class:`Tally`,
  :class:`Lift`, :class:`Trigger`, :class:`Gate`, :class:`Environment` …), and for a run on
  several models the :class:`Matrix` of :class:`Column` s;
* the error a :class:`Judge` call raises when the judge gives no usable reply
  (:class:`JudgeError`), and the base of every error a user can fix
  (:class:`SkillevalError`), with :class:`Diagnostic` and :class:`Location` for positions.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from skilleval.version import __version__

if TYPE_CHECKING:
    from skilleval.api import AssertionType, Capabilities, Check, Judge, Stats, Verdict, assertion
    from skilleval.errors import (
        CannotEvaluate,
        Diagnostic,
        InvalidReplyError,
        JudgeError,
        Location,
        ProviderError,
        SkillevalError,
        TruncatedError,
    )
    from skilleval.lint.finding import Finding
    from skilleval.lint.view import LintView
    from skilleval.plugins.markers import (
        ConfigContext,
        LintCheck,
        lint_check,
        provider,
        reporter,
        tool_kind,
    )
    from skilleval.results.agent import AgentBlock
    from skilleval.results.matrix import Column, Matrix
    from skilleval.results.model import (
        ArmSummary,
        Calls,
        Confusion,
        Environment,
        Gate,
        GateCheck,
        JudgeInfo,
        Lift,
        ModelInfo,
        Reliability,
        Run,
        SkillInfo,
        SuiteInfo,
        Summary,
        Tally,
        TestRow,
        Timing,
        Trigger,
    )
    from skilleval.results.records import AssertionResult, CallStats, Record, TriggerOutcome

RESULTS: tuple[str, ...] = (
    "ArmSummary",
    "Calls",
    "Confusion",
    "Environment",
    "Gate",
    "GateCheck",
    "JudgeInfo",
    "Lift",
    "ModelInfo",
    "Reliability",
    "Run",
    "SkillInfo",
    "SuiteInfo",
    "Summary",
    "Tally",
    "TestRow",
    "Timing",
    "Trigger",
)
"""The results blocks a renderer reads, exported from :mod:`skilleval.results.model`."""

_HOMES = {
    **dict.fromkeys(
        (
            "AssertionType",
            "Capabilities",
            "Check",
            "Judge",
            "Stats",
            "Verdict",
            "assertion",
        ),
        "api",
    ),
    **dict.fromkeys(
        (
            "CannotEvaluate",
            "Diagnostic",
            "InvalidReplyError",
            "JudgeError",
            "Location",
            "ProviderError",
            "SkillevalError",
            "TruncatedError",
        ),
        "errors",
    ),
    **dict.fromkeys(
        ("ConfigContext", "LintCheck", "lint_check", "provider", "reporter", "tool_kind"),
        "plugins.markers",
    ),
    "Finding": "lint.finding",
    "LintView": "lint.view",
    **dict.fromkeys(RESULTS, "results.model"),
    **dict.fromkeys(
        ("AssertionResult", "CallStats", "Record", "TriggerOutcome"), "results.records"
    ),
    **dict.fromkeys(("Column", "Matrix"), "results.matrix"),
    "AgentBlock": "results.agent",
}
"""Where each exported name is defined. They are imported on first use, so that commands
that need none of them (``skilleval --version``) do not pay for the plugin machinery."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'skilleval' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"skilleval.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "AgentBlock",
    "ArmSummary",
    "AssertionResult",
    "AssertionType",
    "CallStats",
    "Calls",
    "CannotEvaluate",
    "Capabilities",
    "Check",
    "Column",
    "ConfigContext",
    "Confusion",
    "Diagnostic",
    "Environment",
    "Finding",
    "Gate",
    "GateCheck",
    "InvalidReplyError",
    "Judge",
    "JudgeError",
    "JudgeInfo",
    "Lift",
    "LintCheck",
    "LintView",
    "Location",
    "Matrix",
    "ModelInfo",
    "ProviderError",
    "Record",
    "Reliability",
    "Run",
    "SkillInfo",
    "SkillevalError",
    "Stats",
    "SuiteInfo",
    "Summary",
    "Tally",
    "TestRow",
    "Timing",
    "Trigger",
    "TriggerOutcome",
    "TruncatedError",
    "Verdict",
    "__version__",
    "assertion",
    "lint_check",
    "provider",
    "reporter",
    "tool_kind",
]
