"""Sampled routing: skill-creator's trigger rule.

skill-creator runs each query several times (3) and counts it as triggering the skill when
at least half of the runs pick it. With ``trigger: {runs: N, rate: R}`` in distribution mode
a routed test is asked N times, run ``i`` sampled at the suite's temperature and top_p with
seed ``seed + i`` (a seed that depends on the run, never on the test's position), and it
triggers when at least R of the runs chose the skill. With ``runs: 1`` (the default) one
greedy call decides, as :mod:`skilleval.runner.arms` describes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from skilleval.engine.base import Completion, Request
from skilleval.errors import ProviderError
from skilleval.runner.arms import NONE, TriggerResult, routed, trigger_result
from skilleval.suite.model import Suite, TestCase


def requests(suite: Suite, request: Request) -> list[Request]:
    """The routing requests for one test: ``request`` itself when one greedy call decides,
    else one sampled request per run, each with its own seed and trial index."""
    runs = suite.trigger.runs
    if runs == 1:
        return [request]
    dec = suite.decoding
    return [
        replace(request, temperature=dec.temperature, top_p=dec.top_p, seed=dec.seed + i, trial=i)
        for i in range(runs)
    ]


def decide(
    suite: Suite,
    test: TestCase,
    asked: Sequence[Request],
    answers: Sequence[Completion | ProviderError],
) -> TriggerResult:
    """The trigger decision for ``test`` from its routing answers.

    One answer is the greedy decision as it stands. With several, the test triggers when the
    share of runs that chose the skill reaches ``trigger.rate``; it is then recorded as
    choosing the skill, otherwise as choosing the option the other runs picked most (earliest
    in the option list on ties). A run that fails makes the decision an error: a rate over the
    runs that happened to succeed would not be the rule's.
    """
    each = [routed(request, answer) for request, answer in zip(asked, answers, strict=True)]
    if len(each) == 1:
        return trigger_result(test, each[0])
    chosen = tuple(r.chosen for r in each)
    first = each[0]
    failed = next((r for r in each if r.error is not None), None)
    if failed is not None or suite.skill is None:
        why = failed.error if failed is not None else "no skill to route to"
        return replace(trigger_result(test, failed or first), chosen=None, error=why, runs=chosen)
    skill = suite.skill.name
    rate = sum(c == skill for c in chosen) / len(chosen)
    if rate >= suite.trigger.rate:
        label = skill
    else:
        options = list(asked[0].choices or (NONE,))
        others = Counter(c for c in chosen if c is not None and c != skill)
        label = min(others, key=lambda c: (-others[c], options.index(c))) if others else NONE
    return replace(trigger_result(test, first), chosen=label, runs=chosen, rate=rate)
