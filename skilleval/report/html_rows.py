"""The HTML report's test table: one typed row per test × arm, and its trials.

:func:`row_views` turns the shared :class:`~skilleval.report.view.Row` s into what the page
shows, with every embedded text bounded (:data:`PREVIEW_CHARS`, :data:`TEXT_CHARS`). Up to
:data:`~skilleval.report.html.INLINE_ROWS` rows the template writes them as HTML; past that
:func:`table_data` sends them as JSON the page's script draws.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import markupsafe

from skilleval.report import view
from skilleval.report.view import Row
from skilleval.results.records import AssertionResult, CallStats, Record, Status, TriggerOutcome
from skilleval.util.frozen import frozen

PREVIEW_CHARS = 2000
"""The most characters of one output the page embeds; the full text stays in results.jsonl."""
TEXT_CHARS = 8000
"""The most characters of any other run text the page embeds (a prompt, a reason, details)."""


@frozen
class AssertView:
    """One assertion's verdict on one trial, its texts bounded."""

    type: str
    metric: str | None
    from_default: bool
    tier: str
    status: Status
    score: float | None
    weight: float
    reason: str
    error: str | None
    details: str
    """The verdict's details as indented JSON; '' when it has none."""
    where: str


@frozen
class MessageView:
    role: str
    content: str


@frozen
class DecisionView:
    """A trial's trigger decision, with the options' scores best first."""

    chosen: str | None
    expected: str | None
    """The label that was wanted (the skill's name or ``none``); None when not labelled."""
    correct: bool | None
    margin: float | None
    error: str | None
    scores: tuple[tuple[str, float], ...]


@frozen
class TrialView:
    """One trial of a row, as its opened details show it."""

    trial: int
    status: Status
    score: float
    error: str | None
    prompt: str
    messages: tuple[MessageView, ...]
    output: str
    """The first :data:`PREVIEW_CHARS` characters of the output."""
    output_cut: int
    """How many characters of the output were left out."""
    output_chars: int
    asserts: tuple[AssertView, ...]
    stats: CallStats | None
    tiers: Mapping[str, Status]
    trigger: DecisionView | None
    metrics: Mapping[str, float]


@frozen
class RowView:
    """One test under one arm: its summary line, and its trials for the details."""

    dom_id: str
    group_start: bool
    """The first row of its test (rows of one test sit together)."""
    test_id: str
    arm: str
    status: Status
    flaky: bool
    trials: int
    passed: int
    tiers: Mapping[str, Status]
    tiers_attr: str
    fail_tiers_attr: str
    types_attr: str
    fail_types_attr: str
    score: float
    reasons: tuple[str, ...]
    latency: str
    records: tuple[TrialView, ...]


def row_views(rows: Sequence[Row], skill: str | None) -> list[RowView]:
    """The rows as the page shows them, each test's first row marked."""
    made = [_row_view(i, r, skill) for i, r in enumerate(rows)]
    for i, (before, after) in enumerate(itertools.pairwise(made), start=1):
        made[i] = replace(after, group_start=after.test_id != before.test_id)
    return made


def anchors(rows: Sequence[Row | RowView]) -> dict[str, str]:
    """Test id → the row to jump to: the routed arm's, else ON's, else the first (the i-th
    row is ``t{i}``, as :func:`row_views` names it)."""
    rank = {"routed": 0, "on": 1}
    best: dict[str, tuple[int, str]] = {}
    for i, r in enumerate(rows):
        key = (rank.get(r.arm, 2), f"t{i}")
        if r.test_id not in best or key[0] < best[r.test_id][0]:
            best[r.test_id] = key
    return {test: dom for test, (_, dom) in best.items()}


def decision_label(value: bool | str | None, skill: str | None) -> str:
    """A decision as the matrix names it: True/False mean the skill or ``none``."""
    if isinstance(value, bool):
        return (skill or "skill") if value else "none"
    return "—" if value is None else str(value)


def clip(text: str | None, limit: int = TEXT_CHARS) -> tuple[str, int]:
    """The first ``limit`` characters of ``text`` and how many were left out."""
    if not text:
        return "", 0
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def pretty(value: Any) -> str:
    """``value`` as indented JSON, for the page's ``<pre>`` blocks."""
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def _clipped(text: str | None, limit: int = TEXT_CHARS) -> str:
    shown, cut = clip(text, limit)
    return f"{shown}… [{cut:,} more characters in results.jsonl]" if cut else shown


def _row_view(index: int, row: Row, skill: str | None) -> RowView:
    latency = row.latency_ms
    return RowView(
        dom_id=f"t{index}",
        group_start=False,
        test_id=row.test_id,
        arm=row.arm,
        status=row.status,
        flaky=row.flaky,
        trials=row.trials,
        passed=row.passed,
        tiers=row.tiers,
        tiers_attr=" ".join(row.tiers),
        fail_tiers_attr=" ".join(t for t, s in row.tiers.items() if s != "pass"),
        types_attr=" ".join(row.types),
        fail_types_attr=" ".join(row.failed_types),
        score=row.mean_score,
        reasons=tuple(_clipped(reason, PREVIEW_CHARS) for reason in row.reasons(limit=3)),
        latency=f"{latency / row.trials:.0f} ms" if row.trials and latency else "—",
        records=tuple(_trial_view(r, skill) for r in row.records),
    )


def _trial_view(record: Record, skill: str | None) -> TrialView:
    output, output_cut = clip(record.output, PREVIEW_CHARS)
    return TrialView(
        trial=record.trial,
        status=record.status,
        score=record.score,
        error=_clipped(record.error) or None,
        prompt=_clipped(record.prompt),
        messages=tuple(MessageView(m.role, _clipped(m.content)) for m in record.messages),
        output=output,
        output_cut=output_cut,
        output_chars=len(record.output),
        asserts=tuple(_assert_view(a) for a in record.asserts),
        stats=record.stats,
        tiers=dict(record.tiers),
        trigger=_decision(record.trigger, skill),
        metrics=dict(record.metrics),
    )


def _assert_view(a: AssertionResult) -> AssertView:
    return AssertView(
        type=a.type,
        metric=a.metric,
        from_default=a.from_default,
        tier=a.tier,
        status=a.status,
        score=a.score,
        weight=a.weight,
        reason=_clipped(a.reason),
        error=_clipped(a.error) or None,
        details=_clipped(pretty(a.details)) if a.details else "",
        where=a.where,
    )


def _decision(trigger: TriggerOutcome | None, skill: str | None) -> DecisionView | None:
    if trigger is None:
        return None
    ranked = sorted((trigger.scores or {}).items(), key=lambda kv: -kv[1])
    expected = trigger.expected
    return DecisionView(
        chosen=trigger.chosen,
        expected=decision_label(expected, skill) if isinstance(expected, bool) else expected,
        correct=trigger.correct,
        margin=trigger.margin,
        error=trigger.error,
        scores=tuple(ranked),
    )


# --------------------------------------------------------------------------- rows as data


ROW_FIELDS = (
    "test", "arm", "status", "label", "flaky", "group", "tiers", "ft", "ty", "fty", "why",
    "score", "lat",
)  # fmt: skip
"""The fields of a row in the page's data, in order: each row is a list, to keep it small."""


def table_data(rows: Sequence[Row], skill: str | None) -> dict[str, str]:
    """The rows, and apart from them the trials behind each: the page reads the trials only
    when a row is first opened, so a large report opens at the cost of its summary rows.

    Built from the rows themselves, with the texts bounded as :func:`row_views` bounds them
    but without its view objects: a large run's page costs a fraction of its records."""
    data = []
    details = []
    previous: str | None = None
    for row in rows:
        data.append(_row_data(row, previous is not None and row.test_id != previous))
        details.append(_row_details(row, skill))
        previous = row.test_id
    return {
        "fields": json.dumps(ROW_FIELDS),
        "rows": _json_block(data),
        "details": _json_block(details),
    }


def _row_data(row: Row, group_start: bool) -> list[Any]:
    """One row as the page's script draws it: the same fields the HTML table shows."""
    trials = row.trials
    status = row.status
    label = status.upper() if trials == 1 else f"{row.passed}/{trials}"
    tiers = row.tiers
    latency = row.latency_ms
    return [
        row.test_id,
        row.arm,
        status,
        label,
        1 if row.flaky else 0,
        1 if group_start else 0,
        list(tiers.items()),
        " ".join(t for t, s in tiers.items() if s != "pass").split(),
        " ".join(row.types).split(),
        " ".join(row.failed_types).split(),
        [_clipped(reason, PREVIEW_CHARS) for reason in row.reasons(limit=3)],
        f"{row.mean_score:.2f}",
        f"{latency / trials:.0f} ms" if trials and latency else "—",
    ]


def _row_details(row: Row, skill: str | None) -> list[dict[str, Any]]:
    """A row's trials as the page's script draws them when the row is opened."""
    many = row.trials > 1
    out = []
    for r in row.records:
        output, output_cut = clip(r.output, PREVIEW_CHARS)
        messages = [[m.role, _clipped(m.content)] for m in r.messages]
        out.append(
            {
                "title": f"trial {r.trial}" if many else row.test_id,
                "status": r.status,
                "score": f"{r.score or 0:.2f}",
                "error": _clipped(r.error) or None,
                "messages": messages,
                "prompt": "" if messages else _clipped(r.prompt),
                "output": output,
                "cut": output_cut,
                "chars": len(r.output),
                "trigger": _trigger_line(_decision(r.trigger, skill)),
                "asserts": [
                    [
                        a.type,
                        a.metric,
                        a.from_default,
                        a.tier,
                        a.status,
                        view.num(a.score),
                        view.num(a.weight),
                        _clipped(a.reason),
                        _clipped(a.error) or None,
                        _clipped(pretty(a.details)) if a.details else "",
                        a.where,
                    ]
                    for a in r.asserts
                ],
                "stats": _stat_line(r.stats, r.metrics),
            }
        )
    return out


def _stat_line(stats: CallStats | None, metrics: Mapping[str, float]) -> list[str]:
    """The facts under a trial, as the HTML rows show them."""
    out = []
    if stats is not None:
        out.append(f"{stats.prompt_tokens} prompt tokens")
        out.append(f"{stats.completion_tokens} generated")
        out.append(f"{stats.latency_ms:.0f} ms")
        if stats.finish_reason:
            out.append(f"finish: {stats.finish_reason}")
        if stats.cached:
            out.append("from cache")
    out.extend(f"{k} {v:.2f}" for k, v in metrics.items())
    return out


def _trigger_line(decision: DecisionView | None) -> dict[str, Any] | None:
    if decision is None:
        return None
    return {
        "chosen": decision.chosen,
        "correct": decision.correct,
        "expected": decision.expected,
        "margin": None if decision.margin is None else view.num(decision.margin),
        "error": decision.error,
        "scores": [f"{label} {view.num(value, 4)}" for label, value in decision.scores],
    }


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
