"""skilleval's own lint checks: each one's stable id, name, severity and one-line summary.

Ids never change meaning and are never reused, so a suite's ``lint.ignore`` keeps working
across versions. The first digit groups the checks: 0 lint itself, 1 the shape of the test
set, 2 leakage of the skill's own words into the eval, 3 assertions, 4 files and YAML.
``docs/lint.md`` has one entry per id (a test keeps the two in step).
"""

from __future__ import annotations

from collections.abc import Iterable

from skilleval.plugins.manager import PluginManager
from skilleval.plugins.markers import LintCheck, LintSeverity

BAD_IGNORE = LintCheck(
    "SE001",
    "bad-ignore",
    "warning",
    "`lint.ignore` names an unknown check or one that cannot be silenced",
)
TOO_FEW_TESTS = LintCheck(
    "SE101", "too-few-tests", "error", "fewer than 5 distinct tests exercise the skill"
)
NO_NEGATIVE_CONTROLS = LintCheck(
    "SE102", "no-negative-controls", "error", "a skill suite without a `should_trigger: false` test"
)
DUPLICATE_PROMPT = LintCheck(
    "SE103", "duplicate-prompt", "error", "two tests send the same prompt after normalising"
)
NEAR_DUPLICATE_PROMPT = LintCheck(
    "SE104", "near-duplicate-prompt", "warning", "two tests send almost the same prompt"
)
UNIFORM_PROMPTS = LintCheck(
    "SE105", "uniform-prompts", "warning", "every positive test is phrased almost the same way"
)
EVEN_TRIALS = LintCheck(
    "SE106",
    "even-trials",
    "warning",
    "`trials` is even, so a test's majority vote can tie",
)
PROMPT_NAMES_SKILL = LintCheck(
    "SE201", "prompt-names-skill", "error", "a test prompt names the skill"
)
PROMPT_ECHOES_SKILL = LintCheck(
    "SE202", "prompt-echoes-skill", "warning", "a test prompt reuses a phrase of SKILL.md"
)
ASSERTION_COPIES_SKILL = LintCheck(
    "SE203",
    "assertion-copies-skill",
    "warning",
    "a rubric item, llm-assert statement or assertion value copies a phrase of SKILL.md",
)
CANNOT_FAIL = LintCheck(
    "SE301",
    "assertion-cannot-fail",
    "error",
    "an assertion (or test threshold) passes whatever the output",
)
CANNOT_PASS = LintCheck(
    "SE302", "assertion-cannot-pass", "error", "an assertion fails on every non-empty output"
)
UNSCORED_TEST = LintCheck(
    "SE303", "unscored-test", "error", "a test has no assertion with weight > 0"
)
NOT_CHECKABLE = LintCheck(
    "SE304",
    "not-checkable-here",
    "warning",
    "a check needs something a local run lacks, and will be an `error` verdict",
)
PROMPTFOO_READS_OTHERWISE = LintCheck(
    "SE305",
    "promptfoo-reads-otherwise",
    "warning",
    "in a promptfoo config, a value promptfoo reads otherwise (a regex JavaScript reads differently)",
)
INVALID_SUITE = LintCheck(
    "SE400",
    "invalid-suite",
    "error",
    "the suite does not load (`skilleval validate` says why)",
    silenceable=False,
)
MISSING_FILE = LintCheck(
    "SE401",
    "missing-file",
    "error",
    "a referenced file, fixture or skill does not exist",
    silenceable=False,
)
RUBRIC_CUT_BY_COMMENT = LintCheck(
    "SE402",
    "rubric-cut-by-comment",
    "error",
    "an unquoted ` #` turned the end of a rubric into a YAML comment",
)

RUNNER_CHECKS: tuple[LintCheck, ...] = (BAD_IGNORE, INVALID_SUITE)
"""What the lint runner reports itself; every other check is registered with
:func:`~skilleval.plugins.markers.lint_check`, skilleval's own in the modules of this
package (listed in :mod:`skilleval.plugins.builtins`)."""


def registered_checks(manager: PluginManager) -> list[LintCheck]:
    """Every lint check: the runner's own, then each registered one's, in registration order."""
    found: dict[str, LintCheck] = {c.id: c for c in RUNNER_CHECKS}
    for registration in manager.lint_checks():
        for check in registration.checks:
            found.setdefault(check.id, check)
    return list(found.values())


def find_check(key: str, checks: Iterable[LintCheck]) -> LintCheck | None:
    """The check with this id (``SE101``, any case) or name (``too-few-tests``)."""
    key = key.strip()
    return next((c for c in checks if c.id == key.upper() or c.name == key.lower()), None)


__all__ = [
    "ASSERTION_COPIES_SKILL",
    "BAD_IGNORE",
    "CANNOT_FAIL",
    "CANNOT_PASS",
    "DUPLICATE_PROMPT",
    "EVEN_TRIALS",
    "INVALID_SUITE",
    "MISSING_FILE",
    "NEAR_DUPLICATE_PROMPT",
    "NOT_CHECKABLE",
    "NO_NEGATIVE_CONTROLS",
    "PROMPTFOO_READS_OTHERWISE",
    "PROMPT_ECHOES_SKILL",
    "PROMPT_NAMES_SKILL",
    "RUBRIC_CUT_BY_COMMENT",
    "RUNNER_CHECKS",
    "TOO_FEW_TESTS",
    "UNIFORM_PROMPTS",
    "UNSCORED_TEST",
    "LintCheck",
    "LintSeverity",
    "find_check",
    "registered_checks",
]
