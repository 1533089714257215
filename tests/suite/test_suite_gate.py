"""The `gate:` block is parsed when the suite loads: bad conditions are positioned errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from skilleval.cli import run_cli
from skilleval.errors import SuiteError
from skilleval.suite.gate import Condition, parse_condition
from skilleval.suite.load import load_suite


@pytest.mark.parametrize(
    ("text", "op", "bound"),
    [(">= 0.9", ">=", 0.9), ("<1", "<", 1.0), (" == .5 ", "==", 0.5), ("> 3.", ">", 3.0)],
)
def test_conditions_parse(text: str, op: str, bound: float) -> None:
    parsed = parse_condition(text)
    assert isinstance(parsed, Condition)
    assert (parsed.op, parsed.bound, parsed.text) == (op, bound, text)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (">= 0.9.1", "'0.9.1' after >= is not a number"),
        (">=", "nothing after >= is not a number"),
        (">= ..", "'..' after >= is not a number"),
        ("0.9", "expected a comparison"),
        ("=> 0.9", "expected a comparison"),
    ],
)
def test_bad_conditions_say_why(text: str, reason: str) -> None:
    parsed = parse_condition(text)
    assert isinstance(parsed, str)
    assert reason in parsed


@pytest.mark.parametrize(
    ("condition", "actual", "holds"),
    [(">= 0.9", 0.9, True), ("> 0.9", 0.9, False), ("< 0.5", 0.2, True), ("== 1", None, False)],
)
def test_conditions_hold(condition: str, actual: float | None, holds: bool) -> None:
    parsed = parse_condition(condition)
    assert isinstance(parsed, Condition)
    assert parsed.holds(actual) is holds


SUITE = """
version: 1
model: echo
gate:
  pass_rate: "{pass_rate}"
  max_errors: 1
tests:
  - prompt: hi
    assert:
      - type: contains
        value: hi
"""


def test_the_loaded_suite_carries_the_parsed_gate(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(SUITE).format(pass_rate=">= 0.75"), encoding="utf-8")
    suite, _ = load_suite(path)
    assert suite.gate.pass_rate == Condition(">=", 0.75, ">= 0.75")
    assert suite.gate.max_errors == 1
    assert suite.gate.lift is None


def test_a_malformed_gate_is_refused_at_load_with_its_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(SUITE).lstrip().format(pass_rate=">= 0.9.1"), encoding="utf-8")
    with pytest.raises(SuiteError) as err:
        load_suite(path)
    (diag,) = err.value.diagnostics
    assert (diag.where.line, diag.where.col) == (4, 14)
    # `run` stops before any model call, with the suite's exit code, and writes no run.
    assert run_cli(["run", str(path)]) == 4
    assert "gate.pass_rate: '0.9.1' after >= is not a number" in capsys.readouterr().err
