"""promptfoo's ``derivedMetrics``, computed for each arm from its results' named metrics.

A formula reads each metric's total over the arm's results (promptfoo's per-column named
scores) and ``count``, the number of results. The value joins the arm's metrics. A formula
that reads a metric no result recorded, or that does not give a finite number (a division by
a zero total …), leaves its metric out rather than show a made-up figure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from skilleval.errors import ExprRuntimeError
from skilleval.results.model import ArmSummary, Summary
from skilleval.results.records import Record
from skilleval.suite.derived import COUNT, js_body
from skilleval.suite.model import DerivedMetric


def with_derived(
    summary: Summary, records: Sequence[Record], derived: Sequence[DerivedMetric]
) -> Summary:
    """``summary`` with each arm's derived metrics added to its metrics."""
    if not derived:
        return summary
    arms = {
        arm: _arm(figures, [r for r in records if r.arm == arm], derived)
        for arm, figures in summary.arms.items()
    }
    return replace(summary, arms=arms)


def _arm(
    figures: ArmSummary, records: Sequence[Record], derived: Sequence[DerivedMetric]
) -> ArmSummary:
    totals: dict[str, float] = {}
    for record in records:
        for name, total in record.metrics.items():
            totals[name] = totals.get(name, 0.0) + total
    env: dict[str, float] = {**totals, COUNT: float(len(records))}
    added: dict[str, float] = {}
    for metric in derived:
        value: Any
        if metric.formula is None:
            # lazy: start-up time (the JavaScript engine's pool, for JavaScript formulas only)
            from skilleval.sandbox.jsengine import JsError, evaluate_number

            try:
                value = evaluate_number(js_body(metric.source), {**env, "__count": env[COUNT]})
            except JsError:
                continue
        else:
            if not metric.formula.names <= env.keys():
                continue
            try:
                value = metric.formula.evaluate(env)
            except ExprRuntimeError:
                continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isfinite(value):
            continue
        env[metric.name] = float(value)
        added[metric.name] = round(float(value), 6)
    if not added:
        return figures
    return replace(figures, metrics={**figures.metrics, **added})
