"""Small eval files in other tools' formats, written for these tests, and a suite's shape."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from skilleval.suite.model import Suite

SKILL = """\
---
name: csv-summary
description: Summarise a CSV file's columns and row count. Use when the user asks about a CSV.
---
Count the rows, list the columns, and give one sentence per column.
"""


def skill_folder(root: Path) -> Path:
    """A skill folder with a SKILL.md and an input file under evals/files/."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "SKILL.md").write_text(SKILL, encoding="utf-8")
    (root / "evals" / "files").mkdir(parents=True, exist_ok=True)
    (root / "evals" / "files" / "people.csv").write_text("name,age\nann,3\nbob,4\n", "utf-8")
    return root


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def write_yaml(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


EVALS = {
    "skill_name": "csv-summary",
    "evals": [
        {
            "id": 1,
            "prompt": "How many rows are in people.csv?",
            "expected_output": "Two rows.",
            "files": ["evals/files/people.csv"],
            "expectations": ["The reply says there are 2 rows", "Used the script scripts/count.py"],
        },
        {
            "id": 2,
            "query": "List the columns of a CSV with name and age.",
            "assertions": [
                {"name": "cols", "description": "Names both columns"},
                {"name": "short", "check": "Is at most three sentences"},
                {"text": "Mentions age"},
            ],
            "must_have": ["name", "age"],
            "must_not_have": ["(?i)error"],
        },
    ],
}

TRIGGERS_LIST = [
    {"query": "what columns does this csv have", "should_trigger": True},
    {"query": "write me a poem about the sea", "should_trigger": False},
]
TRIGGERS_QUERIES = {"skill_name": "csv-summary", "queries": TRIGGERS_LIST}
TRIGGERS_CASES = {
    "cases": [
        {"prompt": "what columns does this csv have", "expected": "trigger"},
        {"prompt": "write me a poem about the sea", "expected": "do_not_trigger"},
    ]
}

VALLY = """\
name: csv-summary
description: Evaluates the csv-summary skill
type: capability
defaults:
  timeout: 5m
  runs: 3
stimuli:
  - name: Count rows
    prompt: How many rows does data/people.csv have?
    environment:
      files:
        - src: fixtures/people.csv
          dest: data/people.csv
    graders:
      - type: output-contains
        config:
          substring: rows
      - type: output-matches
        config:
          pattern: "\\\\b2\\\\b"
      - type: file-exists
        config:
          path: data/people.csv
      - type: exit-success
      - type: prompt
    rubric:
      - States the row count
      - Does not invent columns
    constraints:
      expect_tools: [bash]
      reject_tools: [web_fetch]
  - name: Stays out of poems
    prompt: Write a haiku about autumn.
    expect_activation: false
    graders:
      - type: output-not-contains
        config:
          substring: CSV
"""

VALLY_OLD = """\
config:
  runs: 1
scenarios:
  - name: Count rows
    prompt: How many rows does people.csv have?
    setup:
      files:
        - path: people.csv
          content: |
            name,age
            ann,3
    assertions:
      - type: output_contains
        value: rows
      - type: exit_success
    rubric:
      - States the row count
    timeout: 120
"""

PAI_SUITE = """\
name: csv-summary-suite
description: PAI cases for the csv skill
pass_threshold: 0.6
cases:
  - id: count-rows
    input: How many rows are in a CSV with a header and two lines?
    graders:
      - type: llm_rubric
        weight: 0.6
        params:
          rubric: Says there are two data rows
          scale: 5
      - type: natural_language_assert
        weight: 0.4
        params:
          assertions: [The reply gives a number]
  - id: not-a-csv
    prompt: Tell me a joke.
    negative: true
    graders:
      - type: string_match
        params:
          pattern: joke
      - type: tool_calls
        params:
          required: [read_file]
      - type: binary_tests
        params:
          required: [test_x.py]
"""

PAI_TASK = """\
task:
  id: route-001
  description: Routes CSV questions to the skill
  type: regression
  prompt: What are the columns of people.csv?
  graders:
    - type: natural_language_assert
      weight: 1.0
      params:
        assertion: The reply lists the columns
  pass_threshold: 0.9
"""

PAI_TASK_NO_PROMPT = """\
task:
  id: hook-001
  description: The validator blocks rm -rf
  graders:
    - type: state_check
      weight: 1.0
      params:
        check: bash_command_was_blocked
  pass_threshold: 0.99
"""


def shape(suite: Suite) -> list[dict[str, Any]]:
    """What a run would do with each test, as plain data (no positions or paths)."""
    out = []
    for test in suite.tests:
        agent = test.agent
        env = agent.environment if agent is not None else None
        out.append(
            {
                "id": test.id,
                "prompt": test.prompt.text,
                "should_trigger": test.should_trigger,
                "threshold": test.threshold,
                "asserts": [
                    (a.type, a.value, a.weight, a.threshold, a.metric, dict(a.options))
                    for a in test.every_assert
                ],
                "tools": [t.name for t in agent.tools] if agent is not None else None,
                "files": (
                    sorted((Path(str(f.src)).name, str(f.dest)) for f in env.files)
                    if env is not None
                    else None
                ),
                "commands": [c.command for c in env.commands] if env is not None else None,
            }
        )
    return out
