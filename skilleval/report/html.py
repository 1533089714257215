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

from skilleval import __version__
from skilleval.report import charts, view
from skilleval.report.view import Row

TEMPLATE = "report.html.j2"

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
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = view.pct
    env.filters["signed_pct"] = view.signed_pct
    env.filters["num"] = view.num
    env.filters["csp_hash"] = lambda script: markupsafe.Markup(csp_hash(script))
    env.filters["pretty"] = lambda v: json.dumps(v, ensure_ascii=False, indent=2, default=str)
    return env


def render_html(doc: Mapping[str, Any]) -> str:
    """Render a results document as a standalone HTML page.

    Args:
        doc: A results document (see ``schemas/results.schema.json``); the optional skill,
            judge, lift, trigger, reliability and overfit blocks are shown when present.

    Returns:
        The page, as text.
    """
    return _environment().get_template(TEMPLATE).render(**context(doc))


def context(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the template shows, already computed and formatted."""
    suite = doc.get("suite") or {}
    env = doc.get("environment") or {}
    all_rows = _by_test(view.rows(doc), view.arms(doc))
    skill_name = (doc.get("skill") or {}).get("name")
    row_views = [_row_view(i, r, skill_name) for i, r in enumerate(all_rows)]
    for before, after in itertools.pairwise(row_views):
        after["group_start"] = after["test_id"] != before["test_id"]
    timing = doc.get("timing") or {}
    return {
        "doc": doc,
        "title": view.suite_name(doc),
        "suite": suite,
        "verdict": view.verdict(doc),
        "notes": list(doc.get("notes") or ()),
        "run_id": doc.get("run_id", ""),
        "status": doc.get("status", "complete"),
        "started_at": timing.get("started_at"),
        "duration_s": timing.get("duration_s"),
        "writer": doc.get("skilleval"),
        "renderer": __version__,
        "model": _model_view(env.get("model")),
        "decoding": view.decoding_label(doc),
        "trials": view.trials_of(doc),
        "gate": doc.get("gate"),
        "calls": doc.get("calls"),
        "env": env,
        "skill": doc.get("skill"),
        "judge": _judge_view(doc.get("judge")),
        "arm_cards": _arm_cards(doc),
        "multi_arm": len(view.arms(doc)) > 1,
        "lift": charts.lift_view(doc.get("lift")),
        "curves": charts.curves(doc.get("reliability")),
        "trigger": _trigger_view(doc.get("trigger"), (doc.get("skill") or {}).get("name")),
        "overfit": _overfit_view(doc.get("overfit")),
        "rows": row_views,
        "anchors": _anchors(row_views),
        "failing_count": sum(1 for r in all_rows if r.status != "pass"),
        "filter_arms": view.arms(doc),
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


def _model_view(identity: Mapping[str, Any] | None) -> dict[str, Any]:
    identity = identity or {}
    size = identity.get("size")
    return {
        "label": view.model_label(identity) if identity else "unknown (not recorded)",
        "kind": identity.get("kind"),
        "sha256": identity.get("sha256"),
        "short_sha": view.short_digest(identity.get("sha256")),
        "file": identity.get("file"),
        "size": f"{size / 2**20:.1f} MiB" if isinstance(size, int) else None,
        "error": identity.get("error"),
    }


def _judge_view(judge: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not judge:
        return None
    decoding = judge.get("decoding") or {}
    greedy = judge.get("greedy", decoding.get("greedy"))
    return {
        "model": _model_view(judge.get("model")),
        "greedy": greedy is not False,
        "seed": judge.get("seed", decoding.get("seed")),
        "same_as_generator": bool(judge.get("same_as_generator")),
    }


def _meter(name: str, tally: Mapping[str, Any]) -> dict[str, Any]:
    rate = tally.get("pass_rate")
    passed, failed = int(tally.get("passed", 0)), int(tally.get("failed", 0))
    return {
        "name": name,
        "rate": rate,
        "passed": passed,
        "failed": failed,
        "errors": int(tally.get("errors", 0)),
        "judged": passed + failed,
        "width": 0.0 if rate is None else round(rate * 100, 2),
        "tone": _rate_tone(rate),
    }


def _rate_tone(rate: float | None) -> view.Tone:
    if rate is None:
        return "neutral"
    return "good" if rate >= 0.9 else "warn" if rate >= 0.6 else "bad"


def _arm_cards(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    arms = (doc.get("summary") or {}).get("arms") or {}
    primary = view.primary_arm(doc)
    cards = []
    for arm in view.arms(doc):
        s = arms.get(arm)
        if s is None:
            continue
        cards.append(
            {
                "arm": arm,
                "primary": arm == primary,
                "overall": _meter("tests", s),
                "tiers": [_meter(t, tally) for t, tally in view.tier_cells(s).items()],
                "metrics": dict(s.get("metrics") or {}),
            }
        )
    return cards


# --------------------------------------------------------------------------- trigger


def _label(value: Any, skill: str | None) -> str:
    """A decision as the matrix names it: True/False mean the skill or ``none``."""
    if isinstance(value, bool):
        return (skill or "skill") if value else "none"
    return "—" if value is None else str(value)


def _trigger_view(trigger: Mapping[str, Any] | None, skill: str | None) -> dict[str, Any] | None:
    if not trigger:
        return None
    labels = list(trigger.get("labels") or ())
    matrix = [list(r) for r in trigger.get("matrix") or ()]
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
                **t,
                "expected_label": _label(t.get("expected"), skill),
                "chosen_label": _label(t.get("chosen"), skill),
                "error": t.get("error"),
            }
            for t in trigger.get("tests") or ()
        ],
        "misrouted": list(trigger.get("misrouted") or ()),
        "binary": {k: trigger.get(k) for k in ("tp", "fp", "tn", "fn")},
    }


# --------------------------------------------------------------------------- overfitting


def _overfit_view(overfit: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not overfit:
        return None
    severity = str(overfit.get("severity", "Unknown"))
    return {
        "severity": severity,
        "tone": _SEVERITY_TONE.get(severity, "neutral"),
        "score": overfit.get("score"),
        "reason": overfit.get("reason", ""),
        "flagged": list(overfit.get("items") or ()),
    }


# --------------------------------------------------------------------------- test rows


def _row_view(index: int, row: Row, skill: str | None) -> dict[str, Any]:
    latency = row.stat_total("latency_ms")
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
        "reasons": row.reasons(limit=3),
        "latency": f"{latency / row.trials:.0f} ms" if row.trials and latency else "—",
        "records": [_trial_view(r, skill) for r in row.records],
    }


def _trial_view(record: Mapping[str, Any], skill: str | None) -> dict[str, Any]:
    stats = dict(record.get("stats") or {})
    return {
        "trial": record.get("trial", 0),
        "status": record["status"],
        "score": record.get("score"),
        "error": record.get("error"),
        "prompt": record.get("prompt", ""),
        "messages": list(record.get("messages") or ()),
        "output": record.get("output", ""),
        "asserts": list(record.get("asserts") or ()),
        "stats": stats,
        "tiers": dict(record.get("tiers") or {}),
        "trigger": _decision(record.get("trigger"), skill),
        "metrics": dict(record.get("metrics") or {}),
    }


_DECISION_KEYS = (
    "test_id",
    "expected",
    "chosen",
    "triggered",
    "correct",
    "scores",
    "margin",
    "error",
)


def _decision(trigger: Any, skill: str | None) -> dict[str, Any] | None:
    """A record's trigger decision, with scores best first and anything unknown kept raw."""
    if not isinstance(trigger, Mapping):
        return None
    scores = trigger.get("scores")
    ranked = sorted(scores.items(), key=lambda kv: -kv[1]) if isinstance(scores, Mapping) else []
    expected = trigger.get("expected")
    return {
        "chosen": trigger.get("chosen"),
        "expected": _label(expected, skill) if isinstance(expected, bool) else expected,
        "correct": trigger.get("correct"),
        "margin": trigger.get("margin"),
        "error": trigger.get("error"),
        "scores": ranked,
        "other": {k: v for k, v in trigger.items() if k not in _DECISION_KEYS},
    }
