"""Run a command in a fresh interpreter, as a user does: nothing the test process imported or
compiled already (a Jinja environment, a loaded memo) is shared, so what is read back from
the home is really read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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


def run_json(
    argv: list[str], home: Path, env: Mapping[str, str | None] | None = None
) -> tuple[dict[str, Any], str]:
    """Run ``python -m skilleval ARGV --json`` with ``home`` as its home (``env`` sets
    variables, or removes those given None); the JSON document and stderr. The command must
    end with 0 or 1 and print no traceback."""
    full = {**os.environ, "SKILLEVAL_HOME": str(home)}
    for name, value in (env or {}).items():
        if value is None:
            full.pop(name, None)
        else:
            full[name] = value
    done = subprocess.run(
        [sys.executable, "-m", "skilleval", *argv, "--json"],
        capture_output=True,
        text=True,
        env=full,
        check=False,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document, done.stderr
