"""skilleval's verdicts on promptfoo's deterministic types match promptfoo's own.

``tests/data/promptfoo/deterministic-types/promptfoo-verdicts.json`` is what promptfoo 0.123.1
decided on its echo provider (which returns the prompt); each output is graded here with
skilleval and every assertion must pass or fail the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skilleval.api import Stats
from skilleval.runner.grade import Subject, grade
from skilleval.suite.load import load_suite

FOLDER = Path(__file__).resolve().parent.parent / "data" / "promptfoo" / "deterministic-types"
PINNED: list[dict[str, Any]] = json.loads(
    (FOLDER / "promptfoo-verdicts.json").read_text(encoding="utf-8")
)["results"]

# promptfoo's echo provider reports no finish reason; skilleval's Stats says so with "".
# (finish-reason itself is left out of the folder: skilleval's echo reports "stop".)
ECHO_STATS = Stats(finish_reason="")


@pytest.fixture(scope="module")
def suite_tests() -> Any:
    suite, _ = load_suite(FOLDER / "echo.yaml")
    return suite.tests


def _label(row: dict[str, Any]) -> str:
    return f"test{row['test_index']}"


def test_every_pinned_result_has_an_output() -> None:
    assert PINNED
    assert all(isinstance(row["output"], str) and row["asserts"] for row in PINNED)


@pytest.mark.parametrize("row", PINNED, ids=_label)
def test_same_verdict_as_promptfoo(row: dict[str, Any], suite_tests: Any) -> None:
    test = suite_tests[row["test_index"]]
    subject = Subject(
        output=row["output"],
        prompt="",
        messages=(),
        stats=ECHO_STATS,
        arm="default",
        trial=0,
    )
    graded = grade(test, subject)
    ours = [(r.type, r.status) for r in graded.asserts]
    theirs = [(a["type"], "pass" if a["pass"] else "fail") for a in row["asserts"]]
    reasons = "\n".join(f"  {r.type}: {r.status}: {r.reason}" for r in graded.asserts)
    assert ours == theirs, f"{test.description or test.id}\n{reasons}"
