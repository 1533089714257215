"""CSV with one row per test × arm, for spreadsheets and quick scripts.

Text cells that a spreadsheet would run as a formula (starting with ``=``, ``+``, ``-``, ``@``
or a tab) get a leading apostrophe: a model can be talked into writing ``=HYPERLINK(…)``.
With several trials, ``output`` is the first trial's and the counts cover all of them.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from skilleval.report import view
from skilleval.report.view import Row
from skilleval.results.model import Run

COLUMNS: tuple[str, ...] = (
    "test_id",
    "arm",
    "status",
    "trials",
    "passed",
    "failed",
    "errors",
    "pass_rate",
    "score",
    "deterministic",
    "model",
    "failed_assertions",
    "reasons",
    "output",
    "prompt_tokens",
    "completion_tokens",
    "latency_ms",
    "cached",
)

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _text(value: str) -> str:
    return "'" + value if value.startswith(_FORMULA_START) else value


def _row(row: Row) -> dict[str, Any]:
    judged = row.passed + row.failed
    tiers = row.tiers
    return {
        "test_id": _text(row.test_id),
        "arm": row.arm,
        "status": row.status,
        "trials": row.trials,
        "passed": row.passed,
        "failed": row.failed,
        "errors": row.errors,
        "pass_rate": f"{row.passed / judged:.4f}" if judged else "",
        "score": f"{row.mean_score:.4f}",
        "deterministic": tiers.get("deterministic", ""),
        "model": tiers.get("model", ""),
        "failed_assertions": " ".join(row.failed_types),
        "reasons": _text(" | ".join(row.reasons())),
        "output": _text(row.records[0].output if row.records else ""),
        "prompt_tokens": row.prompt_tokens,
        "completion_tokens": row.completion_tokens,
        "latency_ms": f"{row.latency_ms:.1f}",
        "cached": sum(1 for r in row.records if r.stats is not None and r.stats.cached),
    }


def render_csv(run: Run) -> str:
    """Render a run as CSV (header row first, CRLF line ends as RFC 4180 asks).

    Args:
        run: The run's results.

    Returns:
        The CSV text.
    """
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS)
    writer.writeheader()
    for row in view.rows(run):
        writer.writerow(_row(row))
    return buffer.getvalue()
