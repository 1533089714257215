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
from collections.abc import Sequence
from typing import Any

import jinja2
import markupsafe

from skilleval.report import charts, preference_view, view
from skilleval.report.history import History
from skilleval.report.html_cards import JudgeCard, ModelCard, OverfitCard, TriggerCard, arm_cards
from skilleval.report.html_rows import (
    PREVIEW_CHARS as PREVIEW_CHARS,  # re-exported: its old home
)
from skilleval.report.html_rows import TEXT_CHARS as TEXT_CHARS  # re-exported: its old home
from skilleval.report.html_rows import anchors, pretty, row_views, table_data
from skilleval.report.view import Row
from skilleval.results.model import Run
from skilleval.util.jinjacache import TEMPLATE_CACHE as TEMPLATE_CACHE  # re-exported: its old home
from skilleval.util.jinjacache import HomeBytecodeCache
from skilleval.version import __version__

TEMPLATE = "report.html.j2"

INLINE_ROWS = 1000
"""Up to this many rows the table is written as HTML; beyond, the rows travel as JSON data
and the page's script draws the ones the filters select, a page at a time."""


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
        "model": ModelCard.of(run.environment.model if run.environment is not None else None),
        "decoding": view.decoding_label(run),
        "trials": view.trials_of(run),
        "gate": run.gate,
        "calls": run.calls,
        "env": run.environment,
        "skill": run.skill,
        "judge": JudgeCard.of(run.judge),
        "arm_cards": arm_cards(run),
        "multi_arm": len(view.arms(run)) > 1,
        "lift": charts.lift_view(run.lift),
        "preference": _preference_line(run),
        "curves": charts.curves(run.reliability),
        "trigger": TriggerCard.of(run.trigger, skill_name),
        "overfit": OverfitCard.of(run.overfit),
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


def _preference_line(run: Run) -> str | None:
    """The side-by-side judge's preference with its sign test, when a test uses it."""
    found = preference_view.preference(run)
    return None if found is None else found.line()
