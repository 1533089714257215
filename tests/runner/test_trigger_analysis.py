"""The trigger block's AUROC, contextual calibration and router fitness, from scripted routers."""

from __future__ import annotations

import json
import math
import os
import textwrap
from pathlib import Path

import pytest
from fakes import ScoringRouter

from skilleval.api import Capabilities
from skilleval.engine.base import ModelIdentity
from skilleval.results.model import Trigger
from skilleval.runner import analysis
from skilleval.runner.arms import CONTENT_FREE_ID, NONE, ContentFree, TriggerResult, content_free
from skilleval.runner.options import RunOptions
from skilleval.runner.routercheck import (
    NOT_CHECKED,
    cached_fitness,
    load_router_set,
    run_router_check,
    store_fitness,
)
from skilleval.runner.run import router_fitness, run_suite
from skilleval.suite.load import Overrides, load_suite
from skilleval.suite.model import Suite

SKILL = "commit-message"

SUITE = """
version: 1
type: capability
skill: skill/SKILL.md
{extra}
model: {{provider: scripted, default: ok}}
tests:
  - {{id: p1, prompt: "Commit message for the parser fix", should_trigger: true}}
  - {{id: p2, prompt: "Commit message for a rename", should_trigger: true}}
  - {{id: p3, prompt: "Commit message: bump deps", should_trigger: true}}
  - {{id: n1, prompt: "What is 2 plus 2?", should_trigger: false}}
  - {{id: n2, prompt: "Name a colour", should_trigger: false}}
  - {{id: n3, prompt: "Tell me a joke", should_trigger: false}}
"""

# A router that ranks perfectly (every positive's margin is above every negative's) but is
# biased towards none, so it picks none for p2 and p3: the case the AUROC exists for.
BIASED = {
    "p1": {SKILL: -0.5, NONE: -0.9},
    "p2": {SKILL: -0.8, NONE: -0.6},
    "p3": {SKILL: -0.7, NONE: -0.4},
    "n1": {SKILL: -2.0, NONE: -0.1},
    "n2": {SKILL: -1.5, NONE: -0.5},
    "n3": {SKILL: -1.2, NONE: -0.3},
    CONTENT_FREE_ID: {SKILL: -1.0, NONE: -0.2},
}


def load(tmp_path: Path, extra: str = "") -> Suite:
    skill = tmp_path / "skill" / "SKILL.md"
    skill.parent.mkdir(parents=True, exist_ok=True)
    skill.write_text(
        "---\nname: commit-message\ndescription: Write a commit message.\n---\n\nOne line.\n",
        encoding="utf-8",
    )
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(SUITE.format(extra=extra)).lstrip(), encoding="utf-8")
    suite, _ = load_suite(path, Overrides())
    return suite


def run_trigger(tmp_path: Path, router: ScoringRouter, extra: str = "") -> Trigger:
    suite = load(tmp_path, extra)
    home = Path(os.environ["SKILLEVAL_HOME"])
    outcome = run_suite(suite, RunOptions(home=home, provider=router, use_cache=False))
    assert outcome.run.trigger is not None
    return outcome.run.trigger


def test_a_router_that_ranks_well_but_picks_none_shows_in_the_auroc(tmp_path: Path) -> None:
    trigger = run_trigger(tmp_path, ScoringRouter(BIASED))
    assert (trigger.recall, trigger.accuracy) == (pytest.approx(1 / 3), pytest.approx(4 / 6))
    assert trigger.auroc is not None
    assert (trigger.auroc.value, trigger.auroc.positives, trigger.auroc.negatives) == (1.0, 3, 3)
    assert trigger.auroc.ci95 is not None
    assert 0.5 < trigger.auroc.ci95[0] < 0.6
    margins = {t.test_id: t.skill_margin for t in trigger.tests}
    assert margins["p2"] == pytest.approx(-0.2)
    assert margins["n1"] == pytest.approx(-1.9)
    assert trigger.calibrated is None  # not asked for


def test_calibration_subtracts_the_content_free_margin_beside_the_raw_figures(
    tmp_path: Path,
) -> None:
    trigger = run_trigger(tmp_path, ScoringRouter(BIASED), "trigger: {calibrate: true}")
    cal = trigger.calibrated
    assert cal is not None
    assert cal.margin == pytest.approx(-0.8)
    assert (cal.tp, cal.fp, cal.tn, cal.fn, cal.recall) == (3, 0, 3, 0, 1.0)
    assert {d.test_id: d.margin for d in cal.tests}["p2"] == pytest.approx(0.6)
    # Never in place of the raw figures.
    assert trigger.recall == pytest.approx(1 / 3)
    # With no distractor, calibration shifts every margin alike: the ranking cannot change.
    assert trigger.auroc is not None
    assert cal.auroc.value == trigger.auroc.value


def test_calibration_with_a_distractor_can_change_the_ranking() -> None:
    """Subtracting per-option biases re-weighs the distractor, so margins move unequally."""
    # The router leans towards the distractor; the raw margins rank the pair the wrong way.
    cf = ContentFree({SKILL: -2.0, "haiku": -0.5, NONE: -2.0})
    results = [
        TriggerResult("p", True, "haiku", {SKILL: -1.0, "haiku": -0.75, NONE: -3.0}),
        TriggerResult("n", False, NONE, {SKILL: -1.0, "haiku": -3.0, NONE: -0.875}),
    ]
    raw = analysis.margin_auroc(
        [(r.test_id, bool(r.expected), r.skill_margin(SKILL)) for r in results]
    )
    cal = analysis.calibrated(SKILL, results, cf)
    assert raw.value == 0.0
    assert cal.auroc.value == 1.0
    assert [(d.chosen, d.margin) for d in cal.tests] == [(SKILL, 1.25), (NONE, -0.125)]


def test_content_free_scores_are_averaged_as_probabilities(tmp_path: Path) -> None:
    suite = load(tmp_path, "trigger: {calibrate: true}")

    class ByPrompt(ScoringRouter):
        def reply(self, request):  # type: ignore[no-untyped-def]
            text = request.messages[-1].content
            self.scores = {
                CONTENT_FREE_ID: {
                    "N/A": {SKILL: -1.0, NONE: -2.0},
                    "[MASK]": {SKILL: -3.0, NONE: -2.0},
                    "": {SKILL: -2.0, NONE: -2.0},
                }[text]
            }
            return super().reply(request)

    got = content_free(ByPrompt({}), suite)
    expected = math.log((math.exp(-1.0) + math.exp(-3.0) + math.exp(-2.0)) / 3)
    assert got.scores is not None
    assert got.scores[SKILL] == pytest.approx(expected)
    assert got.scores[NONE] == pytest.approx(-2.0)


def test_a_router_without_scores_gives_null_with_a_reason(tmp_path: Path) -> None:
    trigger = run_trigger(
        tmp_path, ScoringRouter({}, fallback={SKILL: 0.0, NONE: 1.0}), "trigger: {calibrate: true}"
    )
    assert trigger.auroc is not None
    assert trigger.auroc.value == 0.5
    suite = load(tmp_path)
    no_scores = [TriggerResult("p", True, NONE, None), TriggerResult("n", False, NONE, None)]
    block = analysis.trigger(
        suite, no_scores, ContentFree(None, "the router gives no score for each option")
    )
    assert block is not None
    assert block.auroc is not None
    assert block.calibrated is not None
    assert block.auroc.value is None
    assert block.auroc.unscored == ("p", "n")
    assert "no scores" in (block.auroc.reason or "")
    assert block.calibrated.n == 0
    assert block.calibrated.reason == "the router gives no score for each option"


def test_one_empty_class_is_null_with_a_reason() -> None:
    auroc = analysis.margin_auroc([("a", True, 0.4), ("b", True, -0.1)])
    assert (auroc.value, auroc.ci95) == (None, None)
    assert (
        auroc.reason
        == "no scored test with should_trigger: false, so there is nothing to rank against"
    )


# --- the router check and its kept verdict -------------------------------------------------------


def fitness_router(flip: float) -> ScoringRouter:
    """Scores the fitness set: a skill case's expected skill gets ``flip``, none gets 0."""
    router_set = load_router_set()
    scores = {}
    for case in router_set.cases:
        base = {s.name: -5.0 for s in router_set.skills} | {NONE: 0.0}
        if case.should_trigger:
            base[case.expect] = flip
        scores[case.id] = base
    return ScoringRouter(scores)


def test_a_router_that_ranks_but_never_triggers_is_unqualified_by_accuracy() -> None:
    router_set = load_router_set()
    report = run_router_check(fitness_router(-1.0), router_set)
    assert report.accuracy == 0.5
    assert report.chance == 0.5
    assert report.auroc.value == 1.0
    reasons = report.unqualified_because()
    assert len(reasons) == 1
    assert "chance level 0.50" in reasons[0]
    assert report.fitness().qualified is False


def test_a_router_that_routes_right_is_qualified_and_its_verdict_is_kept(tmp_path: Path) -> None:
    report = run_router_check(fitness_router(1.0), load_router_set())
    assert report.unqualified_because() == []
    body = report.to_json()
    assert body["qualified"] is True
    assert body["auroc"]["value"] == 1.0
    identity = ModelIdentity(kind="gguf", name="m.gguf", sha256="ab" * 32)
    assert cached_fitness(tmp_path, identity) is None
    path = store_fitness(tmp_path, identity, report)
    kept = cached_fitness(tmp_path, identity)
    assert kept is not None
    assert kept.qualified is True
    assert kept.cases == len(report.outcomes)
    assert (
        cached_fitness(tmp_path, ModelIdentity(kind="gguf", name="m.gguf", sha256="cd" * 32))
        is None
    )
    path.write_text("{not json", encoding="utf-8")
    assert cached_fitness(tmp_path, identity) is None


def test_a_coin_router_is_unqualified_by_its_auroc() -> None:
    router_set = load_router_set()
    scores = {
        c.id: {**{s.name: -1.0 for s in router_set.skills}, NONE: -1.0 + (0.1 if i % 2 else -0.1)}
        for i, c in enumerate(router_set.cases)
    }
    report = run_router_check(ScoringRouter(scores), router_set)
    assert any("AUROC interval" in r for r in report.unqualified_because())


def test_a_run_shows_the_kept_verdict_or_not_checked(tmp_path: Path) -> None:
    router = ScoringRouter(BIASED)
    measured = Capabilities(measured=True, scores=True)
    options = RunOptions(home=tmp_path, provider=router, capabilities=measured)
    assert router_fitness(options, router) == NOT_CHECKED
    report = run_router_check(fitness_router(-1.0), load_router_set())
    store_fitness(tmp_path, router.identity(), report)
    kept = router_fitness(options, router)
    assert kept is not None
    assert kept.qualified is False
    suite = load(tmp_path / "suite")
    outcome = run_suite(
        suite, RunOptions(home=tmp_path, provider=router, use_cache=False, capabilities=measured)
    )
    assert outcome.run.trigger is not None
    assert outcome.run.trigger.router == kept
    # The suite's own provider (scripted) writes its routing: no verdict applies to it.
    written_routing = run_suite(suite, RunOptions(home=tmp_path, provider=router, use_cache=False))
    assert written_routing.run.trigger is not None
    assert written_routing.run.trigger.router is None
    written = json.loads((outcome.run_dir.root / "results.json").read_text(encoding="utf-8"))
    assert written["trigger"]["router"]["qualified"] is False


def test_a_router_whose_calls_all_failed_is_not_said_to_lack_log_probabilities() -> None:
    """An error is reported as what it is: the reason names the failed calls and the first
    message, and the wording about log-probabilities is kept for a provider that gives none."""
    failed = [
        TriggerResult("p", True, None, None, error="the model's chat template rejected it"),
        TriggerResult("n", False, None, None, error="the model's chat template rejected it"),
    ]
    rows = [(r.test_id, bool(r.expected), r.skill_margin(SKILL)) for r in failed]
    errors = {r.test_id: r.error for r in failed if r.error is not None}
    reason = analysis.margin_auroc(rows, errors=errors).reason
    assert reason is not None
    assert "2 of 2 routing calls ended in an error" in reason
    assert "chat template rejected it" in reason
    assert "log-probabilities" not in reason
    unscored = [TriggerResult("p", True, SKILL, None), TriggerResult("n", False, NONE, None)]
    rows = [(r.test_id, bool(r.expected), r.skill_margin(SKILL)) for r in unscored]
    assert "log-probabilities" in str(analysis.margin_auroc(rows).reason)
    # A provider that declares scores (Capabilities.scores) and gave none is not said to lack them.
    declared = analysis.margin_auroc(rows, declared=True).reason
    assert declared == "the router gave no scores (its replies carried none)"
    calibrated = analysis.calibrated(SKILL, failed, ContentFree({SKILL: -1.0, NONE: -1.0}))
    assert "ended in an error" in str(calibrated.auroc.reason)
