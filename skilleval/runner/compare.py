"""Types that grade several outputs together (``select-best``, ``max-score``,
``side-by-side``): group the outputs, call once.

A suite with several ``prompts:`` turns each written test into one test per prompt. The
outputs of those tests in the same arm and trial form a group; a type with
:attr:`~skilleval.api.AssertionType.compares` set is called once per group, with one check
per output, and its verdicts are handed to :func:`skilleval.runner.grade.grade` as given.
A type that compares ``"arms"`` groups one test's outputs in each arm of the same trial
instead (the skill-off and skill-on answers, side by side).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, cast

from skilleval.api import Check, Judge, Verdict
from skilleval.assertions.normalize import normalize_result
from skilleval.engine.base import Completion
from skilleval.runner import grade as grading
from skilleval.runner.plan import Job
from skilleval.suite.model import TestCase

SCORED = frozenset({"max-score"})
"""Comparing types whose checks carry the scores of each output's other assertions
(:attr:`~skilleval.api.Check.results`)."""

GroupKey = tuple[str, str, str, int]
Given = dict[tuple[str, str, int], dict[int, Verdict]]
"""Per job key, the given verdicts by the assertion's position in ``test.asserts``."""


def compares(test: TestCase) -> bool:
    """Whether ``test`` has an assertion that compares outputs across prompts."""
    return any(a.spec.compares for a in test.asserts)


def group_key(test: TestCase, arm: str, trial: int) -> GroupKey:
    """The tests written once and run under several prompts share this key."""
    vars_ = json.dumps(test.vars, sort_keys=True, default=str, ensure_ascii=False)
    return (str(test.where), vars_, arm, trial)


def arms_key(test: TestCase, trial: int) -> GroupKey:
    """One test's outputs in every arm share this key (a type that compares the arms)."""
    return (test.id, "", "", trial)


def given_verdicts(
    done: Sequence[tuple[Job, Completion]],
    subject_of: Callable[[Job, Completion], grading.Subject],
    judge: Judge | None,
) -> Given:
    """The verdicts of every comparing assertion of ``done``, one call per group and assertion."""
    groups: dict[tuple[GroupKey, int], list[tuple[Job, Completion]]] = {}
    for job, completion in done:
        for index, entry in enumerate(job.test.asserts):
            if not entry.spec.compares:
                continue
            if entry.spec.compares == "arms":
                key = arms_key(job.test, job.trial)
            else:
                key = group_key(job.test, job.arm, job.trial)
            groups.setdefault((key, index), []).append((job, completion))
    out: Given = {}
    for (_, index), members in groups.items():
        # By test id and arm, so the judge sees the outputs in the same order however they
        # finished.
        members.sort(key=lambda m: (m[0].test.id, m[0].arm))
        verdicts = _grade_group(index, members, subject_of, judge)
        for (job, _), verdict in zip(members, verdicts, strict=True):
            out.setdefault(job.key, {})[index] = verdict
    return out


def _grade_group(
    index: int,
    members: Sequence[tuple[Job, Completion]],
    subject_of: Callable[[Job, Completion], grading.Subject],
    judge: Judge | None,
) -> list[Verdict]:
    checks: list[Check | Verdict] = []
    for job, completion in members:
        entry = job.test.asserts[index]
        subject = subject_of(job, completion)
        prepared = grading.test_output(job.test, subject)
        if isinstance(prepared, str):
            checks.append(Verdict.errored(prepared))
            continue
        output, transformed = prepared
        check = grading.check_for(entry, job.test, subject, output, transformed, judge)
        if isinstance(check, Check) and entry.spec.name in SCORED:
            check = replace(check, results=_other_results(job.test, subject, judge))
        checks.append(check)
    usable = [c for c in checks if isinstance(c, Check)]
    spec = members[0][0].test.asserts[index].spec
    try:
        together = cast("Callable[[list[Check]], Any]", spec.fn)
        raw: Any = together(usable) if usable else []
    except Exception as exc:
        raw = [Verdict.errored(f"{spec.name} raised {type(exc).__name__}: {exc}")] * len(usable)
    if not isinstance(raw, list) or len(raw) != len(usable):
        raw = [Verdict.errored(f"{spec.name} did not return one verdict per output")] * len(usable)
    verdicts = iter(normalize_result(v, None, label=spec.name) for v in raw)
    return [next(verdicts) if isinstance(c, Check) else c for c in checks]


def _other_results(
    test: TestCase, subject: grading.Subject, judge: Judge | None
) -> tuple[tuple[str, float | None], ...]:
    """The type and score of each assertion of ``test`` that does not compare outputs, graded
    on ``subject`` (they are graded again with the test; a model-graded one's judge reply
    then comes from the response cache)."""
    alone = [e for e in test.asserts if not e.spec.compares]
    graded = grading.grade(test, subject, judge, only=alone) if alone else None
    return tuple((r.type, r.score) for r in (graded.asserts if graded else ()))
