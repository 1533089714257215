"""The HTML report: one self-contained file that opens from disk and makes no network request.

Figures are computed here and chart geometry in :mod:`skilleval.report.charts`;
``templates/report.html.j2`` only lays them out.
Jinja's autoescaping is always on, so model text (outputs, transcripts, reasons) can never
become markup. As a second line of defence the page carries a Content-Security-Policy that
allows exactly one script: the report's own, pinned by its SHA-256.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import jinja2
import markupsafe

from skilleval.report import charts, preference_view, trigger_view, view
from skilleval.report.history import History
from skilleval.report.html_rows import (
    PREVIEW_CHARS as PREVIEW_CHARS,  # re-exported: its old home
)
from skilleval.report.html_rows import TEXT_CHARS as TEXT_CHARS  # re-exported: its old home
from skilleval.report.html_rows import anchors, decision_label, pretty, row_views, table_data
from skilleval.report.view import Row
from skilleval.results.model import (
    ArmSummary,
    JudgeInfo,
    ModelError,
    ModelInfo,
    Overfit,
    Run,
    Tally,
    Trigger,
)
from skilleval.results.records import TriggerOutcome
from skilleval.util.frozen import frozen
from skilleval.util.jinjacache import TEMPLATE_CACHE as TEMPLATE_CACHE  # re-exported: its old home
from skilleval.util.jinjacache import HomeBytecodeCache
from skilleval.version import __version__

TEMPLATE = "report.html.j2"

INLINE_ROWS = 1000
"""Up to this many rows the table is written as HTML; beyond, the rows travel as JSON data
and the page's script draws the ones the filters select, a page at a time."""

_SEVERITY_TONE: Mapping[str, view.Tone] = {
    "Low": "good",
    "Moderate": "warn",
    "High": "bad",
    "Unknown": "neutral",
}


def csp_hash(script: str) -> str:
    """The CSP source expression that allows exactly this inline script."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


@functools.cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("skilleval", "templates"),
        bytecode_cache=HomeBytecodeCache("report"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = view.pct
    env.filters["signed_pct"] = view.signed_pct
    env.filters["num"] = view.num
    env.filters["csp_hash"] = lambda script: markupsafe.Markup(csp_hash(script))
    env.filters["pretty"] = pretty
    return env


def render_html(run: Run, history: History | None = None) -> str:
    """Render a run as a standalone HTML page.

    Args:
        run: The run's results; the optional skill, judge, lift, trigger, reliability and
            overfit blocks are shown when present.
        history: The suite's runs up to this one; charted when there are earlier runs.

    Returns:
        The page, as text.
    """
    return _environment().get_template(TEMPLATE).render(**context(run, history))


def context(run: Run, history: History | None = None) -> dict[str, Any]:
    """Everything the template shows, already computed and formatted."""
    all_rows = _by_test(view.rows(run), view.arms(run))
    skill_name = run.skill.name if run.skill is not None else None
    # A large run's rows go to the page as data, built from the rows without view objects.
    large = len(all_rows) > INLINE_ROWS
    shown = [] if large else row_views(all_rows, skill_name)
    data = table_data(all_rows, skill_name) if large else None
    return {
        "run": run,
        "title": view.suite_name(run),
        "suite": run.suite,
        "verdict": view.verdict(run),
        "headline_facts": view.headline_facts(run),
        "judge_grades_itself": view.judge_grades_itself(run),
        "judge_fitness": view.judge_fitness_line(run),
        "judge_unqualified": view.judge_unqualified(run),
        "unqualified_tag": view.UNQUALIFIED_TAG,
        "notes": list(run.notes),
        "run_id": run.run_id,
        "status": run.status,
        "started_at": run.timing.started_at,
        "duration_s": run.timing.duration_s,
        "writer": run.skilleval,
        "renderer": __version__,
        "model": _model_view(run.environment.model if run.environment is not None else None),
        "decoding": view.decoding_label(run),
        "trials": view.trials_of(run),
        "gate": run.gate,
        "calls": run.calls,
        "env": run.environment,
        "skill": run.skill,
        "judge": _judge_view(run.judge),
        "arm_cards": _arm_cards(run),
        "multi_arm": len(view.arms(run)) > 1,
        "lift": charts.lift_view(run.lift),
        "preference": _preference_line(run),
        "curves": charts.curves(run.reliability),
        "trigger": _trigger_view(run.trigger, skill_name),
        "overfit": _overfit_view(run.overfit),
        "history": charts.history_chart(history, run.run_id),
        "rows": shown,
        "row_count": len(all_rows),
        "test_count": len({r.test_id for r in all_rows}),
        "table_data": data,
        "anchors": anchors(all_rows),
        "failing_count": sum(1 for r in all_rows if r.status != "pass"),
        "filter_arms": view.arms(run),
        "filter_tiers": sorted({t for r in all_rows for t in r.tiers}, key=_tier_order),
        "filter_types": sorted({t for r in all_rows for t in r.types}),
    }


def _by_test(all_rows: Sequence[Row], arms: Sequence[str]) -> list[Row]:
    """Each test's arms next to each other, tests in plan order."""
    first: dict[str, int] = {}
    for r in all_rows:
        first.setdefault(r.test_id, len(first))
    rank = {arm: i for i, arm in enumerate(arms)}
    return sorted(all_rows, key=lambda r: (first[r.test_id], rank.get(r.arm, len(rank))))


def _tier_order(tier: str) -> tuple[int, str]:
    return (view.TIERS.index(tier) if tier in view.TIERS else len(view.TIERS), tier)


def _model_view(identity: ModelInfo | ModelError | None) -> dict[str, Any]:
    info = identity if isinstance(identity, ModelInfo) else None
    size = info.size if info is not None else None
    return {
        "label": view.model_label(identity) if identity else "unknown (not recorded)",
        "kind": info.kind if info is not None else None,
        "sha256": info.sha256 if info is not None else None,
        "short_sha": view.short_digest(info.sha256 if info is not None else None),
        "file": info.file if info is not None else None,
        "size": f"{size / 2**20:.1f} MiB" if isinstance(size, int) else None,
        "error": identity.error if identity is not None else None,
    }


def _judge_view(judge: JudgeInfo | None) -> dict[str, Any] | None:
    if judge is None:
        return None
    decoding = judge.decoding
    greedy = judge.greedy if judge.greedy is not None else (decoding.greedy if decoding else None)
    return {
        "model": _model_view(judge.model),
        "greedy": greedy is not False,
        "seed": judge.seed if judge.seed is not None else (decoding.seed if decoding else None),
        "same_as_generator": judge.same_as_generator,
    }


def _meter(name: str, tally: Tally | ArmSummary, *, unqualified: bool = False) -> dict[str, Any]:
    rate = tally.pass_rate
    return {
        "name": name,
        "unqualified": unqualified,
        "rate": rate,
        "passed": tally.passed,
        "failed": tally.failed,
        "errors": tally.errors,
        "judged": tally.passed + tally.failed,
        "width": 0.0 if rate is None else round(rate * 100, 2),
        "tone": _rate_tone(rate),
    }


def _rate_tone(rate: float | None) -> view.Tone:
    return view.rate_tone(rate)


def _arm_cards(run: Run) -> list[dict[str, Any]]:
    arms = run.summary.arms
    primary = view.primary_arm(run)
    cards = []
    for arm in view.arms(run):
        s = arms.get(arm)
        if s is None:
            continue
        cards.append(
            {
                "arm": arm,
                "primary": arm == primary,
                "overall": _meter("tests", s),
                "tiers": [
                    _meter(t, tally, unqualified=t == "model" and view.judge_unqualified(run))
                    for t, tally in view.tier_cells(s).items()
                ],
                "metrics": dict(s.metrics),
            }
        )
    return cards


# --------------------------------------------------------------------------- trigger


@frozen
class TriggerRow:
    """One test's routing decision, as the triggering card's table shows it."""

    test_id: str
    chosen: str | None
    correct: bool | None
    scores: Mapping[str, float] | None
    margin: float | None
    skill_margin: float | None
    error: str | None
    expected_label: str
    chosen_label: str

    @classmethod
    def of(cls, t: TriggerOutcome, skill: str | None) -> TriggerRow:
        return cls(
            test_id=t.test_id,
            chosen=t.chosen,
            correct=t.correct,
            scores=t.scores,
            margin=t.margin,
            skill_margin=t.skill_margin,
            error=t.error,
            expected_label=decision_label(t.expected, skill),
            chosen_label=decision_label(t.chosen, skill),
        )


def _trigger_view(trigger: Trigger | None, skill: str | None) -> dict[str, Any] | None:
    if trigger is None:
        return None
    labels = list(trigger.labels)
    matrix = [list(r) for r in trigger.matrix]
    grid = []
    for i, label in enumerate(labels):
        row = matrix[i] if i < len(matrix) else []
        total = sum(row)
        cells = []
        for j in range(len(labels)):
            count = row[j] if j < len(row) else 0
            share = count / total if total else 0.0
            cells.append(
                {
                    "count": count,
                    "alpha": round(0.08 + 0.72 * share, 3) if count else 0,
                    "diag": i == j,
                }
            )
        grid.append({"label": label, "cells": cells, "total": total})
    return {
        "data": trigger,
        "labels": labels,
        "grid": grid,
        "tests": [TriggerRow.of(t, skill) for t in trigger.tests],
        "misrouted": list(trigger.misrouted),
        "binary": {"tp": trigger.tp, "fp": trigger.fp, "tn": trigger.tn, "fn": trigger.fn},
        **_trigger_extras(trigger),
    }


def _trigger_extras(trigger: Trigger) -> dict[str, Any]:
    """The AUROC, calibrated figures and router fitness: the sentences the other reports print."""
    router = None
    if trigger.router is not None:
        status = trigger_view.router_status(trigger.router)
        router = {"label": status.label, "tone": status.tone, "text": status.text}
    return {
        "auroc": None
        if trigger.auroc is None
        else {"text": trigger_view.auroc_line(trigger.auroc)},
        "calibrated": None
        if trigger.calibrated is None
        else {"text": trigger_view.calibrated_line(trigger.calibrated)},
        "router": router,
    }


# --------------------------------------------------------------------------- overfitting


def _overfit_view(overfit: Overfit | None) -> dict[str, Any] | None:
    if overfit is None:
        return None
    return {
        "severity": overfit.severity,
        "tone": _SEVERITY_TONE.get(overfit.severity, "neutral"),
        "score": overfit.score,
        "reason": overfit.reason,
        "flagged": list(overfit.items),
    }


def _preference_line(run: Run) -> str | None:
    """The side-by-side judge's preference with its sign test, when a test uses it."""
    found = preference_view.preference(run)
    return None if found is None else found.line()
