"""A progress bar on stderr for long runs: results done of the total, cache hits and tokens/s.

It only ever appears on an interactive terminal. When stderr is piped or redirected, or the
user asked for quiet, the callback does nothing at all, so logs and CI output stay clean.
The bar is transient: it is erased when the run ends, leaving the summary in its place.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from skilleval.results.records import Record
    from skilleval.runner.options import Progress


@dataclass
class Tally:
    """Running counts behind the bar's status text."""

    started: float = field(default_factory=time.perf_counter)
    cache_hits: int = 0
    failed: int = 0
    errors: int = 0
    generated: int = 0
    """Completion tokens produced by real model calls (cache hits excluded)."""

    def add(self, record: Record) -> None:
        stats = record.stats
        if stats is not None and stats.cached:
            self.cache_hits += 1
        elif stats is not None:
            self.generated += stats.completion_tokens
        if record.status == "fail":
            self.failed += 1
        elif record.status == "error":
            self.errors += 1

    def tokens_per_s(self, now: float | None = None) -> float | None:
        elapsed = (now if now is not None else time.perf_counter()) - self.started
        return self.generated / elapsed if self.generated and elapsed > 0 else None

    def describe(self, now: float | None = None) -> str:
        parts = [f"{self.cache_hits} cached"]
        rate = self.tokens_per_s(now)
        parts.append(f"{rate:.1f} tok/s" if rate is not None else "— tok/s")
        if self.failed:
            parts.append(f"{self.failed} failed")
        if self.errors:
            parts.append(f"{self.errors} errors")
        return " · ".join(parts)


def _ignore(record: Record, done: int, total: int) -> None:
    return None


def _interactive(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


@contextlib.contextmanager
def progress_reporter(
    total_hint: int, enabled: bool = True, *, stream: TextIO | None = None
) -> Iterator[Progress]:
    """Show a progress bar while the body runs, and yield the callback that advances it.

    The callback matches ``RunOptions.progress``: ``callback(record, done, total)``.

    Args:
        total_hint: Results expected, shown until the first callback gives the real total.
        enabled: False (``--quiet``) turns the bar off.
        stream: Where to draw; defaults to ``sys.stderr``. Nothing is drawn unless it is a
            terminal.

    Yields:
        The callback; a no-op when the bar is hidden.
    """
    out = stream if stream is not None else sys.stderr
    if not enabled or not _interactive(out):
        yield _ignore
        return

    from rich.console import Console  # lazy: start-up time
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    console = Console(file=out, force_terminal=True)
    bar = Progress(
        SpinnerColumn(),
        TextColumn("[bold]testing"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    tally = Tally()
    task = bar.add_task("testing", total=total_hint or None, status=tally.describe())

    def advance(record: Record, done: int, total: int) -> None:
        tally.add(record)
        bar.update(task, completed=done, total=total, status=tally.describe())
        if done in (1, total):
            bar.refresh()

    with bar:
        yield advance
