"""The summary judge-check and router-check print on stderr once a fitness check has run.

Each command writes its own figure lines; this module frames them the same way for both: why
the model could not run at all, else the lines, a note when every answer was the same, and
the time taken.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import click


class CheckReport(Protocol):
    """What the frame reads of a judge-check or router-check report."""

    @property
    def aborted(self) -> str | None: ...

    @property
    def constant(self) -> bool: ...

    @property
    def seconds(self) -> float: ...


def figure(value: float | None) -> str:
    """A rate or score with two decimals, or ``n/a`` when there was nothing to count."""
    return "n/a" if value is None else f"{value:.2f}"


def echo_summary(
    report: CheckReport, role: str, figures: Callable[[], list[str]], same_answer: str
) -> None:
    """Print ``figures()`` for a check of the ``role`` model (``judge``, ``router``).

    ``same_answer`` ends the note shown when the model gave one answer to everything
    ("output the same grade"). Nothing but why is printed when the model could not run.
    """
    if report.aborted:
        click.echo(f"error: the {role} could not run: {report.aborted}", err=True)
        return
    lines = figures()
    if report.constant:
        lines.append(f"note: the {role} gave every {same_answer}; it cannot tell them apart")
    click.echo("\n".join(lines), err=True)
    click.echo(f"{report.seconds:.1f}s", err=True)
