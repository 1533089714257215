"""skilleval: declarative test suites for agent skills and prompts, run on a local model."""

from __future__ import annotations

from skilleval.assertions.api import AssertionType, Check, Stats, Verdict, assertion
from skilleval.errors import Diagnostic, Location, SkillevalError

__version__ = "0.1.0"

__all__ = [
    "AssertionType",
    "Check",
    "Diagnostic",
    "Location",
    "SkillevalError",
    "Stats",
    "Verdict",
    "__version__",
    "assertion",
]
