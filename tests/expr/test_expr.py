"""The ``expr`` language: parsing, semantics, safety and error reporting."""

from __future__ import annotations

import ast
import contextlib
import operator
import pickle
import re
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skilleval import expr as expr_module
from skilleval.expr import (
    FUNCTIONS,
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_ITEMS,
    Expr,
    ExprRuntimeError,
    ExprSyntaxError,
    compile_expr,
)

ROOT = Path(__file__).resolve().parents[2]

ENV: dict[str, Any] = {
    "output": "Hello world.\nSecond line here.",
    "json": {
        "score": 4,
        "ratio": 0.5,
        "name": "Ada",
        "tags": ["a", "b", "c"],
        "nested": {"deep": {"value": 7}},
        "empty": [],
        "nothing": None,
        "flag": True,
        "_hidden": "secret",
    },
    "vars": {"topic": "cats", "limit": 10, "_x": 1},
    "stats": {"prompt_tokens": 12, "completion_tokens": 30, "latency_ms": 81.5, "cached": False},
}


def run(source: str, env: dict[str, Any] | None = None) -> Any:
    return compile_expr(source).evaluate(ENV if env is None else env)


def syntax_error(source: str) -> ExprSyntaxError:
    with pytest.raises(ExprSyntaxError) as info:
        compile_expr(source)
    return info.value


# --------------------------------------------------------------------------- literals


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("42", 42),
        ("0", 0),
        ("3.25", 3.25),
        ("1.", 1.0),
        (".5", 0.5),
        ("1e3", 1000.0),
        ("2.5E-1", 0.25),
        ('"double"', "double"),
        ("'single'", "single"),
        ("'it\\'s'", "it's"),
        ('"say \\"hi\\""', 'say "hi"'),
        ('"a\\nb\\tc\\r"', "a\nb\tc\r"),
        ('"back\\\\slash"', "back\\slash"),
        ('"\\u00e9t\\u00E9"', "été"),
        # Unknown escapes are kept, so regexes read naturally.
        ('"\\d+\\.\\b"', "\\d+\\.\\b"),
        ("''", ""),
        ("true", True),
        ("false", False),
        ("null", None),
        ("True", True),
        ("False", False),
        ("None", None),
        ("[]", []),
        ("[1, 'two', null]", [1, "two", None]),
        ("[1, 2,]", [1, 2]),
        ("[[1], []]", [[1], []]),
    ],
)
def test_literals(source: str, expected: Any) -> None:
    result = run(source)
    assert result == expected
    assert type(result) is type(expected)


# --------------------------------------------------------------------------- operators


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("10 - 4 - 3", 3),
        ("2 * 3 % 4", 2),
        ("7 // 2", 3),
        ("-7 // 2", -4),
        ("-7 % 3", 2),
        ("7 / 2", 3.5),
        ("-2 * 3", -6),
        ("--2", 2),
        ("+-2", -2),
        ("-json.score", -4),
        ("1 + 2 == 3", True),
        ("1 < 2 == True", False),  # chained: 1 < 2 and 2 == True
        ("1 < 2 < 3", True),
        ("3 > 2 > 2", False),
        ("1 <= 1 >= 0", True),
        ("1 != 2", True),
        ("'a' + 'b' == 'ab'", True),
        ("[1] + [2, 3]", [1, 2, 3]),
        ("'ab' * 3", "ababab"),
        ("3 * 'ab'", "ababab"),
        ("[0] * 2", [0, 0]),
        ("'x' * -1", ""),
        ("'abc' < 'abd'", True),
        ("[1, 2] < [1, 3]", True),
        ("not 1 == 2", True),
        ("not true and false", False),
        ("not (true and false)", True),
        ("true or false and false", True),
        ("(true or false) and false", False),
        ("1 and 2", 2),
        ("0 and 2", 0),
        ("0 or ''", ""),
        ("json.nothing or 'default'", "default"),
        ("'b' in 'abc'", True),
        ("'z' not in 'abc'", True),
        ("2 in [1, 2]", True),
        ("'score' in json", True),
        ("'missing' not in json", True),
        ("not 'a' in 'abc'", False),
        ("1 + 2 in [3]", True),
        ("'yes' if json.score > 3 else 'no'", "yes"),
        ("'yes' if json.score > 9 else 'no'", "no"),
        ("1 if false else 2 if false else 3", 3),
        ("1 if true else 2 + 10", 1),
        ("len(output) <= 200 and json.score >= 3", True),
        ("stats.latency_ms < 100 and not stats.cached", True),
    ],
)
def test_operators_and_precedence(source: str, expected: Any) -> None:
    assert run(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [("false and len(3)", False), ("true or len(3)", True), ("null and missing_name", None)],
)
def test_short_circuit_skips_the_other_side(source: str, expected: Any) -> None:
    assert run(source) == expected


def test_conditional_evaluates_only_the_chosen_branch() -> None:
    assert run("1 if true else 1 / 0") == 1
    assert run("1 / 0 if false else 2") == 2


# --------------------------------------------------------------------------- access and null


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("json.score", 4),
        ("json['score']", 4),
        ('json["name"]', "Ada"),
        ("json.nested.deep.value", 7),
        ("json['nested']['deep'].value", 7),
        ("json.tags[0]", "a"),
        ("json.tags[-1]", "c"),
        ("json.tags[-3]", "a"),
        ("json.tags[1:]", ["b", "c"]),
        ("json.tags[:-1]", ["a", "b"]),
        ("json.tags[:]", ["a", "b", "c"]),
        ("json.tags[null:2]", ["a", "b"]),
        ("output[0]", "H"),
        ("output[:5]", "Hello"),
        ("output[-1]", "."),
        ("vars.topic", "cats"),
        ("vars['_x']", 1),  # keys with '_' are data; only the '.' form is refused
        ("json['_hidden']", "secret"),
        ("[10, 20][1]", 20),
        ("stats.prompt_tokens + stats.completion_tokens", 42),
    ],
)
def test_access(source: str, expected: Any) -> None:
    assert run(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        "json.missing",
        "json.missing.deeper",
        "json.nothing.x",
        "null.x",
        "null[0]",
        "null[1:]",
        "json.tags[3]",
        "json.tags[-4]",
        "json.tags.name",
        "json.tags['0']",
        "json.tags[1.0]",
        "json.tags[true]",
        "json.empty[0]",
        "json.score.x",
        "json.score[0]",
        "output.upper",
        "output[100]",
        "json[[1]]",
        "json.tags['a':]",
        "json[0]",
    ],
)
def test_missing_data_is_null(source: str) -> None:
    assert run(source) is None


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("null == null", True),
        ("json.missing == null", True),
        ("json.missing != null", False),
        ("null == 0", False),
        ("null == false", False),
        ("null < 1", False),
        ("null > 1", False),
        ("null <= null", False),
        ("null >= 0", False),
        ("1 < null", False),
        ("json.missing > 3", False),
        ("not (json.missing > 3)", True),
        ("0 < json.missing < 10", False),
        ("'a' in null", False),
        ("'a' not in null", True),
        ("contains(null, 'a')", False),
        ("null in [null]", True),
        ("not null", True),
        ("bool(null)", False),
    ],
)
def test_null_semantics(source: str, expected: Any) -> None:
    assert run(source) == expected


def test_env_values_may_be_any_mapping_or_sequence() -> None:
    env: dict[str, Any] = {
        "vars": MappingProxyType({"items": ("x", "y"), "inner": MappingProxyType({"k": 1})})
    }
    assert run("vars.items[-1]", env) == "y"
    assert run("vars.items[0:1]", env) == ["x"]
    assert run("vars.inner.k + len(vars.items)", env) == 3
    assert run("keys(vars.inner)", env) == ["k"]
    assert run("str(vars.inner)", env) == '{"k": 1}'


def test_keywords_work_as_member_names() -> None:
    env = {"x": {"true": 1, "in": 2, "not": 3, "if": 4, "None": 5}}
    assert run("x.true + x.in + x.not + x.if + x.None", env) == 15


def test_unknown_name_is_a_runtime_error_with_suggestion() -> None:
    with pytest.raises(ExprRuntimeError, match=r"unknown name 'ouput'; did you mean 'output'\?"):
        run("len(ouput)")
    with pytest.raises(ExprRuntimeError, match="available names: json, output, stats, vars"):
        run("zzz")


def test_names_lists_free_names_only() -> None:
    compiled = compile_expr("len(output) > 2 and json(output).a == vars.x and lower('A') in stats")
    assert compiled.names == frozenset({"output", "vars", "stats"})
    assert compile_expr("json.score").names == frozenset({"json"})
    assert compile_expr("1 + 2").names == frozenset()


# --------------------------------------------------------------------------- functions

FUNCTION_CASES: list[tuple[str, Any]] = [
    ("len(output)", 30),
    ("len(json.tags)", 3),
    ("len(json)", 9),
    ("len('')", 0),
    ("lower('AbC')", "abc"),
    ("upper('AbC')", "ABC"),
    ("strip('  a b \\n')", "a b"),
    ("startswith(output, 'Hello')", True),
    ("startswith(output, 'world')", False),
    ("endswith(output, 'here.')", True),
    ("endswith(output, 'Hello')", False),
    ("contains(output, 'world')", True),
    ("contains(json.tags, 'b')", True),
    ("contains(json, 'score')", True),
    ("contains(json.tags, 'z')", False),
    ("matches(output, '\\d')", False),
    ("matches(output, '^Second', )", False),
    ("matches(output, '(?m)^Second')", True),
    ("matches('order 66', '\\d+')", True),
    ("matches(output, '\\bworld\\b')", True),
    ("count('banana', 'an')", 2),
    ("count([1, 2, 1], 1)", 2),
    ("words(output)", 5),
    ("words('   ')", 0),
    ("lines(output)", 2),
    ("lines('')", 0),
    ("lines('a\\n')", 1),
    ("abs(-3)", 3),
    ("abs(2.5)", 2.5),
    ("min(3, 1, 2)", 1),
    ("min(json.tags)", "a"),
    ("max([1, 5, 2])", 5),
    ("max(1, 2.5)", 2.5),
    ("sum([1, 2, 3])", 6),
    ("sum([])", 0),
    ("sum([0.5, 0.25])", 0.75),
    ("round(2.567, 2)", 2.57),
    ("round(2.5)", 2),
    ("round(3.5)", 4),
    ("int('42')", 42),
    ("int(' 7 ')", 7),
    ("int(3.9)", 3),
    ("int(true)", 1),
    ("float('2.5')", 2.5),
    ("float(2)", 2.0),
    ("str(12)", "12"),
    ("str(1.5)", "1.5"),
    ("str('x')", "x"),
    ("str(true)", "true"),
    ("str(null)", "null"),
    ("str([1, 'a'])", '[1, "a"]'),
    ("str(json.nested)", '{"deep": {"value": 7}}'),
    ("bool('')", False),
    ("bool('x')", True),
    ("bool([])", False),
    ("bool(0.0)", False),
    ("any([0, '', 3])", True),
    ("any([])", False),
    ("all([1, 'x'])", True),
    ("all([1, 0])", False),
    ("keys(json.nested)", ["deep"]),
    ("values(vars)", ["cats", 10, 1]),
    ("number('3')", 3),
    ("number(' -2.5 ')", -2.5),
    ("number('1e2')", 100.0),
    ("number(7)", 7),
    ("number('seven')", None),
    ("number('nan')", None),
    ("number('inf')", None),
    ("number(null)", None),
    ("number(true)", None),
    ("number(json.missing) == null", True),
    ("json('{\"a\": [1, 2]}').a[1]", 2),
    ("json('[1, 2]')", [1, 2]),
    ("json('not json')", None),
    ("json('')", None),
]


@pytest.mark.parametrize(("source", "expected"), FUNCTION_CASES)
def test_functions(source: str, expected: Any) -> None:
    result = run(source)
    assert result == expected
    assert type(result) is type(expected)


def test_every_function_is_tested_and_documented() -> None:
    tested = {source.partition("(")[0] for source, _ in FUNCTION_CASES}
    assert set(FUNCTIONS) <= tested
    docs = (ROOT / "docs" / "expr.md").read_text(encoding="utf-8")
    missing = [name for name in FUNCTIONS if f"`{name}(" not in docs]
    assert not missing, f"docs/expr.md does not describe {missing}"


def test_documented_examples_compile_and_run() -> None:
    docs = (ROOT / "docs" / "expr.md").read_text(encoding="utf-8")
    examples = docs.split("## Examples", 1)[1]
    sources = re.findall(r"^\| `(.+?)` \|", examples, flags=re.MULTILINE)
    assert len(sources) >= 10
    env = {
        **ENV,
        "json": {"status": "ok", "items": [{"price": 1}] * 3, "confidence": None},
        "vars": {"greeting": "Hello", "short": True},
    }
    for source in sources:
        compile_expr(source).evaluate(env)


def test_function_table_is_consistent() -> None:
    for name, func in FUNCTIONS.items():
        assert func.name == name
        assert func.signature.startswith(name + "(")
        assert func.summary
        assert func.max_args is None or func.min_args <= func.max_args
    with pytest.raises(TypeError):
        FUNCTIONS["eval"] = FUNCTIONS["len"]  # type: ignore[index]


def test_json_name_and_json_function_coexist() -> None:
    env = {"json": None, "output": '{"score": 5}'}
    assert run("json.score == null and json(output).score == 5", env) is True


# --------------------------------------------------------------------------- safety


@pytest.mark.parametrize(
    ("source", "col"),
    [
        ("output.__class__", 8),
        ("output.__class__.__mro__", 8),
        ('__import__("os")', 1),
        ("vars._x", 6),
        ("_", 1),
        ("_private + 1", 1),
        ("json.a._b", 8),
        ("len(__builtins__)", 5),
        ("(output).__len__", 10),
        ("[1][0].__class__", 8),
    ],
)
def test_underscore_names_are_rejected_at_parse_time(source: str, col: int) -> None:
    error = syntax_error(source)
    assert "starting with '_'" in error.message
    assert (error.line, error.col) == (1, col)


@pytest.mark.parametrize(
    "module", sorted(Path(expr_module.__file__).parent.glob("*.py")), ids=lambda p: p.stem
)
def test_package_never_calls_python_eval(module: Path) -> None:
    source = module.read_text(encoding="utf-8")
    forbidden = {"eval", "exec", "compile", "__import__", "getattr", "setattr", "vars", "globals"}
    calls = [
        node.func.id
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    ]
    assert not forbidden & set(calls)
    for word in ("eval(", "exec(", "builtins"):
        assert word not in source.replace(".evaluate(", "")


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("'ab' * 10000000", "limit is 1,000,000"),
        ("[1] * 2000000", "limit is 1,000,000"),
        ("2000000 * 'x'", "limit is 1,000,000"),
        ("('x' * 600000) + ('y' * 600000)", "limit is 1,000,000"),
        ("([0] * 600000) + ([0] * 600000)", "limit is 1,000,000"),
    ],
)
def test_size_caps(source: str, fragment: str) -> None:
    with pytest.raises(ExprRuntimeError, match=fragment):
        run(source)


def test_size_cap_allows_the_limit_itself() -> None:
    assert len(run(f"'x' * {MAX_ITEMS}")) == MAX_ITEMS


@pytest.mark.parametrize(
    "source",
    [
        "-" * 5000 + "1",
        "not " * 5000 + "x",
        "[" * 3000 + "]" * 3000,
        "a" + ".b" * 3000,
        "len(" * 3000 + "x" + ")" * 3000,
    ],
)
def test_deep_nesting_is_a_syntax_error_not_a_crash(source: str) -> None:
    error = syntax_error(source)
    assert "nested too deeply" in error.message


def test_nesting_up_to_the_limit_evaluates() -> None:
    assert run("-" * (MAX_DEPTH - 1) + "1") == (-1) ** (MAX_DEPTH - 1)
    assert run("(" * 5000 + "1" + ")" * 5000) == 1  # parentheses add no depth
    assert run(" + ".join(["1"] * 5000)) == 5000  # long flat chains are not nesting


# --------------------------------------------------------------------------- syntax errors


def test_unknown_function_suggests_close_names() -> None:
    error = syntax_error("lenght(output) > 3")
    assert error.message == "unknown function 'lenght'; did you mean 'len'?"
    assert (error.line, error.col) == (1, 1)
    assert "did you mean 'startswith'" in syntax_error("1 + startwith(output, 'a')").message
    assert syntax_error("1 + startwith(output, 'a')").col == 5


def test_unknown_function_without_close_match_lists_all() -> None:
    message = syntax_error("frobnicate(1)").message
    assert message.startswith("unknown function 'frobnicate'; available functions: abs, all,")


def test_only_whitelisted_functions_can_be_called() -> None:
    for name in ("eval", "exec", "open", "getattr", "print", "type"):
        assert "unknown function" in syntax_error(f"{name}('1')").message
    # Calls on values are not part of the grammar at all.
    assert syntax_error("output.upper()").col == 13


@pytest.mark.parametrize(
    ("source", "message", "line", "col"),
    [
        ("", "expression is empty", 1, 1),
        ("   \n ", "expression is empty", 1, 1),
        ("1 +", "expression ended early; expected a value", 1, 4),
        ("1 + ", "expression ended early; expected a value", 1, 4),
        ("(1", "expression ended early; expected ')'", 1, 3),
        ("1 if x", "expression ended early; expected 'else'", 1, 7),
        ("len(1, 2", "expression ended early", 1, 9),
        ("len(output))", "unexpected ')'", 1, 12),
        ("(1 + 2))", "unexpected ')'", 1, 8),
        (")", "unexpected ')'; expected a value", 1, 1),
        ("1 2", "unexpected number 2", 1, 3),
        ("output json", "unexpected name 'json'", 1, 8),
        ("'a' 'b'", "unexpected string 'b'", 1, 5),
        ("a..b", "unexpected '.'; expected a name", 1, 3),
        ("a = 1", "unexpected character '='; use '==' to compare", 1, 3),
        ("a && b", "unexpected character '&'; use 'and'", 1, 3),
        ("a || b", "unexpected character '|'; use 'or'", 1, 3),
        ("!a", "unexpected character '!'; use 'not'", 1, 1),
        ("1 $ 2", "unexpected character '$'", 1, 3),
        ("'abc", "unterminated string", 1, 1),
        ('x == "abc', "unterminated string", 1, 6),
        ("2 ** 3", "unexpected '*'; expected a value", 1, 4),
        ("1 +\n  * 2", "unexpected '*'; expected a value", 2, 3),
        ("len(\n  output\n", "expression ended early", 2, 9),
        ('"\\u12"', "\\u needs four hex digits", 1, 2),
        ("'ab\\uZZZZ'", "\\u needs four hex digits", 1, 4),
        ("'\\ud800'", "\\u escape is a surrogate", 1, 2),
        ("len()", "len() takes 1 argument, got 0", 1, 1),
        ("1 + len(1, 2)", "len() takes 1 argument, got 2", 1, 5),
        ("round(1, 2, 3)", "round() takes 1 to 2 arguments, got 3", 1, 1),
        ("max()", "max() takes at least 1 argument, got 0", 1, 1),
        ("matches(output, '(')", "invalid regular expression", 1, 17),
        ("9" * 5000, "number is too long", 1, 1),
    ],
)
def test_syntax_errors(source: str, message: str, line: int, col: int) -> None:
    error = syntax_error(source)
    assert error.message.startswith(message)
    assert (error.line, error.col) == (line, col)


def test_syntax_error_text_includes_position() -> None:
    assert str(syntax_error("len(output))")) == "unexpected ')' at col 12"
    assert str(syntax_error("1 +\n  * 2")) == "unexpected '*'; expected a value at line 2, col 3"


def test_syntax_error_survives_pickling() -> None:
    error = pickle.loads(pickle.dumps(syntax_error("1 +")))
    assert (error.message, error.line, error.col) == (
        "expression ended early; expected a value",
        1,
        4,
    )


def test_source_must_be_a_string() -> None:
    with pytest.raises(TypeError):
        compile_expr(3)  # type: ignore[arg-type]


def test_compiled_expressions_are_cached_and_immutable() -> None:
    first = compile_expr("json.score + 1")
    assert compile_expr("json.score + 1") is first
    assert isinstance(first, Expr)
    assert first == Expr("json.score + 1", frozenset({"json"}), lambda env: None)
    with pytest.raises(AttributeError):
        first.source = "2"  # type: ignore[misc]
    assert first.evaluate({"json": {"score": 1}}) == 2


# --------------------------------------------------------------------------- runtime errors


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ('"a" - 1', "cannot apply '-' to string and int"),
        ("'a' + 1", "cannot apply '+' to string and int"),
        ("[1] + 'a'", "cannot apply '+' to list and string"),
        ("json.missing + 1", "cannot apply '+' to null and int"),
        ("'a' * 'b'", "cannot apply '*' to string and string"),
        ("'a' * 1.5", "cannot apply '*' to string and float"),
        ("'10' / 2", "cannot apply '/' to string and int"),
        ("'%s' % 1", "cannot apply '%' to string and int"),
        ("1 / 0", "division by zero in '/'"),
        ("1 // 0", "division by zero in '//'"),
        ("1 % 0.0", "division by zero in '%'"),
        ("-'a'", "cannot apply unary '-' to string"),
        ("-null", "cannot apply unary '-' to null"),
        ("'a' < 1", "cannot compare string and int with '<'"),
        ("json < 1", "cannot compare object and int with '<'"),
        ("[1] >= ['a']", "cannot compare list and list with '>='"),
        ("1 in 'abc'", "'in <string>' needs a string on the left, not int"),
        ("1 in 5", "'in' needs a string, list or object on the right, not int"),
        ("len(3)", "len() expects a string, list or object, got int"),
        ("len(null)", "len() expects a string, list or object, got null"),
        ("lower(1)", "lower() expects a string, got int"),
        ("upper(null)", "upper() expects a string, got null"),
        ("strip([])", "strip() expects a string, got list"),
        ("startswith(output, 1)", "startswith() expects a string as argument 2, got int"),
        ("endswith(1, 'a')", "endswith() expects a string as argument 1, got int"),
        ("contains(3, 1)", "'in' needs a string, list or object on the right, not int"),
        ("matches(output, vars.limit)", "matches() expects a string as argument 2, got int"),
        ("matches(output, vars.topic + '(')", "matches(): invalid regular expression"),
        ("count(5, 'a')", "count() expects a string or list as argument 1, got int"),
        ("count('aa', 1)", "count() expects a string as argument 2, got int"),
        ("words(null)", "words() expects a string, got null"),
        ("lines(1)", "lines() expects a string, got int"),
        ("abs('1')", "abs() expects a number, got string"),
        ("min([])", "min() of an empty list"),
        ("max(3)", "max() expects a list, got int"),
        ("min([1, 'a'])", "min() cannot compare int, string"),
        ("max(1, null)", "max() cannot compare int, null"),
        ("sum('abc')", "sum() expects a list, got string"),
        ("sum([1, null])", "sum() expects a list of numbers, found null"),
        ("round('1')", "round() expects a number as argument 1, got string"),
        ("round(1.5, 1.5)", "round() expects an int as argument 2, got float"),
        ("int('x')", "int() cannot parse 'x'"),
        ("int('3.5')", "int() cannot parse '3.5'"),
        ("int(null)", "int() expects a number, got null"),
        ("int(float('inf'))", "int():"),
        ("float('abc')", "float() cannot parse 'abc'"),
        ("float([])", "float() expects a number, got list"),
        ("any(1)", "any() expects a list, got int"),
        ("all('ab')", "all() expects a list, got string"),
        ("keys([])", "keys() expects an object, got list"),
        ("values(null)", "values() expects an object, got null"),
        ("json(1)", "json() expects a string, got int"),
    ],
)
def test_runtime_errors(source: str, fragment: str) -> None:
    with pytest.raises(ExprRuntimeError) as info:
        run(source)
    assert fragment in str(info.value)


def test_runtime_errors_from_odd_env_values_are_wrapped() -> None:
    class Grumpy:
        def __eq__(self, other: object) -> bool:
            raise ValueError("no comparing")

        __hash__ = object.__hash__

    with pytest.raises(ExprRuntimeError, match="no comparing"):
        run("x == 1", {"x": Grumpy()})


# --------------------------------------------------------------------------- properties

_INT_OPS: dict[str, Callable[[int, int], int | float]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
    "/": operator.truediv,
}


def _combine(children: st.SearchStrategy[tuple[str, Any]]) -> st.SearchStrategy[tuple[str, Any]]:
    def binary(op: str, left: tuple[str, Any], right: tuple[str, Any]) -> tuple[str, Any]:
        source = f"({left[0]} {op} {right[0]})"
        if left[1] is ZeroDivisionError or right[1] is ZeroDivisionError:
            return source, ZeroDivisionError
        try:
            return source, _INT_OPS[op](left[1], right[1])
        except ZeroDivisionError:
            return source, ZeroDivisionError

    def negate(child: tuple[str, Any]) -> tuple[str, Any]:
        if child[1] is ZeroDivisionError:
            return f"-{child[0]}", ZeroDivisionError
        return f"-{child[0]}", -child[1]

    return st.one_of(
        st.builds(binary, st.sampled_from(sorted(_INT_OPS)), children, children),
        st.builds(negate, children),
    )


ARITHMETIC = st.recursive(
    st.integers(min_value=0, max_value=50).map(lambda n: (str(n), n)), _combine, max_leaves=12
)


@settings(deadline=None, max_examples=300)
@given(ARITHMETIC)
def test_arithmetic_agrees_with_python(case: tuple[str, Any]) -> None:
    source, expected = case
    if expected is ZeroDivisionError:
        with pytest.raises(ExprRuntimeError, match="division by zero"):
            run(source)
    else:
        assert run(source) == expected


@settings(deadline=None, max_examples=200)
@given(
    st.integers(-100, 100),
    st.integers(-100, 100),
    st.sampled_from(["==", "!=", "<", "<=", ">", ">="]),
)
def test_comparisons_agree_with_python(a: int, b: int, op: str) -> None:
    python = {
        "==": operator.eq,
        "!=": operator.ne,
        "<": operator.lt,
        "<=": operator.le,
        ">": operator.gt,
        ">=": operator.ge,
    }[op]
    assert run(f"{a} {op} {b}") is python(a, b)


def _quote(text: str) -> str:
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    )
    return f'"{escaped}"'


@settings(deadline=None)
@given(st.text(max_size=30))
def test_string_literals_round_trip(text: str) -> None:
    assert run(_quote(text)) == text
    assert run(f"len({_quote(text)})") == len(text)


@settings(deadline=None, max_examples=400)
@given(st.text(alphabet=" ()[]{}.,:+-*/%<>=!&|'\"\\_0123456789abcdefjlnostuvx\n", max_size=40))
def test_arbitrary_text_fails_only_with_expression_errors(text: str) -> None:
    failure: ExprSyntaxError | None = None
    try:
        compiled = compile_expr(text)
    except ExprSyntaxError as error:
        failure = error
    if failure is not None:
        assert failure.line >= 1
        assert failure.col >= 1
        return
    with contextlib.suppress(ExprRuntimeError):
        compiled.evaluate({**ENV, **{name: 1 for name in compiled.names}})


# --------------------------------------------------------------------------- limits (issue: hostile inputs)

BIG = "9" * MAX_INT_DIGITS  # the longest integer literal Python itself will read


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("round(10, -1000000000)", 0),  # would compute 10**1000000000 first
        ("round(-10, -1000000000)", 0),
        ("round(15, -1)", 20),
        ("round(10, 1000000000)", 10),
        ("round(1.5, -1000000000)", 0.0),
        ("round(1.5, 1000000000)", 1.5),
        (f"round({BIG}, -{MAX_INT_DIGITS + 1})", 0),
        (f"round({BIG}, -{MAX_INT_DIGITS + 2})", 0),
    ],
)
def test_round_with_extreme_digits_answers_at_once(source: str, expected: Any) -> None:
    assert run(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        f"{BIG} * {BIG}",
        f"{BIG} + 1",
        f"-{BIG} - 1",
        f"sum([{BIG}, {BIG}])",
        f"round({BIG}, -{MAX_INT_DIGITS})",  # rounds up to 1 followed by 4,300 zeros
        f"{'9' * 3000} * {'9' * 3000}",
    ],
)
def test_integers_past_the_digit_limit_are_runtime_errors(source: str) -> None:
    with pytest.raises(ExprRuntimeError, match="more than 4,300 digits"):
        run(source)


def test_integers_up_to_the_digit_limit_are_fine() -> None:
    assert run(f"{BIG} - 1 + 1") == int(BIG)
    assert len(str(run(f"{'9' * 2000} * {'9' * 2000}"))) == 4000


@pytest.mark.parametrize(
    "source",
    [
        # 1,000,000 references to one 1,000,000-character string: 10**12 characters as text.
        "str(['a' * 1000000] * 1000000)",
        "['a' * 1000000] * 2",
        "['ab'] * 600000",
        "[['x' * 1000] * 1000] * 2",
        # A list literal is weighed item by item, so it stops at the second string.
        "['a' * 700000, 'b' * 700000, 'c' * 700000]",
        "[[1] * 700000] + [[1] * 700000]",
        # str() of a value under the limit whose JSON text is over it.
        "str([''] * 300000)",
    ],
)
def test_values_built_past_the_size_limit_fail_at_once(source: str) -> None:
    with pytest.raises(ExprRuntimeError, match="limit is 1,000,000"):
        run(source)


def test_values_up_to_the_size_limit_are_built() -> None:
    assert len(run(f"[1] * {MAX_ITEMS}")) == MAX_ITEMS
    assert len(run("['a' * 499999] * 2")) == 2  # 2 items + 2 × 499,999 characters
    assert run("len(str(['ab'] * 1000))") == len('"ab", ') * 1000


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "output.toUpperCase()",
            "output.toUpperCase(...) calls a method, and expr has none: write upper(output)",
        ),
        (
            "output.upper()",
            "output.upper(...) calls a method, and expr has none: write upper(output)",
        ),
        (
            "output.trim()",
            "output.trim(...) calls a method, and expr has none: write strip(output)",
        ),
        (
            "json.name.startsWith('A')",
            "json.name.startsWith(...) calls a method, and expr has none:"
            " write startswith(json.name, ...)",
        ),
        ("JSON.parse(output)", "JSON.parse(...) is JavaScript; in expr, write json(...)"),
        ("output.split(',')", "output.split(...) calls a method, and expr has none: call one"),
    ],
)
def test_method_calls_get_the_equivalent_function(source: str, message: str) -> None:
    error = syntax_error(source)
    assert error.message.startswith(message)
    assert error.col == source.index("(") + 1


def test_every_yaml_example_in_the_docs_loads_and_compiles() -> None:
    """Pasting an example from docs/expr.md into a suite must work as written."""
    from io import StringIO

    from ruamel.yaml import YAML

    docs = (ROOT / "docs" / "expr.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", docs, flags=re.DOTALL)
    assert len(blocks) >= 2
    for block in blocks:
        for item in YAML(typ="safe").load(StringIO(block))["assert"]:
            compile_expr(item["value"])


def test_every_table_example_pastes_into_yaml_as_a_plain_value() -> None:
    """The Examples table's expressions, written after `value: `, read back unchanged."""
    from io import StringIO

    from ruamel.yaml import YAML

    docs = (ROOT / "docs" / "expr.md").read_text(encoding="utf-8")
    examples = docs.split("## Examples", 1)[1]
    sources = re.findall(r"^\| `(.+?)` \|", examples, flags=re.MULTILINE)
    for source in sources:
        loaded = YAML(typ="safe").load(StringIO(f"value: {source}\n"))
        assert loaded == {"value": source}, source


def test_transform_results_past_the_digit_limit_err_and_the_run_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An integer over 4,300 digits cannot be written as text: an error verdict, not an abort."""
    import json
    import textwrap

    from skilleval.cli import run_cli

    suite = tmp_path / "suite.yaml"
    suite.write_text(
        textwrap.dedent(
            f"""
            version: 1
            model:
              provider: scripted
              default: '[{BIG}, {BIG}]'
            tests:
              - id: jmespath-sum
                prompt: q
                options:
                  transform: {{jmespath: sum(@)}}
                assert:
                  - type: contains
                    value: "9"
              - id: expr-product
                prompt: q
                assert:
                  - type: contains
                    transform: json[0] * 10
                    value: "9"
              - id: fine
                prompt: q
                assert:
                  - type: contains
                    value: "9"
            """
        ),
        encoding="utf-8",
    )
    run_cli(["run", str(suite), "--json"])
    doc = json.loads(capsys.readouterr().out)
    asserts = {r["test_id"]: r["asserts"][0] for r in doc["records"]}
    assert {k: a["status"] for k, a in asserts.items()} == {
        "jmespath-sum": "error",
        "expr-product": "error",
        "fine": "pass",
    }
    assert "transform failed" in asserts["jmespath-sum"]["reason"]
    assert "more than 4,300 digits" in asserts["expr-product"]["reason"]
