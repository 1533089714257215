"""No child outlives a run, whatever signal ends it; SIGTERM ends a run as Ctrl-C does.

Each test starts ``skilleval run`` in a session of its own on a suite whose JavaScript checks
are stuck in a backtracking regular expression, waits until a JavaScript worker runs, sends
a signal, and then looks for leftover workers: each worker is started with skilleval's
process id as its last argument, so a leftover is found in ``/proc`` even after it was
re-parented.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs /proc")

# Catastrophic backtracking: QuickJS cannot interrupt it, so only the wall-clock kill ends it.
STUCK = """
version: 1
model:
  provider: scripted
  responses:
    - match: "."
      output: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"
prompts: ["Say {{n}}"]
tests:
  - vars: {n: one}
    assert:
      - type: contains
        value: "a"
  - vars: {n: two}
    assert:
      - type: javascript
        value: "/^(a+)+$/.test(output)"
  - vars: {n: three}
    assert:
      - type: javascript
        value: "/^(a+)+$/.test(output)"
"""


def workers_of(pid: int) -> list[int]:
    """The live JavaScript workers skilleval process ``pid`` started (zombies are dead)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        ours = any(a.endswith(b"_jsworker.py") for a in argv) and str(pid).encode() in argv
        if ours and state != "Z":
            found.append(int(entry.name))
    return found


def wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def start(tmp_path: Path) -> subprocess.Popen[bytes]:
    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(STUCK).lstrip(), encoding="utf-8")
    with (tmp_path / "out").open("wb") as out, (tmp_path / "err").open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "skilleval", "run", str(suite), "--json"],
            cwd=tmp_path,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
    assert wait_for(lambda: bool(workers_of(proc.pid)), 30), "no JavaScript worker started"
    time.sleep(0.3)  # into the regular expression
    return proc


def send(proc: subprocess.Popen[bytes], how: str) -> None:
    if how == "SIGINT":
        proc.send_signal(signal.SIGINT)
    elif how == "SIGINT to the group":
        os.killpg(proc.pid, signal.SIGINT)
    elif how == "SIGTERM":
        proc.send_signal(signal.SIGTERM)
    elif how == "SIGTERM to the group":
        os.killpg(proc.pid, signal.SIGTERM)
    elif how == "double SIGINT":
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
    elif how == "SIGKILL":
        proc.kill()


@pytest.mark.parametrize(
    "how",
    ["SIGINT", "SIGINT to the group", "SIGTERM", "SIGTERM to the group", "double SIGINT"],
)
def test_an_interrupted_run_leaves_no_worker_and_writes_what_finished(
    tmp_path: Path, how: str
) -> None:
    proc = start(tmp_path)
    pid = proc.pid
    send(proc, how)
    try:
        code = proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert wait_for(lambda: not workers_of(pid), 3), f"workers left: {workers_of(pid)}"
    err = (tmp_path / "err").read_text()
    assert "Traceback" not in err
    assert code == 130, err
    if how != "double SIGINT":  # a second Ctrl-C may cut the writing short, as it should
        doc = json.loads((tmp_path / "out").read_text())
        assert doc["status"] == "interrupted"
        runs = Path(os.environ["SKILLEVAL_HOME"]) / "runs" / "latest"
        assert (runs / "results.json").is_file()
        assert (runs / "report.html").is_file()


def test_a_killed_run_leaves_no_worker(tmp_path: Path) -> None:
    proc = start(tmp_path)
    pid = proc.pid
    send(proc, "SIGKILL")
    proc.wait(timeout=10)
    assert wait_for(lambda: not workers_of(pid), 3), f"workers left: {workers_of(pid)}"


@pytest.mark.parametrize("seed", range(6))
def test_a_signal_at_a_random_moment_leaves_no_child(tmp_path: Path, seed: int) -> None:
    """Any signal, any moment: while the suite loads (its JavaScript is compiled by workers
    then), while checks run, while results are written. Whatever the exit, nothing stays."""
    rng = random.Random(seed)
    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(STUCK).lstrip(), encoding="utf-8")
    with (tmp_path / "out").open("wb") as out, (tmp_path / "err").open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "skilleval", "run", str(suite), "--json"],
            cwd=tmp_path,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
    pid = proc.pid
    time.sleep(rng.uniform(0.0, 2.5))
    how = rng.choice(["SIGINT", "SIGINT to the group", "SIGTERM", "double SIGINT"])
    with contextlib.suppress(ProcessLookupError):
        send(proc, how)
    try:
        proc.wait(timeout=25)
    finally:
        if proc.poll() is None:
            os.killpg(pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode is not None
    assert wait_for(lambda: not workers_of(pid), 3), f"{how}: workers left: {workers_of(pid)}"
