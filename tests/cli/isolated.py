"""Run a command the way a user does, in a process of its own, with a time limit.

A forked child runs ``run_cli`` with stdin on /dev/null and stdout and stderr in files, and
exits with its exit code; an exception that escapes is printed as Python prints it, so a test
sees the traceback a user would. Forking skips the interpreter's start-up, so hundreds of
commands stay fast, and the parent can kill a command that hangs.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

TIME_LIMIT_S = 5.0
_STAMP = re.compile(r"^\d\d:\d\d:\d\d ")


@dataclass(frozen=True, slots=True)
class Finished:
    """What one command did."""

    argv: tuple[str, ...]
    code: int | None
    """The exit code; None when it was killed at the time limit."""
    out: str
    err: str
    seconds: float

    @property
    def message(self) -> str:
        """The first error or warning line on stderr; else its first line.

        Click's usage banner and watch's time stamps are passed over.
        """
        lines = [
            line
            for line in self.err.splitlines()
            if line.strip() and not line.startswith(("Usage:", "Try '")) and not _STAMP.match(line)
        ]
        for line in lines:
            if line.lower().startswith(("error", "warning")) or ": error: " in line:
                return line
        return lines[0] if lines else ""

    def problems(self) -> list[str]:
        """What no command may ever do: print a traceback, or run past the time limit."""
        found = []
        if self.code is None:
            found.append(f"still running after {TIME_LIMIT_S:g} s")
        if "Traceback (most recent call last)" in self.out + self.err:
            found.append("printed a traceback:\n" + self.err[-3000:])
        return found


def _child(argv: list[str], cwd: Path, out_fd: int, err_fd: int) -> int:
    os.chdir(cwd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
    # As a user's interpreter has them, not as the test run turns warnings into errors.
    warnings.resetwarnings()
    warnings.simplefilter("default")
    try:
        from skilleval.cli import run_cli

        return run_cli(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
        return 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def run_isolated(argv: list[str], cwd: Path, time_limit: float = TIME_LIMIT_S) -> Finished:
    """Run ``skilleval ARGV`` in ``cwd`` in a child process; kill it at the time limit."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            child_code = 70
            try:
                child_code = _child(argv, cwd, out.fileno(), err.fileno())
            finally:
                os._exit(child_code)
        code: int | None = None
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() - started > time_limit:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.005)
        seconds = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        return Finished(
            tuple(argv),
            code,
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
            seconds,
        )
