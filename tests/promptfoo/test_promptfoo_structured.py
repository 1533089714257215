"""A reply under ``response_format: json_schema`` reaches JavaScript checks parsed, as in
promptfoo.

tests/data/promptfoo-replies/structured/ holds a config with one prompt under
``json_schema``, one under ``json_object`` and one plain, and what promptfoo 0.123.1
decided for each assertion when every reply was the same JSON text (see its README). Here
skilleval loads the config (its provider swapped for echo) and grades that reply directly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from promptfoo_support import with_echo

from skilleval.api import Stats
from skilleval.runner.grade import Subject, grade
from skilleval.suite.load import Overrides, load_suite

FOLDER = Path(__file__).resolve().parents[1] / "data" / "promptfoo-replies" / "structured"

TEXT_DIFFERENCE = {"contains", "equals"}
"""Text checks on a ``json_schema`` prompt: promptfoo compares them with its compact
rewrite of the parsed reply, skilleval with the reply as the model wrote it (a documented
difference)."""


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        with_echo((FOLDER / "promptfooconfig.yaml").read_text(encoding="utf-8")),
        encoding="utf-8",
    )
    return config


def _graded(tmp_path: Path) -> tuple[dict[str, Any], dict[str, list[tuple[str, str, str]]]]:
    pinned = json.loads((FOLDER / "promptfoo-verdicts.json").read_text(encoding="utf-8"))
    suite, _ = load_suite(_config(tmp_path), Overrides(entry_points=False))
    subject = Subject(
        output=pinned["reply"], prompt="", messages=(), stats=Stats(), arm="a", trial=0, cost=None
    )
    ours = {
        t.prompt.label: [
            (a.type, str(a.value), r.status)
            for a, r in zip(t.asserts, grade(t, subject).asserts, strict=True)
        ]
        for t in suite.tests
    }
    return pinned, ours


def test_javascript_sees_the_reply_parsed_only_under_json_schema(tmp_path: Path) -> None:
    pinned, ours = _graded(tmp_path)
    labels = ["schema", "object", "plain"]
    compared = 0
    for row in pinned["results"]:
        label = labels[row["prompt_index"]]
        for theirs, (kind, value, status) in zip(row["asserts"], ours[label], strict=True):
            assert (theirs["type"], str(theirs["value"])) == (kind, value)
            if label == "schema" and kind in TEXT_DIFFERENCE:
                continue
            assert (status == "pass") == theirs["pass"], (label, kind, value, status)
            compared += 1
    assert compared >= 20


def test_a_reply_that_is_not_json_stays_text(tmp_path: Path) -> None:
    suite, _ = load_suite(_config(tmp_path), Overrides(entry_points=False))
    test = next(t for t in suite.tests if t.prompt.label == "schema")
    subject = Subject(
        output="not json", prompt="", messages=(), stats=Stats(), arm="a", trial=0, cost=None
    )
    statuses = [r.status for r in grade(test, subject).asserts]
    # `typeof output === 'string' && …` runs on the text, and no check errs.
    assert "error" not in statuses
    assert statuses[1] == "fail"  # typeof output === 'object'


def test_skillevals_own_suites_keep_the_reply_as_text(tmp_path: Path) -> None:
    suite_file = tmp_path / "suite.yaml"
    suite_file.write_text(
        "version: 1\nmodel: {provider: echo}\n"
        "prompts:\n  - raw: 'Classify: {{text}}'\n    config:\n      response_format:\n"
        "        type: json_schema\n        json_schema: {schema: {type: object}}\n"
        "tests:\n  - vars: {text: x}\n    assert:\n"
        "      - {type: javascript, value: \"typeof output === 'string'\"}\n",
        encoding="utf-8",
    )
    suite, _ = load_suite(suite_file, Overrides(entry_points=False))
    subject = Subject(
        output='{"a": 1}', prompt="", messages=(), stats=Stats(), arm="a", trial=0, cost=None
    )
    assert [r.status for r in grade(suite.tests[0], subject).asserts] == ["pass"]
