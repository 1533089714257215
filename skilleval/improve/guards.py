"""Guards against fitting the suite instead of improving the skill.

* **Copied test text** (every candidate, before it costs a model call): a candidate whose
  SKILL.md carries a distinctive phrase of a test's prompt or of an assertion's text that
  the current skill does not already carry is refused, and the phrase is named. The
  phrases are found as lint finds them (``lint/ngrams.py``: runs of shared word trigrams
  with at least three content words, four words long or more).
* **Lint** (the accepted edit): the leakage checks (``lint/leakage.py``) run on the suite
  with the candidate as its skill; a finding the current skill does not have refuses it.
* **The overfitting judge** (the accepted edit): ``judge/overfit`` classifies the suite's
  items against the candidate; a severity above the current skill's refuses it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from skilleval.api import Judge
from skilleval.errors import ProviderError, SkillevalError
from skilleval.lint import leakage
from skilleval.lint.ngrams import Source, words
from skilleval.lint.view import LintView, from_suite
from skilleval.suite.model import Suite
from skilleval.suite.skills import Skill
from skilleval.suite.yamlio import load_yaml
from skilleval.util.frozen import frozen

MIN_PHRASE = leakage.MIN_PHRASE
MIN_CONTENT = leakage.MIN_CONTENT
SEVERITY_RANK = {"Low": 0, "Moderate": 1, "High": 2}


@frozen
class Copied:
    """A phrase a candidate took from a test."""

    phrase: str
    test_id: str
    where: str
    """``prompt`` or the assertion's type."""

    def message(self) -> str:
        return f"it copies '{self.phrase}' from the {self.where} of test '{self.test_id}'"


def lint_view(suite: Suite) -> LintView:
    """The suite as lint sees it, read once."""
    return from_suite(suite, load_yaml(suite.path), sorted(suite.files))


def _texts(view: LintView) -> Iterator[tuple[str, str, str]]:
    for test in view.tests:
        yield test.id, "prompt", test.prompt
        for entry in test.asserts:
            if entry.tier == "model":
                for text in entry.criteria:
                    yield test.id, entry.type, text
                continue
            values = entry.value if isinstance(entry.value, list) else [entry.value]
            for value in values:
                if isinstance(value, str):
                    yield test.id, entry.type, value


def copied_phrase(view: LintView, current: Skill, candidate: Skill) -> Copied | None:
    """The longest test phrase the candidate carries and the current skill does not."""
    mine, theirs = Source(candidate.text), Source(current.text)
    best: Copied | None = None
    best_len = 0
    for test_id, where, text in _texts(view):
        for phrase in mine.shared(words(text)):
            if len(phrase) < MIN_PHRASE or phrase.content_words < MIN_CONTENT:
                continue
            if theirs.contains(phrase.words):
                continue
            if len(phrase) > best_len:
                best, best_len = Copied(phrase.text, test_id, where), len(phrase)
    return best


def _findings(view: LintView, skill: Skill) -> dict[tuple[str, str, int, int], str]:
    found = leakage.check(replace(view, skill=skill))
    return {(f.check.id, f.where.path, f.where.line, f.where.col): f.render() for f in found}


def new_lint_findings(view: LintView, current: Skill, candidate: Skill) -> list[str]:
    """The leakage findings the candidate brings that the current skill does not have."""
    before = _findings(view, current)
    after = _findings(view, candidate)
    return [after[k] for k in sorted(after) if k not in before]


@frozen
class OverfitCheck:
    """The overfitting judge on the current skill and on the candidate."""

    current: str
    candidate: str
    refused: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "current": self.current,
            "candidate": self.candidate,
            "refused": self.refused,
            "reason": self.reason,
        }


def _severity(suite: Suite, skill: Skill, judge: Judge) -> tuple[str, str]:
    # lazy: start-up time (only an edit that passed the statistical test reaches the judge)
    from skilleval.judge.overfit import overfit_report

    try:
        block = overfit_report(replace(suite, skill=skill), judge)
    except (ProviderError, SkillevalError) as exc:
        return "Unknown", f"the overfitting judge could not run: {exc}"
    return str(block["severity"]), str(block["reason"])


def overfit_check(suite: Suite, current: Skill, candidate: Skill, judge: Judge) -> OverfitCheck:
    """Refuse the candidate when the judge rates the suite more overfitted to it."""
    before, _ = _severity(suite, current, judge)
    after, why = _severity(suite, candidate, judge)
    if after in SEVERITY_RANK and before in SEVERITY_RANK:
        refused = SEVERITY_RANK[after] > SEVERITY_RANK[before]
        reason = (
            f"the overfitting judge rates the suite {after} against the candidate, "
            f"{before} against the current skill"
        )
    else:
        refused = False
        reason = (
            f"the overfitting judge could not compare them ({before} against {after}): "
            f"not a reason to refuse. {why}".strip()
        )
    return OverfitCheck(before, after, refused, reason)
