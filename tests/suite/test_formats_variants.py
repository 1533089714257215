"""The shapes other tools' eval files drift into, one small fixture each: every one loads as
written, with one test per eval, query, stimulus or case, and says which variant it read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli
from skilleval.suite.load import load_suite
from tests.suite.formats_support import shape, skill_folder, write_json, write_yaml

Checks = list[tuple[str, Any]]


# Each variant: a file name, its content (JSON data, or YAML text), the note that names what
# was read, and per test the prompt and the (type, value) of its checks.
VARIANTS: dict[str, tuple[str, Any, str, list[tuple[str, Checks]]]] = {
    "skill-creator {evals} without skill_name, expectations as {name, description}": (
        "evals/evals.json",
        {
            "evals": [
                {
                    "id": "rows",
                    "prompt": "Count the rows.",
                    "expectations": [{"name": "n", "description": "Gives a count"}],
                },
                {"id": 2, "prompt": "Name the columns.", "expectations": [{"text": "Lists them"}]},
            ]
        },
        "read as skill-creator evals ({evals}",
        [
            ("Count the rows.", [("llm-rubric", "Gives a count")]),
            ("Name the columns.", [("llm-rubric", "Lists them")]),
        ],
    ),
    "skill-creator assertions as plain texts, query for prompt": (
        "evals/evals.json",
        {
            "skill_name": "csv-summary",
            "evals": [
                {"id": 1, "query": "How many rows?", "assertions": ["Says two", "Is short"]},
            ],
        },
        "read as skill-creator evals ({skill_name, evals}",
        [("How many rows?", [("llm-rubric", "Says two"), ("llm-rubric", "Is short")])],
    ),
    "skill-creator must_have and must_not_have alone": (
        "evals/evals.json",
        [{"id": 1, "prompt": "Sum the ages.", "must_have": ["\\d+"], "must_not_have": ["sorry"]}],
        "read as skill-creator evals (a list of evals",
        [("Sum the ages.", [("regex", "\\d+"), ("not-regex", "sorry")])],
    ),
    "trigger set {queries} without skill_name, prompt for query": (
        "evals/triggers.json",
        {
            "queries": [
                {"prompt": "summarise this csv", "should_trigger": True},
                {"prompt": "draw a cat", "should_trigger": False},
            ]
        },
        "read as trigger set ({queries})",
        [("summarise this csv", []), ("draw a cat", [])],
    ),
    "trigger set {evals: [{query, should_trigger}]}": (
        "evals/trigger-evals.json",
        {
            "evals": [
                {"query": "columns of data.csv?", "should_trigger": True},
                {"query": "capital of France?", "should_trigger": False},
                {"query": "rows in a csv?", "should_trigger": True},
            ]
        },
        "read as trigger set ({evals: [{query, should_trigger}]})",
        [("columns of data.csv?", []), ("capital of France?", []), ("rows in a csv?", [])],
    ),
    "trigger set {cases} with prompt and expected, in YAML": (
        "evals/triggers.yaml",
        """\
        cases:
          - {prompt: how many rows, expected: trigger}
          - {prompt: tell a joke, expected: do_not_trigger}
        """,
        "read as trigger set ({cases: [{expected: trigger | do_not_trigger}]})",
        [("how many rows", []), ("tell a joke", [])],
    ),
    "Vally stimuli with config: instead of defaults:": (
        "eval.yaml",
        """\
        config: {runs: 1}
        stimuli:
          - name: rows
            prompt: Count the rows.
            graders:
              - {type: output-matches, config: {pattern: "[0-9]+"}}
              - {type: output-not-contains, config: {substring: sorry}}
        """,
        "read as Vally spec (stimuli/graders, `config:`)",
        [("Count the rows.", [("regex", "[0-9]+"), ("not-contains", "sorry")])],
    ),
    "Vally scenarios with defaults: instead of config:": (
        "eval.yaml",
        """\
        defaults: {runs: 1}
        scenarios:
          - name: rows
            prompt: Count the rows.
            assertions:
              - {type: output_matches, pattern: "[0-9]+"}
              - {type: output_not_contains, value: sorry}
          - name: columns
            prompt: Name the columns.
            assertions:
              - {type: output_contains, value: name}
        """,
        "read as Vally spec (scenarios/assertions (older), `defaults:`)",
        [
            ("Count the rows.", [("regex", "[0-9]+"), ("not-contains", "sorry")]),
            ("Name the columns.", [("contains", "name")]),
        ],
    ),
    "Vally stimuli with neither block": (
        "eval.yaml",
        """\
        stimuli:
          - {name: one, prompt: Say one., graders: [{type: output-contains, config: {substring: one}}]}
        """,
        "read as Vally spec (stimuli/graders)",
        [("Say one.", [("contains", "one")])],
    ),
    "PAI cases with suite-level graders and query/message prompts": (
        "evals/pai.yaml",
        """\
        graders:
          - {type: string_match, pattern: csv}
        cases:
          - {id: a, query: Is this a csv?}
          - {id: b, message: Read the csv., graders: [{type: regex_match, params: {patterns: ["r[a-z]+"]}}]}
        """,
        "read as PAI suite (cases suite)",
        [
            ("Is this a csv?", [("contains", "csv")]),
            ("Read the csv.", [("contains", "csv"), ("regex", "r[a-z]+")]),
        ],
    ),
    "PAI task file with its keys at the top": (
        "tasks/route-002.yaml",
        """\
        id: route-002
        description: Routes CSV questions
        prompt: List the columns of people.csv.
        graders:
          - {type: natural_language_assert, weight: 1.0, params: {assertion: Lists the columns}}
        pass_threshold: 0.5
        """,
        "read as PAI task file",
        [("List the columns of people.csv.", [("llm-assert", ["Lists the columns"])])],
    ),
    "PAI task file with llm_rubric and tool_calls graders": (
        "tasks/route-003.yaml",
        """\
        task:
          id: route-003
          input: Open people.csv and count the rows.
          graders:
            - {type: llm_rubric, weight: 0.5, params: {criteria: Counts two rows, scale: 5}}
            - {type: tool_calls, weight: 0.5, params: {sequence: [{tool: read_file, params: {path: people.csv}}]}}
          pass_threshold: 0.5
        """,
        "read as PAI task file",
        [
            (
                "Open people.csv and count the rows.",
                [("llm-rubric", "Counts two rows"), ("unavailable", None)],
            )
        ],
    ),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_each_variant_loads_with_one_test_per_item(tmp_path: Path, name: str) -> None:
    where, content, note, expected = VARIANTS[name]
    folder = skill_folder(tmp_path / "csv-summary")
    path = (
        write_json(folder / where, content)
        if not isinstance(content, str)
        else write_yaml(folder / where, content)
    )
    suite, _ = load_suite(path)
    tests = shape(suite)
    assert [t["prompt"] for t in tests] == [prompt for prompt, _ in expected]
    for test, (_, checks) in zip(tests, expected, strict=True):
        got = [(a[0], a[1]) for a in test["asserts"]]
        assert [
            (kind, value)
            for (kind, value), (k, _) in zip(got, checks, strict=True)
            if k != "unavailable"
        ] == [c for c in checks if c[0] != "unavailable"]
        assert [a[0] for a in got] == [k for k, _ in checks]
    assert any(note in n for n in suite.notes), suite.notes
    assert len({t["id"] for t in tests}) == len(tests)


def test_a_json_trigger_set_mistake_keeps_its_line_and_column_in_json_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skill_folder(tmp_path / "s")
    path = folder / "evals" / "triggers.json"
    path.write_text(
        '{"skill_name": "csv-summary",\n "queries": [\n  {"query": "a", "should_trigger": true},\n'
        '  {"query": ["a"], "should_trigger": false}\n ]}\n',
        encoding="utf-8",
    )
    assert run_cli(["validate", str(path), "--json"]) == 4
    doc = json.loads(capsys.readouterr().out)
    (checked,) = doc["files"]
    errors = [d for d in checked["diagnostics"] if d["severity"] == "error"]
    assert checked["path"].endswith("evals/triggers.json")
    assert [(e["path"], e["line"], e["col"]) for e in errors] == [(checked["path"], 4, 13)]
    assert "`query` must be a text" in errors[0]["message"]


PAI_WEIGHTED = """\
pass_threshold: {threshold}
cases:
  - id: rows
    prompt: How many rows?
    graders:
      - {{type: string_match, weight: 0.6, params: {{pattern: rows}}}}
      - {{type: regex_match, weight: 0.4, params: {{pattern: "[0-9]"}}}}
"""


@pytest.mark.parametrize(("threshold", "status", "code"), [(0.6, "pass", 0), (0.7, "fail", 1)])
def test_pai_pass_threshold_is_reached_by_the_mean_weighted_score(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threshold: float, status: str, code: int
) -> None:
    """The echo model repeats the prompt: `rows` is found (weight 0.6), no digit is (0.4).
    The weighted mean is 0.6: a pass at PAI's pass_threshold 0.6, a fail at 0.7."""
    text = PAI_WEIGHTED.format(threshold=threshold) + "type: regression\n"
    path = write_yaml(tmp_path / "pai" / "suite.yaml", text)
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    out = tmp_path / "out.json"
    assert run_cli(["run", str(path), "--model", "echo", "-q", "-o", str(out)]) == code
    (record,) = json.loads(out.read_text(encoding="utf-8"))["records"]
    assert record["status"] == status
    assert record["score"] == pytest.approx(0.6)
