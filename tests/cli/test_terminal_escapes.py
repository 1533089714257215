"""Text a model, a suite or a plugin wrote never reaches the terminal as control characters:
a reply quoted in a check's reason, a metric name (util/scrub.printable)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from tests.cli.isolated import run_isolated

# The model's reply sets the window title (OSC 0), writes the clipboard (OSC 52), and carries
# NUL, backspace, vertical tab, a C1 CSI and a right-to-left override.
SUITE = r"""
version: 1
model:
  provider: scripted
  responses:
    - match: "."
      output: "ok\e]0;pwned\a\e]52;c;ZXZpbA==\a\0\b\v\u009b2J\u202etxt"
prompts: ["Say {{n}}"]
tests:
  - vars: {n: one}
    assert:
      - type: python
        value: "{'pass': False, 'reason': 'saw ' + output}"
        metric: "m\e]0;title\a"
      - type: contains
        value: "nothing like this"
"""

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]")


def test_no_control_character_reaches_stderr(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(SUITE).lstrip(), encoding="utf-8")
    for argv in (["run", str(suite)], ["run", str(suite), "-q"]):
        done = run_isolated(argv, tmp_path, time_limit=30)
        assert not done.problems(), done.err
        assert done.code == 1, done.err
        assert not CONTROL.findall(done.err), done.err
    full = run_isolated(["run", str(suite)], tmp_path, time_limit=30)
    assert "\\x1b]0;pwned" in full.err  # shown, escaped
    assert "m\\x1b]0;title\\x07" in full.err  # the metric's name
    latest = Path(full.err.rsplit("results: ", 1)[1].strip())
    report = run_isolated(["report", str(latest)], tmp_path, time_limit=30)
    assert not CONTROL.findall(report.err + report.out)
