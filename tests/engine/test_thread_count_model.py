"""The thread count on the real embedded model: chosen from the machine's state when the model
loads, recorded with its reason, and never a change to the replies."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli.fresh import run_json

pytestmark = pytest.mark.model

SUITE = """
version: 1
model: {{provider: gguf, path: default{threads}}}
decoding: {{max_tokens: 24, seed: 3}}
prompts: ["Answer briefly. {{{{q}}}}"]
tests:
  - id: capital
    vars: {{q: "What is the capital of France?"}}
  - id: colour
    vars: {{q: "What colour is the sky on a clear day?"}}
  - id: count
    vars: {{q: "Count from one to five."}}
"""

CORES = len(os.sched_getaffinity(0))


def _run(tmp_path: Path, name: str, threads: int | None) -> dict:
    folder = tmp_path / name
    folder.mkdir()
    suite = folder / "suite.yaml"
    extra = f", threads: {threads}" if threads is not None else ""
    suite.write_text(textwrap.dedent(SUITE.format(threads=extra)), encoding="utf-8")
    # The wait policy is chosen as a user's run chooses it, whatever the test run set.
    return run_json(["run", str(suite), "--no-cache"], folder / "home", {"OMP_WAIT_POLICY": None})[
        0
    ]


@contextmanager
def _spinning(count: int) -> Iterator[None]:
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_threads_set_in_the_model_are_used_and_the_replies_do_not_depend_on_them(
    tmp_path: Path,
) -> None:
    one = _run(tmp_path, "one", 1)
    two = _run(tmp_path, "two", 2)
    assert one["environment"]["threads"] == 1
    assert two["environment"]["threads"] == 2
    assert one["environment"]["threads_reason"] == "set in the model's `threads`"
    outputs = [r["output"] for r in one["records"]]
    assert all(outputs)
    assert outputs == [r["output"] for r in two["records"]]


@pytest.mark.skipif(CORES < 2, reason="needs two cores to leave one to the others")
@pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="needs Linux's /proc/stat")
def test_processes_keeping_the_cores_busy_leave_the_model_fewer_threads(tmp_path: Path) -> None:
    with _spinning(CORES):
        doc = _run(tmp_path, "busy", None)
    environment = doc["environment"]
    assert environment["threads"] < CORES
    assert "cores busy" in environment["threads_reason"]
    assert environment["wait_policy"]["policy"] == "PASSIVE"
