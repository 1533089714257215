"""Checks for the skill's own words leaking into the eval.

A prompt that names the skill or quotes SKILL.md tells the model what to do, so the ON arm
is graded on recognising its instructions and the OFF arm on guessing them. A rubric or an
expected string that quotes SKILL.md rewards repeating the skill, not getting the task right.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from skilleval.lint.checks import ASSERTION_COPIES_SKILL, PROMPT_ECHOES_SKILL, PROMPT_NAMES_SKILL
from skilleval.lint.finding import Finding
from skilleval.lint.ngrams import Phrase, Source, content_count, words
from skilleval.lint.view import LintAssert, LintView
from skilleval.plugins.markers import lint_check

MIN_PHRASE = 4
"""Shared runs shorter than this many words are common English, not copying."""

MIN_CONTENT = 3
"""A copied phrase must carry this many content words: "a commit message for a" does not."""

MIN_VALUE_WORDS = 3
"""An expected string quoted whole from SKILL.md counts from this many words."""

LITERAL_TYPES = frozenset(
    {
        "contains",
        "icontains",
        "contains-all",
        "icontains-all",
        "contains-any",
        "icontains-any",
        "starts-with",
        "ends-with",
        "equals",
    }
)
"""Deterministic types whose values are text the output must contain."""


@lint_check(PROMPT_NAMES_SKILL, PROMPT_ECHOES_SKILL, ASSERTION_COPIES_SKILL, name="leakage")
def check(view: LintView) -> Iterator[Finding]:
    """SE201–SE203: prompts that name or quote the skill, items that copy it."""
    skill = view.skill
    if skill is None:
        return
    source = Source(skill.text)
    naming = _name_pattern(skill.name)
    name_words = words(skill.name)
    for test in view.tests:
        if test.is_negative:
            # Near-miss negative controls borrow the skill's vocabulary on purpose.
            continue
        seq = words(test.prompt)
        named = bool(naming and naming.search(test.prompt)) or _says_skill(seq, name_words)
        if named:
            yield Finding(
                PROMPT_NAMES_SKILL,
                test.locate(name_words),
                f"the prompt of test '{test.id}' names the skill '{skill.name}': real users "
                "describe their task, not the skill, and naming it tells the model what to do. "
                "Rewrite it as the request a user would make",
            )
            continue
        phrase = _copied(source, seq)
        if phrase is not None:
            yield Finding(
                PROMPT_ECHOES_SKILL,
                test.locate(phrase.words),
                f"the prompt of test '{test.id}' reuses '{phrase.text}' from "
                f"{skill.display}: the request carries the skill's own words, which steers "
                "both arms and inflates trigger accuracy. Say it the way a user would",
            )
    seen: set[tuple[str, int, int, str]] = set()
    for test in view.tests:
        for entry in test.asserts:
            for text, what in _texts(entry):
                key = (entry.where.path, entry.where.line, entry.where.col, text)
                if key in seen:
                    continue
                seen.add(key)
                yield from _copies(source, skill.display, entry, text, what)


def _name_pattern(name: str) -> re.Pattern[str] | None:
    """The skill's name as an identifier (``commit-message``), when it looks like one.

    A one-word name such as ``summarize`` is an ordinary verb in a request, so it only counts
    next to the word "skill".
    """
    if not re.search(r"[-_0-9]", name):
        return None
    return re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])", re.IGNORECASE)


def _says_skill(seq: list[str], name_words: list[str]) -> bool:
    n = len(name_words)
    for i in range(len(seq) - n + 1):
        if seq[i : i + n] != name_words:
            continue
        if (i + n < len(seq) and seq[i + n] in ("skill", "skills")) or (
            i > 0 and seq[i - 1] in ("skill", "skills")
        ):
            return True
    return False


def _copied(source: Source, seq: list[str]) -> Phrase | None:
    phrase = source.longest_distinctive(seq, MIN_CONTENT)
    if phrase is None or len(phrase) < MIN_PHRASE:
        return None
    return phrase


def _texts(entry: LintAssert) -> Iterator[tuple[str, str]]:
    if entry.tier == "model":
        what = "llm-assert statement" if entry.base == "llm-assert" else "rubric item"
        for text in entry.criteria:
            yield text, what
        return
    if entry.negated or entry.base not in LITERAL_TYPES:
        return
    values = entry.value if isinstance(entry.value, list) else [entry.value]
    for value in values:
        if isinstance(value, str):
            yield value, f"expected text of `{entry.type}`"


def _copies(
    source: Source, shown: str, entry: LintAssert, text: str, what: str
) -> Iterator[Finding]:
    seq = words(text)
    whole = (
        entry.tier != "model"
        and len(seq) >= MIN_VALUE_WORDS
        and content_count(seq) >= 2
        and source.contains(seq)
    )
    phrase = Phrase(tuple(seq), 0) if whole else _copied(source, seq)
    if phrase is None:
        return
    advice = (
        "Check the outcome the skill should produce, in your own words"
        if entry.tier == "model"
        else "Assert on what any correct answer must contain, not on the skill's wording"
    )
    yield Finding(
        ASSERTION_COPIES_SKILL,
        entry.where,
        f"{what} copies '{phrase.text}' from {shown}: it rewards repeating the skill rather "
        f"than doing the task. {advice}",
    )
