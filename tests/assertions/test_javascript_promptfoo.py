"""``javascript`` verdicts against promptfoo 0.123.1's own, on the public example configs.

``tests/data/promptfoo/NAME/echo.yaml`` is a promptfoo config on the echo provider and
``promptfoo-verdicts.json`` what promptfoo decided for each assertion (see that folder's
README). skilleval runs the same config unchanged; each ``javascript`` assertion must reach
promptfoo's verdict on the same output. One difference is by design: where promptfoo fails
an assertion because the code threw (or the row because a transform threw), skilleval
reports an ``error``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "promptfoo"
CONFIGS = ("javascript-assert-external", "json-output", "self-grading")


def promptfoo_verdict(name: str, output: str) -> dict[str, Any]:
    """promptfoo's first javascript verdict on ``output`` (a GradingResult's components follow
    it in the file); for a row that errored before its assertions (a transform threw, so
    promptfoo kept no output), the row of the same vars, as a fail."""
    doc = json.loads((EXAMPLES / name / "promptfoo-verdicts.json").read_text(encoding="utf-8"))
    for result in doc["results"]:
        if result["output"] == output:
            return next(a for a in result["asserts"] if a["type"] == "javascript")
    for result in doc["results"]:
        if result["error"] and all(str(v) in output for v in result["vars"].values()):
            return {"pass": False, "row_error": result["error"]}
    raise AssertionError(f"promptfoo has no result for {output!r}")


@pytest.mark.parametrize("name", CONFIGS)
def test_javascript_verdicts_match_promptfoo(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / name
    shutil.copytree(EXAMPLES / name, folder)
    run_cli(["run", str(folder / "echo.yaml"), "--json", "--no-entry-points"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    doc = json.loads(captured.out)
    compared = 0
    for record in doc["records"]:
        ours = [a for a in record["asserts"] if a["type"] == "javascript"]
        if not ours:
            continue
        status, verdict = ours[0]["status"], promptfoo_verdict(name, record["output"])
        if status == "error":
            # promptfoo: a fail whose reason is the throw, or an error on the whole row.
            assert verdict["pass"] is False, (record["test_id"], ours[0]["reason"])
            assert "threw" in ours[0]["reason"]
        else:
            assert (status == "pass") is verdict["pass"], (record["test_id"], ours[0]["reason"])
        compared += 1
    assert compared == len(doc["records"]) > 0
