"""Every lint check: its stable id, its name, its severity and a one-line summary.

Ids never change meaning and are never reused, so a suite's ``lint.ignore`` keeps working
across versions. The first digit groups the checks: 0 lint itself, 1 the shape of the test
set, 2 leakage of the skill's own words into the eval, 3 assertions, 4 files and YAML.
``docs/lint.md`` has one entry per id (a test keeps the two in step).
"""

from __future__ import annotations

from typing import Literal

from skilleval.util.frozen import frozen

LintSeverity = Literal["error", "warning"]


@frozen
class LintCheck:
    """One check, as listed in ``docs/lint.md``."""

    id: str
    """``SE`` and three digits, e.g. ``SE101``."""
    name: str
    """A kebab-case name that ``lint.ignore`` accepts in place of the id."""
    severity: LintSeverity
    summary: str
    silenceable: bool = True
    """False for findings that stop the suite from running at all."""


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

CHECKS: tuple[LintCheck, ...] = (
    BAD_IGNORE,
    TOO_FEW_TESTS,
    NO_NEGATIVE_CONTROLS,
    DUPLICATE_PROMPT,
    NEAR_DUPLICATE_PROMPT,
    UNIFORM_PROMPTS,
    EVEN_TRIALS,
    PROMPT_NAMES_SKILL,
    PROMPT_ECHOES_SKILL,
    ASSERTION_COPIES_SKILL,
    CANNOT_FAIL,
    CANNOT_PASS,
    UNSCORED_TEST,
    NOT_CHECKABLE,
    PROMPTFOO_READS_OTHERWISE,
    INVALID_SUITE,
    MISSING_FILE,
    RUBRIC_CUT_BY_COMMENT,
)

_BY_KEY: dict[str, LintCheck] = {c.id: c for c in CHECKS} | {c.name: c for c in CHECKS}


def find_check(key: str) -> LintCheck | None:
    """The check with this id (``SE101``, any case) or name (``too-few-tests``)."""
    return _BY_KEY.get(key.strip().upper()) or _BY_KEY.get(key.strip().lower())
