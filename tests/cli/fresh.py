"""Run a command in a fresh interpreter, as a user does: nothing the test process imported or
compiled already (a Jinja environment, a loaded memo) is shared, so what is read back from
the home is really read back."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.isolated import Finished

ROOT = Path(__file__).resolve().parents[2]


def run_fresh(argv: list[str], cwd: Path, time_limit: float = 60) -> Finished:
    """Run ``python -m skilleval ARGV`` in ``cwd``; None as the code when it hit the limit."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "skilleval", *argv],
            cwd=cwd,
            capture_output=True,
            env=env,
            timeout=time_limit,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode("utf-8", "replace")
        err = (exc.stderr or b"").decode("utf-8", "replace")
        return Finished(tuple(argv), None, out, err, time.monotonic() - started)
    return Finished(
        tuple(argv),
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
        time.monotonic() - started,
    )
