"""A Markdown summary for CI step summaries and pull-request comments.

It says what a reviewer needs first: the verdict, each tier's pass rate per arm, the lift and
triggering figures, and the tests that did not pass with their reasons. Model text is escaped
so that it cannot become HTML or break the tables, and long lists are cut to stay well inside
the size limits of PR comments.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from skilleval.report import view

MAX_FAILING = 25
"""Failing test × arm rows listed before the rest are summarised as a count."""

_ICON = {"PASSED": "✅", "FAILED": "❌", "INTERRUPTED": "⚠️", "INCOMPLETE": "⚠️"}
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|#~])")


def md(text: object, limit: int = 200) -> str:
    """One line of user or model text, safe inside a Markdown table cell."""
    flat = " ".join(str(text).split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", flat)


def code(text: object, limit: int = 120) -> str:
    """Text as an inline code span: shown literally, so only backticks and pipes need care."""
    flat = " ".join(str(text).split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    # GFM splits table cells on | even inside code spans, unless it is escaped.
    flat = flat.replace("|", "\\|")
    fence = "``" if "`" in flat else "`"
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def _tally(t: Mapping[str, Any] | None) -> str:
    if not t or not (t.get("passed", 0) + t.get("failed", 0)):
        return "—"
    return f"{view.pct(t.get('pass_rate'))} ({view.ratio(t['passed'], t['failed'])})"


def _tiers_table(doc: Mapping[str, Any]) -> list[str]:
    arms = (doc.get("summary") or {}).get("arms") or {}
    primary = view.primary_arm(doc)
    lines = [
        "| arm | tests | deterministic tier | model tier | errors |",
        "|---|---|---|---|---|",
    ]
    for arm in view.arms(doc):
        s = arms.get(arm)
        if s is None:
            continue
        tiers = s.get("tiers") or {}
        name = f"**{arm}**" if arm == primary and len(arms) > 1 else arm
        lines.append(
            f"| {name} | {_tally(s)} | {_tally(tiers.get('deterministic'))} "
            f"| {_tally(tiers.get('model'))} | {s.get('errors', 0)} |"
        )
    return lines


def _lift_line(lift: Mapping[str, Any]) -> str:
    lo, hi = (lift.get("ci95") or [None, None])[:2]
    return (
        f"**Lift** (ON − OFF): {view.signed_pct(lift.get('lift'))}, "
        f"95% CI [{view.signed_pct(lo)}, {view.signed_pct(hi)}] · **{md(lift.get('verdict'))}**: "
        f"{md(lift.get('reason', ''), 400)}"
    )


def _trigger_line(trigger: Mapping[str, Any]) -> str:
    parts = [f"{k} {view.pct(trigger.get(k))}" for k in ("accuracy", "precision", "recall", "f1")]
    line = "**Triggering**: " + " · ".join(parts)
    missed = list(trigger.get("misrouted") or ())
    if missed:
        shown = ", ".join(code(t, 60) for t in missed[:10])
        line += f" · misrouted: {shown}" + (
            f" and {len(missed) - 10} more" if len(missed) > 10 else ""
        )
    return line


def _reliability_lines(reliability: Mapping[str, Any]) -> list[str]:
    out = []
    for arm, rel in reliability.items():
        points = [p for p in rel.get("aggregate") or () if p.get("pass_at_k")]
        if not points:
            continue
        last = points[-1]
        hat = last.get("pass_hat_k") or {}
        flaky = len(rel.get("flaky") or ())
        out.append(
            f"**Reliability** [{md(arm)}]: pass@1 {view.pct(points[0]['pass_at_k']['value'])} · "
            f"pass@{last['k']} {view.pct(last['pass_at_k']['value'])} · "
            f"pass^{last['k']} {view.pct(hat.get('value'))}"
            + (f" · {flaky} flaky test{'s' if flaky != 1 else ''}" if flaky else "")
        )
    return out


def _failing_table(doc: Mapping[str, Any]) -> list[str]:
    failing = view.failing(view.rows(doc))
    if not failing:
        return []
    multi = len(view.arms(doc)) > 1
    lines = [f"### Not passing ({len(failing)})", ""]
    lines.append("| test |" + (" arm |" if multi else "") + " result | why |")
    lines.append("|---|" + ("---|" if multi else "") + "---|---|")
    for row in failing[:MAX_FAILING]:
        result = row.status.upper() if row.trials == 1 else f"{row.passed}/{row.trials}"
        why = "<br>".join(md(r, 160) for r in row.reasons(limit=3)) or "—"
        arm = f" {row.arm} |" if multi else ""
        lines.append(f"| {code(row.test_id, 80)} |{arm} {result} | {why} |")
    if len(failing) > MAX_FAILING:
        lines += ["", f"… and {len(failing) - MAX_FAILING} more; see the HTML report."]
    return lines


def render_markdown(doc: Mapping[str, Any]) -> str:
    """Render a results document as a Markdown summary.

    Args:
        doc: A results document.

    Returns:
        GitHub-flavoured Markdown.
    """
    verdict = view.verdict(doc)
    env = doc.get("environment") or {}
    suite = doc.get("suite") or {}
    lines = [
        f"## {_ICON.get(verdict.label, '')} skilleval {verdict.label}: {code(view.suite_name(doc))}",
        "",
    ]
    facts = [
        f"{suite['type']} suite" if suite.get("type") else None,
        f"model **{md(view.model_label(env.get('model')), 80)}**" if env else None,
        md(view.decoding_label(doc)) if env else None,
        f"{view.trials_of(doc)} trial(s)",
        f"skill {code(doc['skill']['name'], 60)}" if doc.get("skill") else None,
        f"run {code(doc.get('run_id', ''), 80)}",
    ]
    lines += [" · ".join(f for f in facts if f), ""]
    if verdict.detail:
        lines += [f"> {md(verdict.detail, 600)}", ""]
    lines += [*_tiers_table(doc), ""]
    extras: list[str] = []
    if doc.get("lift"):
        extras.append(_lift_line(doc["lift"]))
    if doc.get("trigger"):
        extras.append(_trigger_line(doc["trigger"]))
    if doc.get("reliability"):
        extras += _reliability_lines(doc["reliability"])
    if doc.get("overfit"):
        o = doc["overfit"]
        flagged = len(o.get("items") or ())
        extras.append(
            f"**Overfitting**: {md(o.get('severity'))}"
            + (f" (score {view.num(o.get('score'))})" if o.get("score") is not None else "")
            + f", {flagged} item(s) flagged · {md(o.get('reason', ''), 300)}"
        )
    judge = doc.get("judge")
    if judge and judge.get("same_as_generator"):
        extras.append("**Judge**: the model under test grades its own outputs")
    for line in extras:
        lines += [line, ""]
    lines += _failing_table(doc)
    return "\n".join(lines).rstrip() + "\n"
