"""Run one command with a timeout and an output cap, and never leave anything behind.

Every command skilleval runs for an agent (command tools, workspace set-up commands and the
``run-command`` assertion) goes through :func:`run_process`:

* a string is run by ``/bin/sh -c``; a list is an argv run without a shell;
* the command gets its own process group, so at the timeout the whole group (the shell *and*
  what it started) is killed, and stragglers left in the background are killed on exit too;
* stdout and stderr are read as they come and only the first ``max_output`` bytes of each are
  kept; the rest is read and discarded, so a chatty command can neither fill memory nor block
  on a full pipe.

A string command is trusted text written by the suite's author; values chosen by a model never
reach a shell unquoted (see :mod:`skilleval.agent.kinds`). Text that cannot be passed to
:func:`os.execve` (a NUL byte, a lone surrogate, an argument over the OS limit) makes the
command one that could not start: :attr:`ProcessResult.error` is set and nothing ran.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

SHELL = "/bin/sh"
_CHUNK = 65536
_DRAIN_S = 2.0
"""How long to wait for the output readers once the process is gone."""

Command = str | Sequence[str]


@dataclass(frozen=True, slots=True)
class ProcessResult:
    """What a command did."""

    exit_code: int | None
    """None when the command could not start or was killed at the timeout."""
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False
    """True when stdout or stderr was longer than the cap and was cut."""
    duration_ms: float = 0.0
    error: str | None = None
    """Why the command could not start (a missing program, a bad working directory)."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.error is None

    def describe_failure(self, timeout_s: float) -> str:
        """A one-line account of why the command did not succeed ('' when it did)."""
        if self.error is not None:
            return self.error
        if self.timed_out:
            return f"timed out after {timeout_s:g} s and was killed"
        if self.exit_code != 0:
            tail = last_line(self.stderr) or last_line(self.stdout)
            return f"exited with {self.exit_code}" + (f": {tail}" if tail else "")
        return ""


def last_line(text: str, limit: int = 200) -> str:
    """The last non-blank line of ``text``, clipped, for one-line messages."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def argv_of(command: Command) -> list[str]:
    """The argv that runs ``command``: through ``/bin/sh -c`` for a string."""
    if isinstance(command, str):
        return [SHELL, "-c", command]
    return list(command)


def run_process(
    command: Command,
    *,
    cwd: Path,
    timeout_s: float,
    max_output: int,
    env: Mapping[str, str] | None = None,
) -> ProcessResult:
    """Run ``command`` in ``cwd`` and wait for it, at most ``timeout_s`` seconds.

    Args:
        command: A shell command line (trusted text) or an argv list.
        cwd: The working directory.
        timeout_s: Seconds before the command's whole process group is killed.
        max_output: Bytes kept from each of stdout and stderr.
        env: Extra environment variables, on top of this process's environment.

    Returns:
        The exit code and output; never raises for a failing or missing command.
    """
    argv = argv_of(command)
    full_env = {**os.environ, **(env or {})}
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        # E2BIG (an argument or environment over the OS limit) lands here too.
        reason = exc.strerror or str(exc)
        return ProcessResult(None, "", "", error=f"cannot run {_shown(argv[0])}: {reason}")
    except (ValueError, UnicodeError) as exc:
        # "embedded null byte" and a lone surrogate that cannot be encoded for execve.
        return ProcessResult(None, "", "", error=f"cannot run {_shown(argv[0])}: {exc}")
    assert proc.stdout is not None
    assert proc.stderr is not None
    out, err = _Reader(proc.stdout, max_output), _Reader(proc.stderr, max_output)
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        # Also on a normal exit: background jobs the command left would hold the pipes open.
        _kill_group(proc)
        proc.wait()
    out.join()
    err.join()
    return ProcessResult(
        exit_code=None if timed_out else proc.returncode,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        truncated=out.truncated or err.truncated,
        duration_ms=(time.perf_counter() - start) * 1000.0,
    )


def _shown(program: str) -> str:
    text = program if len(program) <= 80 else program[:79] + "…"
    return repr(text)


def run_in(
    workspace: Path, command: Command, *, timeout_s: float, max_output: int
) -> ProcessResult:
    """Run ``command`` in ``workspace`` with ``SKILLEVAL_WORKSPACE`` set."""
    return run_process(
        command,
        cwd=workspace,
        timeout_s=timeout_s,
        max_output=max_output,
        env={"SKILLEVAL_WORKSPACE": str(workspace)},
    )


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


class _Reader:
    """Reads one pipe to its end in a thread, keeping the first ``limit`` bytes."""

    def __init__(self, pipe: IO[bytes], limit: int) -> None:
        self._pipe = pipe
        self._fd = pipe.fileno()
        self._limit = max(0, limit)
        self._kept = bytearray()
        self.truncated = False
        # Daemon: a grandchild that escaped the process group may hold the pipe forever.
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while chunk := os.read(self._fd, _CHUNK):
                room = self._limit - len(self._kept)
                if room > 0:
                    self._kept += chunk[:room]
                if len(chunk) > room:
                    self.truncated = True
        except (OSError, ValueError):
            pass

    def join(self) -> None:
        self._thread.join(_DRAIN_S)
        if not self._thread.is_alive():
            self._pipe.close()

    def text(self) -> str:
        return bytes(self._kept).decode("utf-8", errors="replace")
