"""Is the judge fit? Grade known-good and known-bad outputs and measure how often it is right.

The pairs are the judge-fitness set, ``suites/judge-fitness.yaml``, which ships in the wheel
(:mod:`skilleval.shipped` finds it in a checkout or an installed package). Each output is
graded by the real ``llm-rubric`` or ``llm-assert`` function, so the check measures exactly
what suites get.

Three figures, each over the outputs or pairs it names:

* accuracy: the share of outputs graded right (good passes, bad fails); an error is wrong;
* discrimination: over pairs where both outputs were scored, how often the good output
  scored above the bad one, ties counting half;
* error rate: the share of outputs the judge could not grade.

A judge that gives every output the same grade scores 0.5 on accuracy and discrimination.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from skilleval.api import Check, Verdict
from skilleval.assertions.builtin.model import llm_assert, llm_rubric
from skilleval.errors import Diagnostic
from skilleval.shipped import JUDGE_FITNESS_SET, suite_text
from skilleval.suite.fitness import ItemReader, check_unique, raise_if, read_items
from skilleval.util.frozen import frozen

if TYPE_CHECKING:
    from skilleval.api import Judge

PairType = Literal["llm-rubric", "llm-assert"]
Progress = Callable[["PairOutcome", int, int], None]

DATA_FILE = JUDGE_FITNESS_SET
"""The judge-fitness set, inside the shipped ``suites/``."""

PAIR_TYPES: tuple[PairType, ...] = ("llm-rubric", "llm-assert")
_FIELDS = ("id", "domain", "type", "prompt", "value", "reference", "good", "bad")


@frozen
class Pair:
    """One prompt and rubric, with an output that meets it and one that misses it."""

    id: str
    type: PairType
    prompt: str
    value: str | tuple[str, ...]
    good: str
    bad: str
    reference: str | None = None
    domain: str = ""


@frozen
class Graded:
    """One output's verdict, reduced to what the figures need."""

    passed: bool
    score: float | None
    """None when the judge could not grade it."""
    error: str | None
    error_kind: str | None
    reason: str

    @classmethod
    def of(cls, verdict: Verdict) -> Graded:
        kind = verdict.details.get("error_kind") if verdict.error is not None else None
        return cls(
            passed=verdict.passed and verdict.error is None,
            score=None if verdict.error is not None else verdict.effective_score,
            error=verdict.error,
            error_kind=None if kind is None else str(kind),
            reason=verdict.reason,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "status": "error" if self.error else "pass" if self.passed else "fail",
            "score": self.score,
            "reason": self.reason,
        }


@frozen
class PairOutcome:
    """Both verdicts of one pair."""

    pair: Pair
    good: Graded
    bad: Graded

    @property
    def correct(self) -> int:
        """How many of the two outputs were graded right (0, 1 or 2)."""
        good = self.good.error is None and self.good.passed
        bad = self.bad.error is None and not self.bad.passed
        return int(good) + int(bad)

    @property
    def errors(self) -> int:
        return int(self.good.error is not None) + int(self.bad.error is not None)

    @property
    def separation(self) -> float | None:
        """1 when good scored above bad, 0.5 on a tie, 0 below; None if either is unscored."""
        if self.good.score is None or self.bad.score is None:
            return None
        if self.good.score > self.bad.score:
            return 1.0
        return 0.5 if self.good.score == self.bad.score else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.pair.id,
            "type": self.pair.type,
            "good": self.good.to_json(),
            "bad": self.bad.to_json(),
            "correct": self.correct,
            "separation": self.separation,
        }


@frozen
class JudgeCheckReport:
    """The outcome of a self-test run."""

    judge: Mapping[str, Any]
    outcomes: tuple[PairOutcome, ...]
    seconds: float
    aborted: str | None = None
    """Why the judge could not run at all (no reply at all, and a model failure)."""

    @property
    def outputs(self) -> int:
        return 2 * len(self.outcomes)

    @property
    def correct(self) -> int:
        return sum(o.correct for o in self.outcomes)

    @property
    def errors(self) -> int:
        return sum(o.errors for o in self.outcomes)

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.outputs if self.outputs else None

    @property
    def error_rate(self) -> float | None:
        return self.errors / self.outputs if self.outputs else None

    @property
    def scored_pairs(self) -> list[float]:
        return [s for o in self.outcomes if (s := o.separation) is not None]

    @property
    def discrimination(self) -> float | None:
        scored = self.scored_pairs
        return sum(scored) / len(scored) if scored else None

    @property
    def constant(self) -> bool:
        """Whether every scored output got the same status and score."""
        grades = {
            (g.passed, g.score) for o in self.outcomes for g in (o.good, o.bad) if g.error is None
        }
        return len(grades) == 1

    def to_json(self) -> dict[str, Any]:
        return {
            "judge": dict(self.judge),
            "pairs": len(self.outcomes),
            "outputs": self.outputs,
            "accuracy": self.accuracy,
            "correct": self.correct,
            "discrimination": self.discrimination,
            "scored_pairs": len(self.scored_pairs),
            "error_rate": self.error_rate,
            "errors": self.errors,
            "constant": self.constant,
            "seconds": round(self.seconds, 3),
            "aborted": self.aborted,
            "results": [o.to_json() for o in self.outcomes],
        }


def load_pairs(text: str | None = None, display: str = f"suites/{DATA_FILE}") -> list[Pair]:
    """The judge-fitness set, or the pairs in ``text`` (the same YAML shape).

    Raises:
        SuiteError: Every malformed pair, each at its line and column.
    """
    if text is None:
        text = suite_text(DATA_FILE)
    diagnostics: list[Diagnostic] = []
    _, items = read_items(text, display, "pairs", diagnostics)
    readers = [ItemReader(item, diagnostics, _FIELDS) for item in items]
    check_unique(readers)
    pairs = [pair for reader in readers if (pair := _pair(reader)) is not None]
    raise_if(diagnostics)
    return pairs


def _pair(reader: ItemReader) -> Pair | None:
    pair_id, domain = reader.text("id"), reader.text("domain")
    kind = reader.choice("type", PAIR_TYPES)
    prompt, value = reader.text("prompt"), reader.texts("value")
    good, bad = reader.text("good"), reader.text("bad")
    reference = reader.text("reference", required=False)
    if reference is not None and kind == "llm-assert":
        reader.fail(["reference"], "'reference' is for llm-rubric pairs only")
    if good is not None and good == bad:
        reader.fail(["bad"], "'bad' is the same text as 'good'")
    if None in (pair_id, domain, kind, prompt, value, good, bad):
        return None
    return Pair(
        id=str(pair_id),
        type="llm-assert" if kind == "llm-assert" else "llm-rubric",
        prompt=str(prompt),
        value=value if isinstance(value, tuple) else str(value),
        good=str(good),
        bad=str(bad),
        reference=reference,
        domain=str(domain),
    )


def grade_output(judge: Judge, pair: Pair, output: str) -> Verdict:
    """Grade ``output`` for ``pair`` with the assertion type the pair names."""
    fn = llm_rubric if pair.type == "llm-rubric" else llm_assert
    options = {"reference": pair.reference} if pair.reference is not None else {}
    check = Check(
        output=output,
        value=pair.value if isinstance(pair.value, str) else list(pair.value),
        prompt=pair.prompt,
        options=options,
        judge=judge,
    )
    verdict: Verdict = fn(check)
    return verdict


def run_judge_check(
    judge: Judge,
    pairs: Sequence[Pair],
    *,
    describe: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
) -> JudgeCheckReport:
    """Grade both outputs of every pair.

    Stops early, with ``aborted`` set, when the model fails before it has graded anything:
    then nothing can be learned about the judge.

    Args:
        judge: The judge to test.
        pairs: What to grade.
        describe: The judge's description, for the report.
        progress: Called after each pair with (outcome, done, total).
    """
    start = time.perf_counter()
    outcomes: list[PairOutcome] = []
    aborted = None
    for pair in pairs:
        good = Graded.of(grade_output(judge, pair, pair.good))
        bad = Graded.of(grade_output(judge, pair, pair.bad))
        outcome = PairOutcome(pair, good, bad)
        graded_any = any(g.error is None for o in (*outcomes, outcome) for g in (o.good, o.bad))
        failed = next((g for g in (good, bad) if g.error_kind == "provider"), None)
        if failed is not None and not graded_any:
            aborted = failed.error
            break
        outcomes.append(outcome)
        if progress is not None:
            progress(outcome, len(outcomes), len(pairs))
    return JudgeCheckReport(
        judge=dict(describe or {}),
        outcomes=tuple(outcomes),
        seconds=time.perf_counter() - start,
        aborted=aborted,
    )
