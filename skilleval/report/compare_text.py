"""The human report of a comparison of two runs."""

from __future__ import annotations

import difflib

from tabulate import tabulate

from skilleval.report import view
from skilleval.report.compare_model import Comparison, Delta
from skilleval.util.scrub import printable

__all__ = ["render_text"]


def _snippet(before: str, after: str, width: int = 6) -> list[str]:
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=1)
    lines = [d for d in diff if not d.startswith(("---", "+++", "@@"))]
    cut = [f"      {line[:117] + '…' if len(line) > 118 else line}" for line in lines[:width]]
    if len(lines) > width:
        cut.append(f"      … {len(lines) - width} more changed line(s)")
    return cut


def _delta_row(d: Delta, as_pct: bool = True) -> list[str]:
    fmt = (lambda v: view.pct(v, 1)) if as_pct else view.num
    return [
        d.name,
        fmt(d.before),
        fmt(d.after),
        view.signed_pct(d.change) if as_pct else view.num(d.change),
    ]


def render_text(c: Comparison) -> str:
    """The human report of a comparison."""
    out = [
        f"A  {c.a.run_id}  {c.a.suite or ''}  ({c.a.verdict})",
        f"B  {c.b.run_id}  {c.b.suite or ''}  ({c.b.verdict})",
    ]
    out += [f"warning: {w}" for w in c.warnings]
    for s in c.settings:
        out.append(f"changed: {s.name} {s.a} → {s.b}")
    out.append("")
    table = [
        [t.arm, t.tier, view.pct(t.a, 1), view.pct(t.b, 1), view.signed_pct(t.change)]
        for t in c.tiers
        if t.a is not None or t.b is not None
    ]
    if table:
        out.append(f"pass rates over the {c.shared_tests} shared test(s):")
        out.append(tabulate(table, headers=["arm", "tier", "A", "B", "change"], tablefmt="simple"))
        out.append("")
    if c.lift is not None:
        verdicts = c.lift_verdicts or (None, None)
        out.append(f"lift: verdict {verdicts[0] or '—'} → {verdicts[1] or '—'}")
        rows = [_delta_row(d) for d in c.lift[:3]] + [_delta_row(c.lift[3], as_pct=False)]
        out.append(tabulate(rows, headers=["", "A", "B", "change"], tablefmt="simple"))
        out.append("")
    if c.trigger is not None:
        out.append("trigger:")
        out.append(
            tabulate(
                [_delta_row(d) for d in c.trigger],
                headers=["", "A", "B", "change"],
                tablefmt="simple",
            )
        )
        out.append("")
    for change, title in (("newly_failing", "newly failing"), ("newly_passing", "newly passing")):
        found = c.by_change(change)  # type: ignore[arg-type]
        out.append(f"{title} ({len(found)})" + (":" if found else ""))
        for t in found:
            out.append(f"  {t.test_id} [{t.arm}] {t.before} → {t.after}")
            out += [f"      {r}" for r in t.reasons_b]
    changed = [t for t in c.tests if t.output_changed]
    out.append(f"changed outputs ({len(changed)})" + (":" if changed else ""))
    for t in changed[:20]:
        out.append(f"  {t.test_id} [{t.arm}]")
        out += _snippet("\n".join(t.outputs_a), "\n".join(t.outputs_b))
    if len(changed) > 20:
        out.append(f"  … and {len(changed) - 20} more")
    only_a, only_b = c.by_change("only_in_a"), c.by_change("only_in_b")
    if only_a or only_b:
        out.append(f"only in A: {len(only_a)} · only in B: {len(only_b)}")
    out.append("")
    if c.regressed:
        tail = "" if c.gating else " (capability suite: reported only)"
        out.append("REGRESSION" + tail + ": " + "; ".join(c.regressions))
    else:
        out.append("no regression")
    return printable("\n".join(out))
