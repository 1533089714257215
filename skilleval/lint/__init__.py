"""``skilleval lint``: structural checks that catch an eval that cannot tell you anything.

No model is needed. :func:`lint_suite` returns diagnostics whose ``code`` is a stable check
id (``SE101`` …, listed in :mod:`skilleval.lint.checks` and ``docs/lint.md``). Each check is
a registration (:func:`~skilleval.plugins.markers.lint_check`), so a plugin can add one.
"""

from __future__ import annotations

from skilleval.lint.checks import LintCheck, find_check, registered_checks
from skilleval.lint.core import lint_findings, lint_suite
from skilleval.lint.finding import Finding
from skilleval.lint.view import LintView

__all__ = [
    "Finding",
    "LintCheck",
    "LintView",
    "find_check",
    "lint_findings",
    "lint_suite",
    "registered_checks",
]
