"""skilleval: declarative test suites for agent skills and prompts, run on a local model.

What plugin authors need is exported here: the markers for each extension point
(:func:`assertion`, :func:`provider`, :func:`reporter`, :func:`tool_kind`), what an
assertion receives and returns (:class:`Check`, :class:`Verdict`), and what a provider's
``configure`` may use (:class:`ConfigContext`).
"""

from __future__ import annotations

from skilleval.assertions.api import AssertionType, Check, Stats, Verdict, assertion
from skilleval.errors import Diagnostic, Location, SkillevalError
from skilleval.plugins.markers import ConfigContext, provider, reporter, tool_kind

__version__ = "0.1.0"

__all__ = [
    "AssertionType",
    "Check",
    "ConfigContext",
    "Diagnostic",
    "Location",
    "SkillevalError",
    "Stats",
    "Verdict",
    "__version__",
    "assertion",
    "provider",
    "reporter",
    "tool_kind",
]
