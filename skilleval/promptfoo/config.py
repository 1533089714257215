"""What makes a file a promptfoo config, and the keys of one that skilleval reads otherwise.

A promptfoo config has no ``version:`` and at least one key only promptfoo has; a skilleval
suite with ``compat: promptfoo`` (what ``skilleval import promptfoo`` writes) is read with
promptfoo's meaning too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PROVIDER_LISTS = ("providers", "targets")
"""promptfoo's keys for the models of a config."""

MARKERS = (*PROVIDER_LISTS, "evaluateOptions", "redteam", "scenarios", "outputPath", "env")
"""Top-level keys that only a promptfoo config has."""

#: Keys promptfoo accepts that skilleval deliberately does not, with what to do instead.
UNSUPPORTED_KEYS: Mapping[str, str] = {
    "provider": "a test's `provider` replaces the model under test, which skilleval sets once"
    " per suite with `model:` (or `models:`); a grader goes in `options.provider` or `judge:`",
    "redteam": "red-teaming is out of scope for skilleval",
    "timeoutMs": "per-call time limits are the provider's: `timeout` on an openai `model:`",
    "maxEvalTimeMs": "a run has no overall time limit; stop it with Ctrl-C and `--resume` it",
    "commandLineOptions": "pass options on the command line instead",
    "extensions": "extension hooks are not supported; write an assertion plugin instead",
    "sharing": "skilleval never uploads results",
    "writeLatestResults": "every run is written under .skilleval/runs/",
    "tracing": "tracing is not supported",
    "assertScoringFunction": "custom scoring functions are not supported; use weights and `threshold:`",
    "providerOutput": "fixed outputs are not supported; use the scripted provider (`model: {provider: scripted}`)",
    "contextTransform": "context transforms are not supported",
    "transformVars": "variable transforms are not supported",
}


def is_promptfoo(data: Any) -> bool:
    """A config written for promptfoo: no ``version:``, and a key only promptfoo has."""
    return isinstance(data, Mapping) and "version" not in data and any(k in data for k in MARKERS)


def reads_as_promptfoo(data: Any) -> bool:
    """Whether the suite's values, vars and templates are read as promptfoo reads them: a
    promptfoo config, or a suite with ``compat: promptfoo`` (what ``import`` writes)."""
    return is_promptfoo(data) or (isinstance(data, Mapping) and data.get("compat") == "promptfoo")
