"""The ``javascript`` type, called directly with a Check: promptfoo's arguments and return shapes.

Expected verdicts follow promptfoo's documented rules (a bool passes or fails; a number is a
score that passes when ≥ ``threshold`` if given, else when > 0; an object is a GradingResult);
where skilleval differs (a throw is an ``error``, not a fail) the test says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skilleval.api import MARK, AssertionType, Check, Verdict
from skilleval.assertions.builtin.javascript import javascript
from skilleval.errors import Location

WHERE = Location("suite.yaml", 7, 9)


def run(output: str, value: str, **kw: Any) -> Verdict:
    verdict = javascript(Check(output=output, value=value, where=WHERE, **kw))
    assert isinstance(verdict, Verdict)
    return verdict


def check_value(value: Any) -> str | None:
    spec = getattr(javascript, MARK)
    assert isinstance(spec, AssertionType)
    assert spec.check_value is not None
    return spec.check_value(value)


@pytest.mark.parametrize(
    ("value", "threshold", "status", "score"),
    [
        ("output.length < 200", None, "pass", 1.0),
        ("output.startsWith('x')", None, "fail", 0.0),
        ("output.length / 10", None, "pass", 0.5),  # a score > 0 passes without a threshold
        ("output.length / 10", 0.5, "pass", 0.5),  # >= threshold
        ("output.length / 10", 0.6, "fail", 0.5),
        ("0", None, "fail", 0.0),
        ("({pass: true, score: 0.4, reason: 'ok'})", None, "pass", 0.4),
        ("({pass: true, score: 0.4, reason: 'ok'})", 0.5, "fail", 0.4),  # score < threshold
        ("({pass: false, score: 1})", None, "fail", 1.0),
        ("({score: 0.9})", None, "pass", 0.9),
        ("Promise.resolve(true)", None, "pass", 1.0),
    ],
)
def test_return_shapes(value: str, threshold: float | None, status: str, score: float) -> None:
    verdict = run("hello", value, threshold=threshold)
    assert (verdict.status, verdict.effective_score) == (status, pytest.approx(score))


def test_a_grading_results_reason_is_kept() -> None:
    assert run("hi", "({pass: true, score: 1, reason: 'said hi'})").reason == "said hi"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("undefined", "javascript returned undefined"),
        ("'yes'", "javascript returned str"),
        ("null", "javascript returned None"),
        ("0 / 0", "javascript returned NaN as its score"),
        ("({reason: 'no verdict'})", "without 'pass' or 'score'"),
    ],
)
def test_other_results_are_errors(value: str, message: str) -> None:
    verdict = run("hello", value)
    assert verdict.status == "error"
    assert message in (verdict.error or "")


def test_a_throw_is_an_error_naming_the_suite_position_and_line() -> None:
    """promptfoo fails the assertion; skilleval keeps errors apart from fails."""
    verdict = run("hello", "const words = null;\nreturn words.length > 0;")
    assert verdict.status == "error"
    assert verdict.error == (
        "JavaScript at suite.yaml:7:9, line 2 of the value threw "
        "TypeError: cannot read property 'length' of null"
    )


def test_the_context_argument() -> None:
    code = """
    return context.vars.city === 'Paris' && context.prompt === 'Where?' &&
      context.config.n === 2 && context.test.vars.city === 'Paris' &&
      context.logProbs === undefined && typeof output === 'string';
    """
    check = {"vars": {"city": "Paris"}, "prompt": "Where?", "config": {"n": 2}}
    assert run("Paris", code, **check).status == "pass"


def test_a_transformed_object_is_the_output() -> None:
    verdict = run(
        '{"color": "yellow"}',
        "output.color === 'yellow'",
        transformed={"color": "yellow"},
    )
    assert verdict.status == "pass"


def test_console_output_goes_into_details() -> None:
    verdict = run("hi", "console.log('checked', output);\nreturn true;")
    assert verdict.details == {"console": ["checked hi"]}


# The javascript values of promptfoo's public examples, on outputs of known length; the
# expected scores are worked out from the formulas.
SELF_GRADING = "Math.max(0, Math.min(1, 1 - (output.length - 100) / 900));"
CLAUDE_VS_GPT = (
    "output.length <= 100 ? 1 : output.length > 1000 ? 0 : 1 - (output.length - 100) / 900"
)
JSON_OUTPUT = (
    "JSON.parse(output).color === 'yellow' && JSON.parse(output).countries.includes('Ecuador')"
)


@pytest.mark.parametrize(
    ("value", "output", "status", "score"),
    [
        (SELF_GRADING, "x" * 50, "pass", 1.0),
        (SELF_GRADING, "x" * 550, "pass", 0.5),
        (SELF_GRADING, "x" * 1200, "fail", 0.0),
        (CLAUDE_VS_GPT, "x" * 100, "pass", 1.0),
        (CLAUDE_VS_GPT, "x" * 820, "pass", 0.2),
        (CLAUDE_VS_GPT, "x" * 1001, "fail", 0.0),
        (JSON_OUTPUT, '{"color": "yellow", "countries": ["Peru", "Ecuador"]}', "pass", 1.0),
        (JSON_OUTPUT, '{"color": "yellow", "countries": ["Peru"]}', "fail", 0.0),
    ],
)
def test_promptfoo_example_values(value: str, output: str, status: str, score: float) -> None:
    verdict = run(output, value)
    assert (verdict.status, verdict.effective_score) == (status, pytest.approx(score))


def test_a_json_parse_of_text_that_is_not_json_is_an_error() -> None:
    verdict = run("not json", JSON_OUTPUT)
    assert verdict.status == "error"
    assert "SyntaxError" in (verdict.error or "")


# --- files ----------------------------------------------------------------------------------


@pytest.fixture
def checks(tmp_path: Path) -> Path:
    (tmp_path / "check.js").write_text(
        "module.exports = (output, context) => output.length > context.config.n;\n"
        "module.exports.shout = (output) => ({pass: output === output.toUpperCase(),"
        " score: 1, reason: 'caps'});\n"
        "module.exports.broken = (output) => {\n  return output.nope.length;\n};\n",
        encoding="utf-8",
    )
    return tmp_path


def test_a_file_exports_the_check(checks: Path) -> None:
    verdict = run("abcd", "file://check.js", config={"n": 3}, base_dir=str(checks))
    assert verdict.status == "pass"


def test_a_file_function_by_name(checks: Path) -> None:
    assert run("ABC", "file://check.js:shout", base_dir=str(checks)).reason == "caps"


def test_a_throw_in_a_file_names_the_file_and_line(checks: Path) -> None:
    verdict = run("abc", "file://check.js:broken", base_dir=str(checks))
    assert verdict.status == "error"
    assert verdict.error is not None
    assert verdict.error.endswith(
        "check.js:4 threw TypeError: cannot read property 'length' of undefined"
    )


def test_a_missing_file_is_an_error(tmp_path: Path) -> None:
    verdict = run("abc", "file://gone.js", base_dir=str(tmp_path))
    assert verdict.status == "error"
    assert "gone.js" in (verdict.error or "")


# --- load-time checks -----------------------------------------------------------------------


def test_load_time_check_finds_syntax_errors_with_their_line() -> None:
    assert check_value("output.length < 200") is None
    assert check_value("const a = 1;\nreturn a +;") == (
        "JavaScript syntax error at line 2: unexpected token in expression: ';'"
    )


def test_a_one_line_return_gets_a_hint() -> None:
    problem = check_value("return output.length < 9")
    assert problem is not None
    assert problem.endswith("a one-line value is an expression: leave out `return`")


def test_file_references_must_name_commonjs_files() -> None:
    assert check_value("file://check.js") is None
    assert check_value("file://check.js:fn") is None
    assert "must name a .js or .cjs file" in (check_value("file://check.mjs") or "")
    assert "must name a .js or .cjs file" in (check_value("file://check.py") or "")


def test_templates_are_checked_after_rendering() -> None:
    assert check_value("output.includes('{{ word }}'") is None


def test_inline_errors_are_placed_at_the_value_when_known() -> None:
    verdict = run("x", "missing()", value_where=Location("suite.yaml", 8, 16))
    assert (verdict.error or "").startswith("JavaScript at suite.yaml:8:16, line 1 of the value")
