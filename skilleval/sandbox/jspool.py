"""The worker processes that run users' JavaScript (:mod:`skilleval.sandbox.jsengine`).

Workers are kept between calls. Each runs in a session of its own and asks the kernel to kill
it when its parent dies (``PR_SET_PDEATHSIG``); every worker started is kept in one registry,
and those still running are killed at exit. The worker script is found next to this file and
started with the same interpreter; it imports nothing from skilleval.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, Final

__all__ = ["WORKER", "WORKER_COMMAND", "Worker", "close_all", "give_back", "take"]

WORKER: Final = Path(__file__).with_name("_jsworker.py")
WORKER_COMMAND: list[str] = [sys.executable, "-I"]
"""How the worker is started: this interpreter, isolated from the environment and user site."""


def _start_process() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*WORKER_COMMAND, str(WORKER), str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


_spawner: Any = None


def _spawn() -> subprocess.Popen[bytes]:
    """A new worker process, started by a thread that lives as long as skilleval does.

    The kernel's parent-death signal follows the *thread* that started a process, so a
    worker started by a grading thread would die when that thread's pool shuts down, perhaps
    in the middle of another thread's call.
    """
    global _spawner
    if threading.current_thread() is threading.main_thread():
        return _start_process()
    with _lock:
        if _spawner is None:
            from concurrent.futures import ThreadPoolExecutor  # lazy: start-up time

            _spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skilleval-js")
        spawner = _spawner
    proc: subprocess.Popen[bytes] = spawner.submit(_start_process).result()
    return proc


class Worker:
    """One worker process, with what it has written and not yet been read."""

    def __init__(self) -> None:
        self.proc = _spawn()
        self.buffer = b""
        self.ended = False
        """The worker closed its end (it died), as opposed to missing the deadline."""
        with _lock:
            _live.add(self)

    def ask(self, request: Mapping[str, Any], deadline: float) -> dict[str, Any] | None:
        """The worker's reply, or None when it died or missed the deadline."""
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None
        assert stdout is not None
        try:
            stdin.write(json.dumps(request).encode() + b"\n")
            stdin.flush()
        except OSError:
            self.ended = True
            return None
        fd = stdout.fileno()
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                return None
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self.ended = True
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        try:
            reply: dict[str, Any] = json.loads(line)
        except (ValueError, RecursionError):
            return {"ok": False, "kind": "worker", "error": "its reply is not JSON"}
        return reply

    def close(self, *, kill: bool = False) -> None:
        with _lock:
            _live.discard(self)
        pipes: list[IO[bytes] | None] = [self.proc.stdin, self.proc.stdout]
        if kill:
            with contextlib.suppress(OSError):
                self.proc.kill()
        for pipe in pipes:
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                self.proc.kill()
            self.proc.wait()


_idle: list[Worker] = []
_live: set[Worker] = set()
"""Every worker started and not yet closed, idle or busy."""
_lock = threading.Lock()


def take() -> Worker:
    """An idle worker still alive, or a new one."""
    while True:
        with _lock:
            worker = _idle.pop() if _idle else None
        if worker is None:
            return Worker()
        if worker.proc.poll() is None:
            return worker
        # The kernel ended it with the thread that started it (PR_SET_PDEATHSIG).
        worker.close(kill=True)


def give_back(worker: Worker) -> None:
    """Keep ``worker`` for the next call."""
    with _lock:
        _idle.append(worker)


def _forget_inherited() -> None:
    """In a forked child: the workers, the spawner's thread and the lock are the parent's."""
    global _lock, _spawner
    _lock = threading.Lock()
    _idle.clear()
    _live.clear()
    _spawner = None


os.register_at_fork(after_in_child=_forget_inherited)


@atexit.register
def close_all() -> None:
    """Kill every worker still running, idle or busy (a call cut short by Ctrl-C)."""
    with _lock:
        workers = list(_live)
        _idle.clear()
    for worker in workers:
        worker.close(kill=True)
