"""A suite of 2,000 tests written inline in the YAML: every test is read, placed and checked.

The suite comes from :func:`inline_suite`, the same shape as the benchmark's inline-YAML
case (bench/run.py); how fast it loads is the benchmark's business, not this test's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from skilleval.errors import SuiteError
from skilleval.suite.load import load_suite

HEADER = """\
version: 1
description: {n} echo tests written inline
model: echo
prompts:
  - "Repeat after me: {{{{request}}}}"
defaultTest:
  assert:
    - type: contains
      value: "{{{{word}}}}"
    - type: not-icontains
      value: as an ai
    - type: regex
      value: "{regex}"
    - type: max-length
      value: 400
tests:
"""
LINES_PER_TEST = 4


def inline_suite(path: Path, n: int, regex: str = "\\\\w+") -> Path:
    """Write a suite of ``n`` inline tests; test ``i`` starts on line ``first_line(i)``."""
    lines = [HEADER.format(n=n, regex=regex)]
    for i in range(n):
        lines.append(
            f"  - id: t{i:05d}\n"
            "    vars:\n"
            f'      request: "Write a commit message: I fixed crash number {i}."\n'
            f'      word: "#{i}"\n'
        )
    path.write_text("".join(lines), encoding="utf-8")
    return path


def first_line(i: int) -> int:
    return HEADER.count("\n") + 1 + i * LINES_PER_TEST


def test_two_thousand_inline_tests_load_with_their_positions(tmp_path: Path) -> None:
    suite, _ = load_suite(inline_suite(tmp_path / "suite.yaml", 2000))
    assert len(suite.tests) == 2000
    last = suite.tests[-1]
    assert last.id == "t01999"
    assert last.where.line == first_line(1999)
    assert last.vars == {
        "request": "Write a commit message: I fixed crash number 1999.",
        "word": "#1999",
    }
    # Every defaultTest assertion is compiled once and shared; one with a template keeps it,
    # to be rendered with each test's vars at run time (its vars are checked per test: see
    # test_default_templates.py).
    for k in range(4):
        shared = [t.asserts[k] for t in suite.tests]
        assert all(a is shared[0] for a in shared)
    assert suite.tests[7].asserts[0].value == "{{word}}"


def test_a_broken_default_assertion_is_still_reported(tmp_path: Path) -> None:
    with pytest.raises(SuiteError) as err:
        load_suite(inline_suite(tmp_path / "suite.yaml", 3, regex="("))
    lines = [str(d) for d in err.value.diagnostics]
    assert lines
    assert all("regex" in line or "(" in line for line in lines)
    assert {d.where.line for d in err.value.diagnostics} == {13}
