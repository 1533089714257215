"""``skilleval lint``: structural checks that catch an eval that cannot tell you anything.

No model is needed. :func:`lint_suite` returns diagnostics whose ``code`` is a stable check
id (``SE101`` …, listed in :mod:`skilleval.lint.checks` and ``docs/lint.md``).
"""

from __future__ import annotations

from skilleval.lint.checks import CHECKS, LintCheck, find_check
from skilleval.lint.core import lint_findings, lint_suite
from skilleval.lint.finding import Finding

__all__ = ["CHECKS", "Finding", "LintCheck", "find_check", "lint_findings", "lint_suite"]
