"""An ``-o`` that cannot be written is found before the first model call (report/target.py),
not after the run, where its exit 2 used to replace the gate's result."""

from __future__ import annotations

import os
import subprocess
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli.isolated import run_isolated

SUITE = """
version: 1
model:
  provider: scripted
  responses:
    - match: "."
      output: "hello"
prompts: ["Say {{n}}"]
tests:
  - vars: {n: one}
    assert: [{type: contains, value: hello}]
"""


@contextmanager
def read_only_folder(path: Path) -> Iterator[None]:
    """A folder that takes no new file, even from root (who ignores modes): chattr +i."""
    path.mkdir()
    if os.geteuid() != 0:
        path.chmod(0o555)
        try:
            yield
        finally:
            path.chmod(0o755)
        return
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("cannot make a folder read-only here (root, and no chattr +i)")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@pytest.mark.parametrize("name", ["out.md", "deeper/out.json"])
def test_an_unwritable_output_folder_stops_the_run_before_it_starts(
    tmp_path: Path, name: str
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(SUITE).lstrip(), encoding="utf-8")
    locked = tmp_path / "locked"
    with read_only_folder(locked):
        done = run_isolated(["run", str(suite), "-o", str(locked / name)], tmp_path, 30)
    assert not done.problems(), done.err
    assert done.code == 2, done.err
    assert done.message.startswith(f"error: cannot write {locked / name}: ")
    runs = Path(os.environ["SKILLEVAL_HOME"]) / "runs"
    assert not runs.exists() or not any(runs.iterdir())  # no run started, no model call
