"""Busy processes beside a benchmark case: ``--busy N`` runs N processes that spin on one core
each for as long as the case runs, so a case measures what a user gets on a machine whose
other programs want the CPU too.

    with busy(2):
        ...  # the case
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

SPIN = "while True:\n    pass\n"


@contextlib.contextmanager
def busy(count: int) -> Iterator[list[int]]:
    """Start ``count`` spinning processes; stop them (by their ids) when the block ends, also
    when the benchmark is stopped with SIGTERM."""
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    procs = [
        subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.DEVNULL)
        for _ in range(max(0, count))
    ]
    try:
        yield [p.pid for p in procs]
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        signal.signal(signal.SIGTERM, previous)


def conditions(busy_count: int | None) -> list[tuple[str, int]]:
    """The conditions every case runs under: idle, and with ``busy_count`` busy processes
    (default: one per usable core) unless it is 0."""
    count = len(os.sched_getaffinity(0)) if busy_count is None else busy_count
    return [("idle", 0)] + ([(f"busy {count}", count)] if count > 0 else [])
