"""Geometry for the HTML report's inline SVG charts: the lift interval, pass@k curves and
the suite's history.

Coordinates are computed here, in SVG user units, so the template only draws them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from skilleval.report import view
from skilleval.report.history import SATURATION_RUNS, SHOWN_IN_REPORT, History
from skilleval.results.model import Fraction, Lift, Reliability, ReliabilityPoint

_VERDICT_TONE: Mapping[str, view.Tone] = view.LIFT_TONE


# --------------------------------------------------------------------------- lift


_LIFT_W, _LIFT_X0, _LIFT_X1 = 640, 36, 604


def _lift_x(value: float) -> float:
    clamped = max(-1.0, min(1.0, value))
    return round(_LIFT_X0 + (clamped + 1) / 2 * (_LIFT_X1 - _LIFT_X0), 2)


def lift_view(lift: Lift | None) -> dict[str, Any] | None:
    """The lift block with its interval placed on a −100…+100 pp axis."""
    if lift is None:
        return None
    value = lift.lift
    lo, hi = lift.ci95 or (None, None)
    ticks = [
        {"x": _lift_x(t), "label": view.signed_pct(t, 0).replace(" pp", "")}
        for t in (-1.0, -0.5, 0.0, 0.5, 1.0)
    ]
    min_lift = float(lift.min_lift or 0.0)
    verdict = lift.verdict
    return {
        "data": lift,
        "tone": _VERDICT_TONE.get(verdict, "neutral"),
        "value": value,
        "lo": lo,
        "hi": hi,
        "svg": {
            "width": _LIFT_W,
            "zero": _lift_x(0.0),
            "ticks": ticks,
            "point": None if value is None else _lift_x(value),
            "lo": None if lo is None else _lift_x(lo),
            "hi": None if hi is None else _lift_x(hi),
            "min_lift": _lift_x(min_lift) if min_lift > 0 else None,
        },
        "votes": [
            {
                "test_id": t.test_id,
                "on": t.on,
                "off": t.off,
                "change": _vote_change(t.on, t.off),
            }
            for t in lift.tests
        ],
    }


def _vote_change(on: bool | None, off: bool | None) -> str:
    if on is None or off is None:
        return "undecided"
    if on == off:
        return "same"
    return "helped" if on else "hurt"


# --------------------------------------------------------------------------- pass@k curves


_CURVE_W, _CURVE_H = 420, 240
_CL, _CR, _CT, _CB = 46, 16, 14, 40


def _curve_xy(k: int, value: float, kmax: int) -> tuple[float, float]:
    span = _CURVE_W - _CL - _CR
    x = _CL + (span / 2 if kmax <= 1 else (k - 1) / (kmax - 1) * span)
    y = _CT + (1 - value) * (_CURVE_H - _CT - _CB)
    return round(x, 2), round(y, 2)


def _series(
    points: Sequence[ReliabilityPoint],
    pick: Callable[[ReliabilityPoint], Fraction | None],
    kmax: int,
) -> list[dict[str, Any]]:
    out = []
    for p in points:
        frac = pick(p)
        if frac is None:
            continue
        x, y = _curve_xy(p.k, frac.value, kmax)
        out.append({"k": p.k, "x": x, "y": y, "value": frac.value, "exact": frac.exact})
    return out


def curves(reliability: Mapping[str, Reliability] | None) -> list[dict[str, Any]]:
    """One pass@k / pass^k chart per arm, as SVG coordinates."""
    if not reliability:
        return []
    charts = []
    for arm, rel in reliability.items():
        points = list(rel.aggregate)
        kmax = max((p.k for p in points), default=1)
        at = _series(points, lambda p: p.pass_at_k, kmax)
        hat = _series(points, lambda p: p.pass_hat_k, kmax)
        step = max(1, (kmax + 9) // 10)
        charts.append(
            {
                "arm": arm,
                "width": _CURVE_W,
                "height": _CURVE_H,
                "left": _CL,
                "right": _CURVE_W - _CR,
                "bottom": _CURVE_H - _CB,
                "grid": [
                    {"y": _curve_xy(1, v, kmax)[1], "label": f"{v:.0%}"}
                    for v in (0.0, 0.25, 0.5, 0.75, 1.0)
                ],
                "xticks": [
                    {"x": _curve_xy(k, 0, kmax)[0], "label": k}
                    for k in range(1, kmax + 1)
                    if (k - 1) % step == 0 or k == kmax
                ],
                "at": at,
                "hat": hat,
                "at_path": " ".join(f"{p['x']},{p['y']}" for p in at),
                "hat_path": " ".join(f"{p['x']},{p['y']}" for p in hat),
                "points": points,
                "flaky": list(rel.flaky),
                "tests": list(rel.tests),
            }
        )
    return charts


# --------------------------------------------------------------------------- history


_HIST_W, _HIST_H = 640, 200
_HL, _HR, _HT, _HB = 46, 16, 14, 34
HISTORY_SHOWN = SHOWN_IN_REPORT


def _history_xy(index: int, value: float, count: int) -> tuple[float, float]:
    span = _HIST_W - _HL - _HR
    x = _HL + (span / 2 if count <= 1 else index / (count - 1) * span)
    y = _HT + (1 - value) * (_HIST_H - _HT - _HB)
    return round(x, 2), round(y, 2)


def _tick(started_at: str | None, one_day: bool) -> str:
    """A run's axis label: its time when every run is of one day, else its date."""
    if not started_at:
        return "?"
    return started_at[11:16] if one_day else started_at[5:10]


def history_chart(history: History | None, current: str) -> dict[str, Any] | None:
    """Pass rate per arm over the suite's runs, oldest on the left; None without earlier runs.

    Args:
        history: The suite's runs up to and including ``current``.
        current: The run the report is about, marked on the chart.
    """
    if history is None or len(history.runs) < 2:
        return None
    runs = history.runs[-HISTORY_SHOWN:]
    count = len(runs)
    one_day = len({(r.started_at or "")[:10] for r in runs}) == 1
    series = []
    for arm in history.arms:
        points = []
        for i, run in enumerate(runs):
            rate = run.pass_rates.get(arm)
            if rate is None:
                continue
            x, y = _history_xy(i, rate, count)
            points.append({"x": x, "y": y, "rate": rate, "run_id": run.run_id})
        series.append(
            {"arm": arm, "points": points, "path": " ".join(f"{p['x']},{p['y']}" for p in points)}
        )
    return {
        "width": _HIST_W,
        "height": _HIST_H,
        "left": _HL,
        "right": _HIST_W - _HR,
        "bottom": _HIST_H - _HB,
        "grid": [
            {"y": _history_xy(0, v, count)[1], "label": f"{v:.0%}"}
            for v in (0.0, 0.25, 0.5, 0.75, 1.0)
        ],
        "xticks": [
            {
                "x": _history_xy(i, 0, count)[0],
                "label": _tick(run.started_at, one_day),
                "current": run.run_id == current,
            }
            for i, run in enumerate(runs)
        ],
        "series": series,
        "runs": [
            {
                "run": run,
                "current": run.run_id == current,
                "lift_tone": view.LIFT_TONE.get(run.lift_verdict or "", "neutral"),
            }
            for run in reversed(runs)
        ],
        "shown": count,
        "total": len(history.runs),
        "arms": history.arms,
        "saturated": list(history.saturated),
        "saturation_runs": SATURATION_RUNS,
    }
