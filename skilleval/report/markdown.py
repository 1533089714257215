"""A Markdown summary for CI step summaries and pull-request comments.

It says what a reviewer needs first: the verdict, each tier's pass rate per arm, the lift and
triggering figures, and the tests that did not pass with their reasons. Model text is escaped
so that it cannot become HTML or break the tables, and long lists are cut to stay well inside
the size limits of PR comments.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from skilleval.report import preference_view, trigger_view, view
from skilleval.results.model import ArmSummary, Lift, Reliability, Run, Tally, Trigger

MAX_FAILING = 25
"""Failing test × arm rows listed before the rest are summarised as a count."""

_ICON = {"PASSED": "✅", "FAILED": "❌", "REPORTED": "ℹ️", "INTERRUPTED": "⚠️", "INCOMPLETE": "⚠️"}
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


def _tally(t: Tally | ArmSummary | None) -> str:
    if t is None or not (t.passed + t.failed):
        return "—"
    return f"{view.pct(t.pass_rate)} ({view.ratio(t.passed, t.failed)})"


def _tiers_table(run: Run) -> list[str]:
    arms = run.summary.arms
    primary = view.primary_arm(run)
    lines = [
        "| arm | tests | deterministic tier | model tier | errors |",
        "|---|---|---|---|---|",
    ]
    for arm in view.arms(run):
        s = arms.get(arm)
        if s is None:
            continue
        name = f"**{arm}**" if arm == primary and len(arms) > 1 else arm
        model = _tally(s.tier("model"))
        if view.judge_unqualified(run):
            model = f"_{model}_ ({view.UNQUALIFIED_TAG})"
        lines.append(
            f"| {name} | {_tally(s)} | {_tally(s.tier('deterministic'))} | {model} | {s.errors} |"
        )
    return lines


def _lift_line(lift: Lift) -> str:
    lo, hi = lift.ci95 or (None, None)
    return (
        f"**Lift** (ON − OFF): {view.signed_pct(lift.lift)}, "
        f"95% CI [{view.signed_pct(lo)}, {view.signed_pct(hi)}] · **{md(lift.verdict)}**: "
        f"{md(lift.reason, 400)}"
    )


def _trigger_line(trigger: Trigger) -> str:
    rates = (
        ("accuracy", trigger.accuracy),
        ("precision", trigger.precision),
        ("recall", trigger.recall),
        ("f1", trigger.f1),
    )
    line = "**Triggering**: " + " · ".join(f"{k} {view.pct(v)}" for k, v in rates)
    missed = list(trigger.misrouted)
    if missed:
        shown = ", ".join(code(t, 60) for t in missed[:10])
        line += f" · misrouted: {shown}" + (
            f" and {len(missed) - 10} more" if len(missed) > 10 else ""
        )
    return line


def _trigger_extras(trigger: Trigger) -> list[str]:
    """The AUROC, the calibrated figures and the router's fitness, each on its own line."""
    out = []
    if trigger.auroc is not None:
        out.append(f"**Trigger AUROC**: {md(trigger_view.auroc_line(trigger.auroc), 600)}")
    if trigger.calibrated is not None:
        line = trigger_view.calibrated_line(trigger.calibrated)
        out.append(f"**Calibrated triggering**: {md(line, 600)}")
    if trigger.router is not None:
        status = trigger_view.router_status(trigger.router)
        out.append(f"**Router**: {md(status.text, 600)}")
    return out


def _reliability_lines(reliability: Mapping[str, Reliability]) -> list[str]:
    out = []
    for arm, rel in reliability.items():
        points = [p for p in rel.aggregate if p.pass_at_k]
        if not points:
            continue
        first, last = points[0].pass_at_k, points[-1]
        assert first is not None
        assert last.pass_at_k is not None
        hat = last.pass_hat_k.value if last.pass_hat_k is not None else None
        flaky = len(rel.flaky)
        out.append(
            f"**Reliability** [{md(arm)}]: pass@1 {view.pct(first.value)} · "
            f"pass@{last.k} {view.pct(last.pass_at_k.value)} · "
            f"pass^{last.k} {view.pct(hat)}"
            + (f" · {flaky} flaky test{'s' if flaky != 1 else ''}" if flaky else "")
        )
    return out


def _failing_table(run: Run) -> list[str]:
    failing = view.failing(view.rows(run))
    if not failing:
        return []
    multi = len(view.arms(run)) > 1
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


def render_markdown(run: Run) -> str:
    """Render a run as a Markdown summary.

    Args:
        run: The run's results.

    Returns:
        GitHub-flavoured Markdown.
    """
    verdict = view.verdict(run)
    env = run.environment
    facts_line = "".join(f" · {md(f.text)}" for f in view.headline_facts(run))
    lines = [
        f"## {_ICON.get(verdict.label, '')} skilleval {verdict.headline}: "
        f"{code(view.suite_name(run))}{facts_line}",
        "",
    ]
    facts = [
        f"{run.suite.type} suite" if run.suite.type else None,
        f"model **{md(view.model_label(env.model), 80)}**" if env else None,
        md(view.decoding_label(run)) if env else None,
        f"{view.trials_of(run)} trial(s)",
        f"skill {code(run.skill.name, 60)}" if run.skill else None,
        f"run {code(run.run_id, 80)}",
    ]
    lines += [" · ".join(f for f in facts if f), ""]
    if verdict.detail:
        lines += [f"> {md(verdict.detail, 600)}", ""]
    lines += [*_tiers_table(run), ""]
    extras: list[str] = []
    if run.lift:
        extras.append(_lift_line(run.lift))
    preferred = preference_view.preference(run)
    if preferred is not None:
        extras.append(md(preferred.line(), 400))
    if run.trigger:
        extras.append(_trigger_line(run.trigger))
        extras.extend(_trigger_extras(run.trigger))
    if run.reliability:
        extras += _reliability_lines(run.reliability)
    if run.overfit:
        o = run.overfit
        extras.append(
            f"**Overfitting**: {md(o.severity)}"
            + (f" (score {view.num(o.score)})" if o.score is not None else "")
            + f", {len(o.items)} item(s) flagged · {md(o.reason, 300)}"
        )
    fitness = view.judge_fitness_line(run)
    if fitness is not None:
        shown = f"⚠️ _{md(fitness, 400)}_" if view.judge_unqualified(run) else md(fitness, 400)
        extras.append(f"**Judge fitness**: {shown}")
    compared = view.side_by_side_fitness_line(run)
    if compared is not None:
        text = md(compared[0], 400)
        extras.append(f"**Side-by-side judge fitness**: {f'⚠️ _{text}_' if compared[1] else text}")
    if view.judge_grades_itself(run):
        extras.append("**Judge**: the model under test grades its own outputs")
    for line in extras:
        lines += [line, ""]
    lines += _failing_table(run)
    return "\n".join(lines).rstrip() + "\n"
