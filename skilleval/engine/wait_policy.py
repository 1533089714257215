"""How llama.cpp's OpenMP threads wait, chosen from what the machine is doing now.

llama.cpp's CPU backend runs its threads under OpenMP. Between two pieces of work a thread
either spins (``OMP_WAIT_POLICY=ACTIVE``; OpenMP's own default spins for a bounded while, then
sleeps) or sleeps at once (``PASSIVE``). Which is faster depends on the other processes:
measured on a 2-core VM running the demo suite, spinning took 21 s idle and 83 s with one busy
process per core, ``PASSIVE`` 62 s idle and 40 s busy, and OpenMP's default 22 s and 65 s
(bench/README.md). A load average cannot choose: it still counts the run that ended a minute
ago.

So the choice is made from a short sample of the CPU time that *other* processes use right
before the model loads: ``/proc/stat``'s busy time over all cores, minus this process's own.

* Others keep at least :data:`BUSY_CORES` cores busy: ``PASSIVE`` (the spinning threads would
  fight them for the cores).
* Otherwise OpenMP's default, the bounded spin: within a few per cent of spinning when idle,
  and far from the worst case if the machine gets busy later.

A policy the user set (``OMP_WAIT_POLICY`` in the environment) is kept. OpenMP reads the
variable once, when llama.cpp's library is loaded, so :func:`choose` runs before the first
import of ``llama_cpp`` and its decision holds for the process.

The same sample decides how many threads llama.cpp gets when the user has not set
``threads`` (:func:`choose_threads`): every usable core on a quiet machine, and one fewer for
each core the others keep busy (at least one). Threads of one llama.cpp operation wait for
each other at every step, so a thread that has no core of its own holds the rest back: on the
2-core VM with one busy process per core, the demo took 39-40 s with one thread against
44-54 s with two sleeping ones (and 21.5 s with two on the idle machine); with one busy
process, 30 s against 38 s. Replies do not depend on the thread count (each dot product is
summed by one thread), so the choice changes speed only.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, MutableMapping
from pathlib import Path

from skilleval.util.frozen import frozen

__all__ = [
    "BUSY_CORES",
    "SAMPLE_S",
    "ThreadCount",
    "WaitPolicy",
    "choose",
    "choose_threads",
    "decide",
    "others_busy_cores",
    "thread_count",
    "threads_for",
]

VARIABLE = "OMP_WAIT_POLICY"
SAMPLE_S = 0.12
"""How long the machine is watched before the model loads."""
BUSY_CORES = 0.5
"""Cores that other processes keep busy at which the threads stop spinning."""
DEFAULT = "default"
"""OpenMP's own policy (the variable left unset)."""


@frozen
class WaitPolicy:
    """What was chosen, and why, for the run's environment block."""

    policy: str
    """``ACTIVE``, ``PASSIVE`` (set by the user or chosen) or ``default`` (OpenMP's own)."""
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"policy": self.policy, "reason": self.reason}


@frozen
class ThreadCount:
    """How many threads llama.cpp is given, and why, for the run's environment block."""

    count: int
    reason: str


def _cpu_jiffies(stat: Path) -> tuple[int, int] | None:
    """Busy and total jiffies over all cores, from the first line of ``/proc/stat``."""
    try:
        first = stat.read_text(encoding="ascii").split("\n", 1)[0].split()
    except (OSError, UnicodeDecodeError):
        return None
    if not first or first[0] != "cpu" or len(first) < 5:
        return None
    try:
        values = [int(v) for v in first[1:]]
    except ValueError:
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
    # already counted in user and nice.
    fields = values[:8]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields)
    return total - idle, total


def _own_cpu_s() -> float:
    times = os.times()
    return times.user + times.system


def others_busy_cores(
    *,
    stat: Path = Path("/proc/stat"),
    sample_s: float = SAMPLE_S,
    clock_ticks: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
    own_cpu_s: Callable[[], float] = _own_cpu_s,
) -> float | None:
    """How many cores processes other than this one kept busy over ``sample_s`` seconds
    (None where ``/proc/stat`` cannot be read)."""
    ticks = clock_ticks or (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)
    before = _cpu_jiffies(stat)
    own_before = own_cpu_s()
    start = time.monotonic()
    sleep(sample_s)
    after = _cpu_jiffies(stat)
    own_after = own_cpu_s()
    elapsed = max(time.monotonic() - start, sample_s)
    if before is None or after is None or after[1] <= before[1]:
        return None
    busy_s = (after[0] - before[0]) / ticks
    others_s = max(0.0, busy_s - (own_after - own_before))
    return others_s / elapsed


_lock = threading.Lock()
_chosen: WaitPolicy | None = None
_measured: list[float | None] = []
"""What :func:`others_busy_cores` found, once a decision needed it (one sample a process)."""


def _others_once(measure: Callable[[], float | None]) -> float | None:
    """``measure()``'s answer, sampled at most once a process (the caller holds the lock)."""
    if not _measured:
        _measured.append(measure())
    return _measured[0]


def choose(
    environ: MutableMapping[str, str] = os.environ,
    measure: Callable[[], float | None] = others_busy_cores,
) -> WaitPolicy:
    """Decide the wait policy for this process, once, and set it in ``environ``.

    Call before llama.cpp's library is first loaded; later calls return the first decision.
    """
    global _chosen
    with _lock:
        if _chosen is None:
            _chosen = decide(environ, lambda: _others_once(measure))
        return _chosen


def choose_threads(
    cores: int, measure: Callable[[], float | None] = others_busy_cores
) -> ThreadCount:
    """The threads for a model whose ``threads`` the user did not set, from the same sample
    of the machine as :func:`choose` (taken now if no decision needed it yet)."""
    with _lock:
        return threads_for(_others_once(measure), cores)


def thread_count(configured: int | None, cores: int) -> ThreadCount:
    """``configured`` (the model's ``threads``) when set, else :func:`choose_threads`."""
    if configured:
        return ThreadCount(configured, "set in the model's `threads`")
    return choose_threads(cores)


def threads_for(others: float | None, cores: int) -> ThreadCount:
    """Every one of ``cores`` when the other processes keep less than :data:`BUSY_CORES`
    busy (or their load is unknown); otherwise one fewer for each core they keep busy,
    rounded to the nearest core, and at least one."""
    cores = max(1, cores)
    if others is None:
        return ThreadCount(cores, f"every usable core ({cores}); the machine's load is unknown")
    if others < BUSY_CORES:
        return ThreadCount(
            cores,
            f"every usable core ({cores}): other processes kept {others:.1f} cores busy "
            "when the model loaded",
        )
    count = max(1, cores - math.floor(others + 0.5))
    return ThreadCount(
        count,
        f"{count} of {cores} usable cores: other processes kept {others:.1f} cores busy "
        "when the model loaded, and a thread without a core of its own holds the others back",
    )


def decide(environ: MutableMapping[str, str], measure: Callable[[], float | None]) -> WaitPolicy:
    """The policy for what ``measure`` says of the other processes, set in ``environ``
    unless the user set one."""
    written = environ.get(VARIABLE)
    if written:
        return WaitPolicy(written.upper(), f"{VARIABLE} was set to {written!r}")
    others = measure()
    if others is None:
        return WaitPolicy(DEFAULT, "the machine's load could not be read, so OpenMP's own")
    if others >= BUSY_CORES:
        environ[VARIABLE] = "PASSIVE"
        return WaitPolicy(
            "PASSIVE",
            f"other processes kept {others:.1f} cores busy when the model loaded "
            f"(threads that spin would compete with them)",
        )
    return WaitPolicy(
        DEFAULT,
        f"other processes kept {others:.1f} cores busy when the model loaded, so OpenMP's "
        "own (a bounded spin)",
    )
