"""The side-by-side report of a run on several models: one column per model.

One view (:func:`matrix_view`) feeds the three renderings, so the terminal, Markdown and HTML
show the same figures: the headline rows (pass rate per arm, each tier, the lift and its
verdict, trigger accuracy and recall, the gate), then one row per test with its outcome under
each model.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from skilleval.report import view
from skilleval.results.blocks import TestRow
from skilleval.results.matrix import Column, Matrix
from skilleval.results.records import Tier
from skilleval.util.frozen import frozen
from skilleval.util.scrub import printable

if TYPE_CHECKING:
    import jinja2

TEMPLATE = "matrix.html.j2"

Cell = Callable[[Column], tuple[str, view.Tone]]
"""What one row shows for one model: the text and its tone."""


@frozen
class Line:
    """One row of the matrix: a label, then a cell per model."""

    label: str
    cells: tuple[str, ...]
    tones: tuple[view.Tone, ...] = ()
    kind: str = "figure"
    """``figure`` (a headline row) or ``test``."""


@frozen
class MatrixView:
    heads: tuple[str, ...]
    figures: tuple[Line, ...]
    tests: tuple[Line, ...]
    verdict: str


def matrix_view(matrix: Matrix) -> MatrixView:
    """The figures and test rows of ``matrix``, as text, a cell per column."""
    cols = matrix.columns
    arms = matrix.arms
    figures: list[Line] = [_line("status", cols, _status)]
    for arm in arms:
        prefix = f"[{arm}] " if len(arms) > 1 else ""
        figures.append(_line(f"{prefix}pass rate", cols, functools.partial(_rate, arm=arm)))
        for tier in view.TIERS:
            if not any(_graded(c, arm, tier) for c in cols):
                continue
            rate = functools.partial(_rate, arm=arm, tier=tier)
            figures.append(_line(f"{prefix}{tier} tier", cols, rate))
    if any(c.lift is not None for c in cols):
        figures.append(_line("lift (ON − OFF)", cols, _lift))
        figures.append(_line("lift verdict", cols, _lift_verdict))
    if any(c.trigger is not None for c in cols):
        figures.append(_line("trigger accuracy", cols, lambda c: _trigger(c, "accuracy")))
        figures.append(_line("trigger recall", cols, lambda c: _trigger(c, "recall")))
    figures.append(_line("gate", cols, _gate))
    tests = tuple(_test_line(test_id, cols, arms) for test_id in matrix.test_ids())
    passed = [c for c in cols if c.gate is not None and c.gate.passed]
    verdict = (
        f"{len(passed)} of {len(cols)} models passed the {matrix.suite.type or 'regression'} gate"
    )
    return MatrixView(tuple(c.label for c in cols), tuple(figures), tests, verdict)


def render_matrix_terminal(matrix: Matrix) -> str:
    """The side-by-side table for stderr, then where each model's run is written."""
    v = matrix_view(matrix)
    rows = [[line.label, *line.cells] for line in (*v.tests, *v.figures)]
    from tabulate import tabulate  # lazy: start-up time

    out = [tabulate(rows, headers=["", *v.heads], tablefmt="simple"), ""]
    for column in matrix.columns:
        where = column.run_dir or f"not run: {column.error}"
        out.append(f"{column.label}: {where}")
    out.append(v.verdict)
    return printable("\n".join(out))


def render_matrix_markdown(matrix: Matrix) -> str:
    """The side-by-side table as GitHub Markdown."""
    v = matrix_view(matrix)
    heads = ["", *(_md(h) for h in v.heads)]
    lines = [
        f"# skilleval: {_md(matrix.suite.path or 'suite')} on {len(v.heads)} models",
        "",
        f"**{_md(v.verdict)}**",
        "",
        "| " + " | ".join(heads) + " |",
        "|" + "---|" * len(heads),
    ]
    for line in v.figures:
        lines.append("| " + " | ".join([_md(line.label), *(_md(c) for c in line.cells)]) + " |")
    if v.tests:
        lines += ["", "| test | " + " | ".join(heads[1:]) + " |", "|" + "---|" * len(heads)]
        for line in v.tests:
            lines.append("| " + " | ".join([_md(line.label), *line.cells]) + " |")
    return "\n".join(lines) + "\n"


def render_matrix_html(matrix: Matrix) -> str:
    """The side-by-side table as one self-contained page with no script."""
    v = matrix_view(matrix)
    return (
        _environment().get_template(TEMPLATE).render(matrix=matrix, view=v, columns=matrix.columns)
    )


@functools.cache
def _environment() -> jinja2.Environment:
    import jinja2  # lazy: start-up time

    return jinja2.Environment(
        loader=jinja2.PackageLoader("skilleval", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _line(label: str, cols: Sequence[Column], cell: Cell) -> Line:
    texts: list[str] = []
    tones: list[view.Tone] = []
    for column in cols:
        text, tone = cell(column)
        texts.append(text)
        tones.append(tone)
    return Line(label, tuple(texts), tuple(tones))


def _status(c: Column) -> tuple[str, view.Tone]:
    if c.status == "error":
        return "error", "bad"
    return c.status, "good" if c.status == "complete" else "warn"


def _rate(c: Column, arm: str, tier: Tier | None = None) -> tuple[str, view.Tone]:
    s = c.summary.arms.get(arm) if c.summary else None
    if s is None:
        return "—", "neutral"
    tally = s if tier is None else s.tier(tier)
    rate = tally.pass_rate
    text = f"{view.pct(rate)} ({tally.passed}/{tally.passed + tally.failed})"
    if tally.errors:
        text += f", {tally.errors} err"
    tone: view.Tone = "neutral" if rate is None else ("good" if rate >= 0.8 else "warn")
    return text, tone


def _graded(c: Column, arm: str, tier: Tier) -> int:
    s = c.summary.arms.get(arm) if c.summary else None
    return 0 if s is None else s.tier(tier).total


def _lift(c: Column) -> tuple[str, view.Tone]:
    lift = c.lift
    if lift is None or lift.lift is None:
        return "—", "neutral"
    return f"{lift.lift:+.2f} (b={lift.b}, c={lift.c}, p={lift.p_two_sided:.3g})", "neutral"


def _lift_verdict(c: Column) -> tuple[str, view.Tone]:
    if c.lift is None:
        return "—", "neutral"
    verdict = c.lift.verdict
    tone: view.Tone = "good" if verdict == "helps" else "bad" if verdict == "hurts" else "warn"
    return verdict, tone


def _trigger(c: Column, what: str) -> tuple[str, view.Tone]:
    if c.trigger is None:
        return "—", "neutral"
    value = getattr(c.trigger, what)
    return view.pct(value), "neutral"


def _gate(c: Column) -> tuple[str, view.Tone]:
    if c.gate is None:
        return ("not run" if c.status == "error" else "—"), "bad"
    if c.gate.passed:
        return "passed", "good"
    return "failed: " + "; ".join(c.gate.reasons), "bad"


def _test_line(test_id: str, cols: Sequence[Column], arms: Sequence[str]) -> Line:
    primary = "on" if "on" in arms else arms[0]
    texts: list[str] = []
    tones: list[view.Tone] = []
    for column in cols:
        row = _row(column, test_id, primary)
        text, tone = _outcome(row)
        texts.append(text)
        tones.append(tone)
    return Line(test_id, tuple(texts), tuple(tones), kind="test")


def _row(column: Column, test_id: str, arm: str) -> TestRow | None:
    for row in column.summary.tests if column.summary else ():
        if row.test_id == test_id and row.arm == arm:
            return row
    return None


def _outcome(row: TestRow | None) -> tuple[str, view.Tone]:
    if row is None:
        return "—", "neutral"
    if row.trials > 1:
        tone: view.Tone = (
            "good" if row.passed == row.trials else "bad" if not row.passed else "warn"
        )
        return f"{row.passed}/{row.trials}", tone
    if row.errors:
        return "ERROR", "bad"
    return ("PASS", "good") if row.passed else ("FAIL", "bad")


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
