"""SE305: in a promptfoo config, values that promptfoo reads otherwise than skilleval."""

from __future__ import annotations

from collections.abc import Iterator

from skilleval.lint.checks import PROMPTFOO_READS_OTHERWISE
from skilleval.lint.finding import Finding
from skilleval.lint.view import LintView
from skilleval.plugins.markers import lint_check
from skilleval.promptfoo.config import is_promptfoo
from skilleval.promptfoo.differences import pattern_differences


@lint_check(PROMPTFOO_READS_OTHERWISE)
def check(view: LintView) -> Iterator[Finding]:
    """SE305: each regex of a promptfoo config that JavaScript reads differently."""
    doc = view.doc
    if doc is None or not is_promptfoo(doc.data):
        return
    for difference in pattern_differences(doc):
        yield Finding(PROMPTFOO_READS_OTHERWISE, difference.where, difference.message)
