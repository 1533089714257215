"""Run one skill (the current one or a candidate) on the tests, and keep what the loop needs.

An evaluation is an ordinary run of the suite (``runner.run_suite``) with the skill swapped
in and only the ``on`` arm: the same prompts, seed, decoding, grading and routing as
``skilleval run``, through the same response cache, so a reply a run already paid for is
not paid for again. Each candidate is evaluated on every test of the three sets in one run
(a batching model then decodes them together); what the loop may *read* of it is limited by
set (see ``loop.py``). The run directories go under the output folder, not the home's
``runs/``, so an improvement never becomes the suite's "latest run".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from skilleval.api import Judge
from skilleval.engine.base import Provider
from skilleval.exitcodes import ExitCode
from skilleval.results.records import Record
from skilleval.runner.options import RunOptions
from skilleval.runner.run import run_suite
from skilleval.suite.model import Suite, TestCase
from skilleval.suite.skills import Skill
from skilleval.util.frozen import frozen

FAILURE_CHARS = 600
"""The most characters of a failing output (and of each failed check's reason) kept for the
proposer."""


class _Interrupted(KeyboardInterrupt):
    """The evaluation was stopped by Ctrl-C or SIGTERM (the run caught it and wrote what
    finished); raised on so the loop stops as it would on the interrupt itself."""


@frozen
class TestOutcome:
    """One test's result for one skill: its trials, passes and routing."""

    test_id: str
    scored: int
    """Trials that passed or failed (errors are left out, as the run's lift leaves them)."""
    passed: int
    errors: int
    routed: bool | None
    """Whether the router's choice matched ``should_trigger``; None when not measured."""
    output: str = ""
    """The first failing trial's output, clipped; empty when every trial passed."""
    failed_checks: tuple[str, ...] = ()
    """What the failing trial's failed assertions said, clipped."""

    @property
    def vote(self) -> bool | None:
        """The majority of the scored trials; None on a tie or with none scored."""
        if self.scored == 0 or 2 * self.passed == self.scored:
            return None
        return 2 * self.passed > self.scored

    def to_json(self) -> dict[str, Any]:
        return {
            "test_id": self.test_id,
            "scored": self.scored,
            "passed": self.passed,
            "errors": self.errors,
            "routed": self.routed,
            "output": self.output,
            "failed_checks": list(self.failed_checks),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TestOutcome:
        return cls(
            test_id=str(data["test_id"]),
            scored=int(data["scored"]),
            passed=int(data["passed"]),
            errors=int(data["errors"]),
            routed=None if data["routed"] is None else bool(data["routed"]),
            output=str(data["output"]),
            failed_checks=tuple(str(x) for x in data["failed_checks"]),
        )


def _clip(text: str, limit: int = FAILURE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def outcomes_of(records: Sequence[Record], tests: Sequence[TestCase]) -> dict[str, TestOutcome]:
    """Each test's outcome from the ``on`` arm's records."""
    out: dict[str, TestOutcome] = {}
    for test in tests:
        mine = [r for r in records if r.test_id == test.id and r.arm == "on"]
        scored = [r for r in mine if r.status != "error"]
        failing = next((r for r in scored if r.status == "fail"), None)
        trig = next((r.trigger for r in mine if r.trigger is not None), None)
        out[test.id] = TestOutcome(
            test_id=test.id,
            scored=len(scored),
            passed=sum(1 for r in scored if r.status == "pass"),
            errors=len(mine) - len(scored),
            routed=None if trig is None else trig.correct,
            output="" if failing is None else _clip(failing.output),
            failed_checks=()
            if failing is None
            else tuple(_clip(f"{a.type}: {a.reason}") for a in failing.asserts if not a.passed),
        )
    return out


def planned_requests(suite: Suite, tests: Sequence[TestCase]) -> int:
    """The requests an evaluation of ``tests`` is planned to send: one per trial, one per
    judge-graded assertion and trial, one routing request per test that routes. Counted
    from the suite alone, so a budget stops at the same place whatever the cache holds;
    a judge's repair retries and an agent's extra turns come on top."""
    total = 0
    for test in tests:
        graded = sum(1 for a in test.every_assert if a.tier == "model")
        total += suite.trials * (1 + graded)
        if test.should_trigger is not None:
            total += 1
    return total


def evaluate(
    suite: Suite,
    skill: Skill,
    tests: Sequence[TestCase],
    *,
    work: Path,
    provider: Provider,
    judge_provider: Provider | None,
    jobs: int,
    warn: Callable[[str], None],
) -> dict[str, TestOutcome]:
    """Run ``skill`` on ``tests`` (the ``on`` arm only) and return each test's outcome.

    Raises:
        _Interrupted: The run was stopped; nothing of it is returned.
    """
    variant = replace(suite, skill=skill, tests=tuple(tests), arms=("on",))
    options = RunOptions(
        home=work,
        jobs=jobs,
        provider=provider,
        judge_provider=judge_provider,
        warn=warn,
        judge_check=False,
    )
    outcome = run_suite(variant, options)
    if outcome.exit_code == ExitCode.INTERRUPTED:
        raise _Interrupted
    return outcomes_of(outcome.records, tests)


def judge_for(provider: Provider, judge_provider: Provider | None, seed: int) -> Judge:
    """The judge the overfitting check and the proposer's sibling calls use."""
    # lazy: start-up time (only a loop that reaches a guard asks the judge)
    from skilleval.judge import JudgeClient

    return JudgeClient(judge_provider or provider, seed=seed)
