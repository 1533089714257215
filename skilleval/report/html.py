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
import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

import jinja2
import markupsafe

from skilleval.report import charts, preference_view, trigger_view, view
from skilleval.report.history import History
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
from skilleval.results.records import Record, TriggerOutcome
from skilleval.util.jinjacache import TEMPLATE_CACHE as TEMPLATE_CACHE  # re-exported: its old home
from skilleval.util.jinjacache import HomeBytecodeCache
from skilleval.version import __version__

TEMPLATE = "report.html.j2"

PREVIEW_CHARS = 2000
"""The most characters of one output the page embeds; the full text stays in results.jsonl."""
TEXT_CHARS = 8000
"""The most characters of any other run text the page embeds (a prompt, a reason, details)."""
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
    env.filters["pretty"] = _pretty
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
    row_views = [_row_view(i, r, skill_name) for i, r in enumerate(all_rows)]
    for before, after in itertools.pairwise(row_views):
        after["group_start"] = after["test_id"] != before["test_id"]
    table_data = _table_data(row_views) if len(row_views) > INLINE_ROWS else None
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
        "rows": [] if table_data is not None else row_views,
        "row_count": len(row_views),
        "test_count": len({r["test_id"] for r in row_views}),
        "table_data": table_data,
        "anchors": _anchors(row_views),
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


def _anchors(row_views: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Test id → the row to jump to: the routed arm's, else ON's, else the first."""
    rank = {"routed": 0, "on": 1}
    best: dict[str, tuple[int, str]] = {}
    for r in row_views:
        key = (rank.get(r["arm"], 2), r["dom_id"])
        if r["test_id"] not in best or key[0] < best[r["test_id"]][0]:
            best[r["test_id"]] = key
    return {test: dom for test, (_, dom) in best.items()}


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


def _label(value: bool | str | None, skill: str | None) -> str:
    """A decision as the matrix names it: True/False mean the skill or ``none``."""
    if isinstance(value, bool):
        return (skill or "skill") if value else "none"
    return "—" if value is None else str(value)


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
        "tests": [
            {
                "test_id": t.test_id,
                "expected": t.expected,
                "chosen": t.chosen,
                "triggered": t.triggered,
                "correct": t.correct,
                "scores": t.scores,
                "margin": t.margin,
                "skill_margin": t.skill_margin,
                "error": t.error,
                "expected_label": _label(t.expected, skill),
                "chosen_label": _label(t.chosen, skill),
            }
            for t in trigger.tests
        ],
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


# --------------------------------------------------------------------------- test rows


def _row_view(index: int, row: Row, skill: str | None) -> dict[str, Any]:
    latency = row.latency_ms
    return {
        "dom_id": f"t{index}",
        "group_start": False,
        "test_id": row.test_id,
        "arm": row.arm,
        "status": row.status,
        "flaky": row.flaky,
        "trials": row.trials,
        "passed": row.passed,
        "tiers": row.tiers,
        "tiers_attr": " ".join(row.tiers),
        "fail_tiers_attr": " ".join(t for t, s in row.tiers.items() if s != "pass"),
        "types_attr": " ".join(row.types),
        "fail_types_attr": " ".join(row.failed_types),
        "score": row.mean_score,
        "reasons": [_clipped(reason, PREVIEW_CHARS) for reason in row.reasons(limit=3)],
        "latency": f"{latency / row.trials:.0f} ms" if row.trials and latency else "—",
        "records": [_trial_view(r, skill) for r in row.records],
    }


def clip(text: str | None, limit: int = TEXT_CHARS) -> tuple[str, int]:
    """The first ``limit`` characters of ``text`` and how many were left out."""
    if not text:
        return "", 0
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def _clipped(text: str | None, limit: int = TEXT_CHARS) -> str:
    shown, cut = clip(text, limit)
    return f"{shown}… [{cut:,} more characters in results.jsonl]" if cut else shown


def _trial_view(record: Record, skill: str | None) -> dict[str, Any]:
    output, output_cut = clip(record.output, PREVIEW_CHARS)
    return {
        "trial": record.trial,
        "status": record.status,
        "score": record.score,
        "error": _clipped(record.error) or None,
        "prompt": _clipped(record.prompt),
        "messages": [{"role": m.role, "content": _clipped(m.content)} for m in record.messages],
        "output": output,
        "output_cut": output_cut,
        "output_chars": len(record.output),
        "asserts": [
            {
                "type": a.type,
                "metric": a.metric,
                "from_default": a.from_default,
                "tier": a.tier,
                "status": a.status,
                "score": a.score,
                "weight": a.weight,
                "reason": _clipped(a.reason),
                "error": _clipped(a.error) or None,
                "details": _clipped(_pretty(a.details)) if a.details else "",
                "where": a.where,
            }
            for a in record.asserts
        ],
        "stats": record.stats,
        "tiers": dict(record.tiers),
        "trigger": _decision(record.trigger, skill),
        "metrics": dict(record.metrics),
    }


def _pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def _stat_line(trial: Mapping[str, Any]) -> list[str]:
    """The facts under a trial, as the HTML rows show them."""
    stats = trial["stats"]
    out = []
    if stats is not None:
        if stats.prompt_tokens is not None:
            out.append(f"{stats.prompt_tokens} prompt tokens")
        if stats.completion_tokens is not None:
            out.append(f"{stats.completion_tokens} generated")
        if stats.latency_ms is not None:
            out.append(f"{stats.latency_ms:.0f} ms")
        if stats.finish_reason:
            out.append(f"finish: {stats.finish_reason}")
        if stats.cached:
            out.append("from cache")
    out.extend(f"{k} {v:.2f}" for k, v in trial["metrics"].items())
    return out


def _trigger_line(decision: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if decision is None:
        return None
    return {
        "chosen": decision["chosen"],
        "correct": decision["correct"],
        "expected": None if decision["expected"] is None else str(decision["expected"]),
        "margin": None if decision["margin"] is None else view.num(decision["margin"]),
        "error": decision["error"],
        "scores": [f"{label} {view.num(value, 4)}" for label, value in decision["scores"]],
    }


ROW_FIELDS = (
    "test", "arm", "status", "label", "flaky", "group", "tiers", "ft", "ty", "fty", "why",
    "score", "lat",
)  # fmt: skip
"""The fields of a row in the page's data, in order: each row is a list, to keep it small."""


def _row_data(row: Mapping[str, Any]) -> list[Any]:
    """One row as the page's script draws it: the same fields the HTML table shows."""
    label = row["status"].upper() if row["trials"] == 1 else f"{row['passed']}/{row['trials']}"
    return [
        row["test_id"],
        row["arm"],
        row["status"],
        label,
        1 if row["flaky"] else 0,
        1 if row["group_start"] else 0,
        list(row["tiers"].items()),
        row["fail_tiers_attr"].split(),
        row["types_attr"].split(),
        row["fail_types_attr"].split(),
        row["reasons"],
        f"{row['score']:.2f}",
        row["latency"],
    ]


def _row_details(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A row's trials as the page's script draws them when the row is opened."""
    return [
        {
            "title": f"trial {t['trial']}" if row["trials"] > 1 else row["test_id"],
            "status": t["status"],
            "score": f"{t['score'] or 0:.2f}",
            "error": t["error"],
            "messages": [[m["role"], m["content"]] for m in t["messages"]],
            "prompt": "" if t["messages"] else t["prompt"],
            "output": t["output"],
            "cut": t["output_cut"],
            "chars": t["output_chars"],
            "trigger": _trigger_line(t["trigger"]),
            "asserts": [
                [
                    a["type"],
                    a["metric"],
                    a["from_default"],
                    a["tier"],
                    a["status"],
                    view.num(a["score"]),
                    view.num(a["weight"]),
                    a["reason"],
                    a["error"],
                    a["details"],
                    a["where"],
                ]
                for a in t["asserts"]
            ],
            "stats": _stat_line(t),
        }
        for t in row["records"]
    ]


def _json_block(data: Any) -> markupsafe.Markup:
    """``data`` as JSON for a ``<script type="application/json">`` block.

    ``<``, ``>`` and ``&`` are written as JSON escapes, so no text in the data can end the
    block or start markup; the browser never runs the block, and the page's script only
    ever puts its strings into the page as text.
    """
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    for char, escape in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        text = text.replace(char, escape)
    return markupsafe.Markup(text)


def _table_data(row_views: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The rows, and apart from them the trials behind each: the page reads the trials only
    when a row is first opened, so a large report opens at the cost of its summary rows."""
    return {
        "fields": json.dumps(ROW_FIELDS),
        "rows": _json_block([_row_data(r) for r in row_views]),
        "details": _json_block([_row_details(r) for r in row_views]),
    }


def _decision(trigger: TriggerOutcome | None, skill: str | None) -> dict[str, Any] | None:
    """A record's trigger decision, with scores best first."""
    if trigger is None:
        return None
    ranked = sorted((trigger.scores or {}).items(), key=lambda kv: -kv[1])
    expected = trigger.expected
    return {
        "chosen": trigger.chosen,
        "expected": _label(expected, skill) if isinstance(expected, bool) else expected,
        "correct": trigger.correct,
        "margin": trigger.margin,
        "error": trigger.error,
        "scores": ranked,
        "other": {},
    }


def _preference_line(run: Run) -> str | None:
    """The side-by-side judge's preference with its sign test, when a test uses it."""
    found = preference_view.preference(run)
    return None if found is None else found.line()
