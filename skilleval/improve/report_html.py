"""The improvement report as one self-contained HTML page: the decision, the split, a
per-round chart, and every candidate with its figures and diff.

Figures and chart geometry are computed here from the JSON report; the template
(``templates/improve.html.j2`` beside this module) only lays them out, with autoescaping on
and no script at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_W, _H, _LEFT, _TOP, _BOTTOM_PAD = 640, 200, 40, 10, 26
_BAR, _GAP, _GROUP_GAP = 18, 4, 28


def diff_lines(diff: str) -> list[dict[str, str]]:
    """Each diff line with its kind, for colouring."""
    out = []
    for line in diff.splitlines(keepends=True):
        kind = "hunk" if line.startswith(("@@", "---", "+++")) else ""
        kind = kind or ("add" if line.startswith("+") else "del" if line.startswith("-") else "")
        # Each line is a block of its own: its newline would add an empty one.
        out.append({"kind": kind, "text": line.rstrip("\n") or " "})
    return out


def _share(f: Mapping[str, Any]) -> float:
    return f["passed"] / f["tests"] if f["tests"] else 0.0


def round_chart(doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """Bars per round: the current skill's and each measured candidate's selection share."""
    bottom = _H - _BOTTOM_PAD
    span = bottom - _TOP
    bars: list[dict[str, Any]] = []
    ticks: list[dict[str, Any]] = []
    x = _LEFT + 10
    for record in doc["rounds"]:
        start = x
        current = record.get("current_figures")
        if current is None:
            continue
        group = [("current skill", _share(current["selection"]), "current")]
        for cand in doc["candidates"]:
            if cand["round"] != record["round"] or not cand["figures"]:
                continue
            kind = (
                "accepted"
                if cand["status"] == "accepted"
                else "chosen"
                if cand["name"] == record["chosen"]
                else ""
            )
            group.append((cand["name"], _share(cand["figures"]["selection"]["candidate"]), kind))
        for name, share, kind in group:
            h = max(1.5, round(share * span, 2))  # a 0% bar stays visible
            bars.append(
                {
                    "x": x,
                    "y": round(bottom - h, 2),
                    "w": _BAR,
                    "h": h,
                    "kind": kind,
                    "label": f"{share:.0%}",
                    "title": f"round {record['round']}: {name} {share:.0%}",
                }
            )
            x += _BAR + _GAP
        ticks.append({"x": start, "label": f"round {record['round']}"})
        x += _GROUP_GAP
    if not bars:
        return None
    return {
        "width": max(_W, x),
        "height": _H,
        "left": _LEFT,
        "bottom": bottom,
        "grid": [{"y": round(bottom - v * span, 2), "label": f"{v:.0%}"} for v in (0.0, 0.5, 1.0)],
        "bars": bars,
        "ticks": ticks,
    }


def render(doc: Mapping[str, Any], cost: Mapping[str, Any], current_text: str) -> str:
    """The page, as text."""
    # lazy: start-up time (jinja2 is the report's heavy import)
    import jinja2

    from skilleval.util.jinjacache import HomeBytecodeCache

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("skilleval.improve", "templates"),
        bytecode_cache=HomeBytecodeCache("improve"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    candidates = [dict(c, diff_lines=diff_lines(c["diff"])) for c in doc["candidates"]]
    shown = dict(doc, candidates=candidates)
    return env.get_template("improve.html.j2").render(
        doc=shown, cost=cost, chart=round_chart(doc), current=current_text
    )
