"""promptfoo's own outputs, graded by skilleval: the same verdicts on the same text.

``test_promptfoo_examples.py`` runs each example on skilleval's echo model. Here the outputs
promptfoo 0.123.1 produced (pinned in ``promptfoo-verdicts.json`` by
``tools/promptfoo_verdicts.py``) are graded by skilleval directly, so the check holds even
where the two echo models answer differently (a schema-held request). promptfoo does not tell
an error from a failure, so its "fail" may be skilleval's "error".
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from skilleval.api import Stats
from skilleval.promptfoo import rendering
from skilleval.runner.grade import Subject, grade
from skilleval.suite import model
from skilleval.suite.load import Overrides, load_suite

DATA = Path(__file__).resolve().parents[1] / "data" / "promptfoo"
FOLDERS = sorted(p for p in DATA.iterdir() if (p / "promptfoo-verdicts.json").is_file())


def test_every_promptfoo_example_has_pinned_verdicts() -> None:
    assert len(FOLDERS) >= 13
    for folder in FOLDERS:
        assert (folder / "echo.yaml").is_file()


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_verdicts_match_promptfoo(folder: Path) -> None:
    suite, _ = load_suite(folder / "echo.yaml", Overrides(entry_points=False))
    pinned = json.loads((folder / "promptfoo-verdicts.json").read_text(encoding="utf-8"))
    labels = _prompt_labels(suite)
    for row in pinned["results"]:
        test = _find(suite, labels, row)
        where = f"{folder.name} test {row['test_index']} prompt {row['prompt_index']}"
        if row["output"] is None:
            # promptfoo stopped before grading (a transform threw): every assertion errs here.
            graded = grade(test, _subject(""))
            assert graded.status == "error", where
            continue
        graded = grade(test, _subject(row["output"]))
        theirs = list(row["asserts"])
        for entry, result in zip(test.asserts, graded.asserts, strict=True):
            verdict = _take(theirs, entry)
            if verdict is None:
                continue  # an assertion promptfoo never reached (it stopped at an error)
            if entry.spec.compares:
                continue  # graded with its group's other outputs: test_promptfoo_examples
            ours = result.status
            assert (ours == "pass") == verdict, (where, entry.type, entry.value, ours, result)
        if not any(e.spec.compares for e in test.asserts):
            assert (graded.status == "pass") == bool(row["pass"]), (where, graded)


def _subject(output: str) -> Subject:
    return Subject(
        output=output, prompt="", messages=(), stats=Stats(), arm="default", trial=0, cost=None
    )


def _prompt_labels(suite: model.Suite) -> list[str]:
    labels: list[str] = []
    for test in suite.tests:
        if test.prompt.label not in labels:
            labels.append(test.prompt.label)
    return labels


def _find(suite: model.Suite, labels: list[str], row: dict[str, Any]) -> model.TestCase:
    label = labels[row["prompt_index"]]
    of_label = [t for t in suite.tests if t.prompt.label == label]
    found = [t for t in of_label if _same_vars(t, row["vars"])]
    assert found, (label, row["vars"])
    # Vars that only differ by a file's name: the test at promptfoo's position.
    at = row["test_index"]
    return of_label[at] if at < len(of_label) and of_label[at] in found else found[0]


def _same_vars(test: model.TestCase, theirs: dict[str, Any]) -> bool:
    """Whether the vars agree as JavaScript reads them (``1.0`` is ``1``); promptfoo records
    a file var as its ``file://`` name, skilleval as what the file holds."""
    return all(
        (isinstance(v, str) and v.startswith("file://"))
        or _as_json(test.vars.get(k)) == _as_json(v)
        for k, v in theirs.items()
    )


def _as_json(value: Any) -> str:
    """``value`` as JSON, a string of JSON read first (promptfoo records such a var compacted)."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    return rendering.js_json(value)


def _take(theirs: list[dict[str, Any]], entry: model.AssertionEntry) -> bool | None:
    """promptfoo's verdict for ``entry``: its next result of the same type and value.

    A JavaScript check may return results of its own (``componentResults``); promptfoo lists
    them after it with the same assertion, and they are skipped by the next match.
    """
    for i, item in enumerate(theirs):
        if item["type"] == entry.type and _same_value(item["value"], entry.value):
            del theirs[: i + 1]
            return bool(item["pass"])
    return None


def _same_value(theirs: Any, ours: Any) -> bool:
    if isinstance(theirs, list) and isinstance(ours, (list, tuple)):
        return [str(x) for x in theirs] == [str(x) for x in ours]
    return theirs == ours or str(theirs) == str(ours)
