"""The router-fitness set in suites/, its loader, and the check that routes it."""

from __future__ import annotations

from collections import Counter

import pytest
from fakes import FakeProvider

from skilleval.engine.base import Completion, Request
from skilleval.errors import ProviderError, SuiteError
from skilleval.runner.arms import NONE
from skilleval.runner.routercheck import RouterSet, load_router_set, run_router_check

# --- the shipped set -----------------------------------------------------------------------------


def test_the_shipped_set_is_balanced_between_trigger_and_none() -> None:
    cases = load_router_set().cases
    trigger = [c for c in cases if c.should_trigger]
    assert len(cases) >= 60
    assert len(trigger) * 2 == len(cases)
    assert len({c.id for c in cases}) == len(cases)
    assert len({c.request for c in cases}) == len(cases)


def test_every_skill_has_requests_that_trigger_it_and_near_misses() -> None:
    router_set = load_router_set()
    names = {s.name for s in router_set.skills}
    triggers = Counter(c.expect for c in router_set.cases if c.should_trigger)
    near = Counter(c.near for c in router_set.cases if c.near is not None)
    assert set(triggers) == names
    assert set(near) == names
    assert min(triggers.values()) >= 3
    assert min(near.values()) >= 2
    unrelated = [c for c in router_set.cases if not c.should_trigger and c.near is None]
    assert len(unrelated) >= 5


# --- the loader ----------------------------------------------------------------------------------

SKILLS = """\
skills:
  - name: alpha
    description: Does alpha things.
  - name: beta
    description: Does beta things.
"""


def test_a_malformed_set_is_refused_at_every_position() -> None:
    text = SKILLS + (
        "cases:\n"
        "  - id: a\n"
        "    request: Do an alpha thing.\n"
        "    expect: gamma\n"
        "  - id: a\n"
        "    request: Anything.\n"
        "    expect: none\n"
        "    near: delta\n"
        "  - id: c\n"
        "    expect: beta\n"
        "    near: alpha\n"
        "    colour: red\n"
    )
    with pytest.raises(SuiteError) as caught:
        load_router_set(text, "router.yaml")
    assert [str(d) for d in caught.value.diagnostics] == [
        "router.yaml:9:13: error: 'expect' is 'gamma'; expected one of: alpha, beta, none",
        "router.yaml:10:9: error: duplicate id 'a' (first at line 7)",
        "router.yaml:13:11: error: 'near' names 'delta', which is not in 'skills'",
        "router.yaml:14:5: error: missing field 'request'",
        "router.yaml:16:11: error: 'near' marks a near-miss, so 'expect' must be none",
        "router.yaml:17:5: error: unknown field 'colour' (allowed: id, request, expect, near)",
    ]


def test_a_skill_may_not_be_called_none() -> None:
    text = "skills:\n  - name: none\n    description: x\ncases:\n  - {id: a, request: b, expect: none}\n"
    with pytest.raises(SuiteError, match=r":2:11: error: 'none' is the router's own label"):
        load_router_set(text, "router.yaml")


# --- the check, with fake routers ----------------------------------------------------------------


class Oracle(FakeProvider):
    """Routes every request to its expected label, except those listed in ``wrong``."""

    name = "oracle"

    def __init__(self, router_set: RouterSet, wrong: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.router_set = router_set
        self.wrong = wrong

    def reply(self, request: Request) -> Completion:
        case = next(c for c in self.router_set.cases if c.id == request.test_id)
        assert request.choices == (*sorted(s.name for s in self.router_set.skills), NONE)
        label = case.expect
        if case.id in self.wrong:
            label = NONE if case.should_trigger else self.router_set.skills[0].name
        return Completion(label, choice_scores={label: -0.5})


def test_a_perfect_router_scores_one() -> None:
    router_set = load_router_set()
    report = run_router_check(Oracle(router_set), router_set)
    assert (report.accuracy, report.recall, report.false_triggers) == (1.0, 1.0, 0.0)
    assert report.error_rate == 0.0
    assert not report.constant
    lo, hi = report.interval or (0, 0)
    assert 0.9 < lo < hi == 1.0


def test_misses_and_false_triggers_are_counted_apart() -> None:
    router_set = load_router_set()
    positive = next(c.id for c in router_set.cases if c.should_trigger)
    near = next(c.id for c in router_set.cases if c.near is not None)
    report = run_router_check(Oracle(router_set, frozenset({positive, near})), router_set)
    n = len(router_set.cases)
    assert report.correct == n - 2
    assert report.recall == 1 - 1 / (n / 2)
    assert report.false_triggers == 1 / (n / 2)
    nears = sum(c.near is not None for c in router_set.cases)
    assert report.near_miss_false_triggers == 1 / nears


class Failing(FakeProvider):
    name = "missing.gguf"

    def reply(self, request: Request) -> Completion:
        raise ProviderError("model file not found: missing.gguf")


def test_a_router_that_cannot_run_aborts_the_check() -> None:
    report = run_router_check(Failing(), load_router_set())
    assert report.aborted == "model file not found: missing.gguf"
    assert report.outcomes == ()
