"""The built-in deterministic assertion types, called directly with a Check."""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from skilleval.api import MARK, AssertionType, Check, Stats, Verdict
from skilleval.assertions.builtin import length, perf, python, regex, structured, text
from skilleval.assertions.normalize import normalize_result
from skilleval.util import jsontext

Handler = Callable[[Check], Verdict]
MODULES = (text, regex, structured, length, perf, python)


def spec_of(fn: Handler) -> AssertionType:
    spec = getattr(fn, MARK)
    assert isinstance(spec, AssertionType)
    return spec


def run(fn: Handler, output: str, value: Any = None, **kw: Any) -> Verdict:
    verdict = fn(Check(output=output, value=value, **kw))
    assert isinstance(verdict, Verdict)
    return verdict


def check_value(fn: Handler, value: Any) -> str | None:
    spec = spec_of(fn)
    assert spec.check_value is not None
    return spec.check_value(value)


# --- declarations -----------------------------------------------------------------------------


def all_specs() -> list[AssertionType]:
    return [
        getattr(obj, MARK)
        for module in MODULES
        for obj in vars(module).values()
        if callable(obj) and hasattr(obj, MARK)
    ]


def test_the_builtin_modules_declare_exactly_the_deterministic_types() -> None:
    assert sorted(s.name for s in all_specs()) == sorted(
        [
            "equals", "contains", "icontains", "contains-all", "contains-any", "icontains-all",
            "icontains-any", "starts-with", "ends-with", "regex", "is-json", "contains-json",
            "jmespath", "max-length", "min-length", "word-count", "levenshtein", "latency",
            "max-tokens", "cost", "python",
        ]
    )  # fmt: skip


@pytest.mark.parametrize("spec", all_specs(), ids=lambda s: s.name)
def test_every_type_has_a_valid_value_schema_and_a_one_line_summary(spec: AssertionType) -> None:
    assert spec.value_schema is not None
    Draft202012Validator.check_schema(dict(spec.value_schema))
    assert spec.tier == "deterministic"
    assert spec.summary
    assert len(spec.summary) <= 100
    assert not spec.name.startswith("not-")


def test_only_latency_and_cost_take_their_value_from_threshold() -> None:
    assert {s.name for s in all_specs() if s.uses_threshold} == {"latency", "cost"}


def test_only_the_json_shape_checks_may_omit_their_value() -> None:
    assert {s.name for s in all_specs() if not s.value_required} == {"is-json", "contains-json"}


@pytest.mark.parametrize(
    ("fn", "value", "valid"),
    [
        (text.contains, "", True),
        (text.contains, 42, True),
        (text.contains, True, False),
        (text.contains, None, False),
        (text.contains_all, [], True),  # all of nothing passes, as in promptfoo
        (text.contains_all, "a, b", False),  # a string only in a promptfoo config
        (text.contains_all, ["a", 1], True),
        (text.equals, {"a": 1}, True),
        (text.equals, [1, 2], True),
        (text.equals, None, False),
        (regex.regex, r"\d+", True),
        (structured.is_json, {"type": "object"}, True),
        (structured.is_json, "object", False),
        (structured.jmespath_, "a.b", True),
        (structured.jmespath_, "", False),
        (structured.jmespath_, {"query": "a", "equals": None}, True),
        (structured.jmespath_, {"query": "a"}, False),
        (structured.jmespath_, {"query": "a", "equals": 1, "extra": 2}, False),
        (length.max_length, 10, True),
        (length.max_length, -1, False),
        (length.max_length, 2.5, False),
        (length.word_count, 3, True),
        (length.word_count, True, False),
        (length.word_count, {"min": 1}, True),
        (length.word_count, {"max": 9}, True),
        (length.word_count, {}, False),
        (length.word_count, {"min": 1, "most": 2}, False),
        (length.levenshtein, "reference", True),
        (perf.latency, 500, True),
        (perf.latency, -1, False),
        (perf.max_tokens, 128, True),
        (perf.cost, 0.01, True),
        (python.python, "", False),
        (python.python, "output == 'x'", True),
    ],
)
def test_value_schemas_accept_and_refuse(fn: Handler, value: Any, valid: bool) -> None:
    schema = spec_of(fn).value_schema
    assert schema is not None
    assert Draft202012Validator(dict(schema)).is_valid(value) is valid


# --- text -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fn", "output", "value", "passed", "reason"),
    [
        (text.equals, "Paris", "Paris", True, "output equals 'Paris'"),
        (text.equals, "Paris.", "Paris", False, "output 'Paris.' differs from 'Paris' at offset 5"),
        (text.equals, "Paris\n", "Paris", False, "'Paris\\n' differs"),
        (text.equals, "café ☕", "café ☕", True, "equals 'café ☕'"),
        (text.equals, "42", 42, True, "equals '42'"),
        (text.equals, "3.5", 3.5, True, "equals '3.5'"),
        (text.equals, "true", True, True, "equals 'true'"),
        (text.equals, "True", True, False, "differs from 'true'"),
        (text.contains, "The capital is Paris.", "Paris", True, "output contains 'Paris'"),
        (text.contains, "The capital is Paris.", "paris", False, "output lacks 'paris'"),
        (text.contains, "the answer is 42", 42, True, "contains '42'"),
        (text.contains, "naïve café", "café", True, "contains 'café'"),
        (text.contains, "日本語のテキスト", "テキスト", True, "contains 'テキスト'"),
        (text.contains, "anything", "", True, "contains ''"),
        (text.icontains, "PARIS", "paris", True, "contains 'paris' (ignoring case)"),
        (text.icontains, "STRASSE", "straße", True, "(ignoring case)"),
        (text.icontains, "ÉCOLE", "école", True, "contains 'école'"),
        (text.icontains, "London", "paris", False, "lacks 'paris' (ignoring case)"),
        (
            text.contains_all,
            "red green blue",
            ["red", "blue"],
            True,
            "contains all of 'red', 'blue'",
        ),
        (text.contains_all, "red", ["red", "x", "y"], False, "lacks 'x', 'y' (1 of 3 present)"),
        (text.contains_all, "1 and 2", [1, 2], True, "all of '1', '2'"),
        (text.contains_all, "Red", ["red"], False, "lacks 'red'"),
        (text.icontains_all, "RED Blue", ["red", "blue"], True, "(ignoring case)"),
        (text.icontains_all, "RED", ["red", "blue"], False, "lacks 'blue' (ignoring case)"),
        (text.contains_any, "a cat", ["dog", "cat"], True, "output contains 'cat'"),
        (text.contains_any, "a cow", ["dog", "cat"], False, "contains none of 'dog', 'cat'"),
        (text.contains_any, "in 2024", [2023, 2024], True, "contains '2024'"),
        (text.icontains_any, "A CAT", ["dog", "cat"], True, "contains 'cat' (ignoring case)"),
        (text.icontains_any, "A COW", ["dog"], False, "none of 'dog' (ignoring case)"),
        (text.starts_with, "Hello world", "Hello", True, "output starts with 'Hello'"),
        (text.starts_with, "Hello world", "Hi", False, "output starts with 'He', not 'Hi'"),
        (text.starts_with, "", "Hi", False, "output is empty"),
        (text.starts_with, "42 apples", 42, True, "starts with '42'"),
        (text.starts_with, "élan vital", "él", True, "starts with 'él'"),
        (text.ends_with, "The end.", "end.", True, "output ends with 'end.'"),
        (text.ends_with, "The end.", "end", False, "output ends with 'nd.', not 'end'"),
        (text.ends_with, "", "x", False, "output is empty"),
        (text.ends_with, "costs 9.5", 9.5, True, "ends with '9.5'"),
    ],
)
def test_text_checks(fn: Handler, output: str, value: Any, passed: bool, reason: str) -> None:
    verdict = run(fn, output, value)
    assert verdict.passed is passed
    assert verdict.error is None
    assert reason in verdict.reason


def test_contains_any_and_all_name_only_the_first_values() -> None:
    verdict = run(text.contains_any, "zzz", [f"word{i}" for i in range(12)])
    assert verdict.reason.endswith("and 7 more")


def test_reasons_quote_long_outputs_clipped() -> None:
    verdict = run(text.equals, "x" * 500, "y")
    assert "…" in verdict.reason
    assert len(verdict.reason) < 200


@pytest.mark.parametrize(
    ("output", "value", "passed", "reason"),
    [
        ('{"a": [1, 2], "b": "x"}', {"b": "x", "a": [1, 2]}, True, "output JSON equals"),
        ('  {"a": 1.0}\n', {"a": 1}, True, "equals the expected value"),
        ('{"a": {"b": "é"}}', {"a": {"b": "é"}}, True, "equals"),
        ('{"a": true}', {"a": 1}, False, "$.a is true, expected 1"),
        ('{"a": null}', {"a": 0}, False, "$.a is null, expected 0"),
        ("[1, 2, 3]", [1, 2], False, "$ has 3 items, expected 2"),
        ('[{"k": 1}]', [{"k": 2}], False, "$[0].k is 1, expected 2"),
        ('{"a": 1, "b": 2}', {"a": 1}, False, "$ has unexpected key 'b'"),
        ("{}", {"a": 1}, False, "$ lacks key 'a'"),
        ('{"a": 1}', [1], False, '$ is {"a":1}, expected [1]'),
        ("not json", {"a": 1}, False, "output is not JSON (expecting value at line 1 column 1)"),
        ('{"a": NaN}', {"a": 1}, False, "output is not JSON (NaN is not valid JSON)"),
    ],
)
def test_equals_with_a_mapping_or_list_compares_json(
    output: str, value: Any, passed: bool, reason: str
) -> None:
    verdict = run(text.equals, output, value)
    assert verdict.passed is passed
    assert reason in verdict.reason


def test_equals_compares_the_transformed_object_when_there_is_one() -> None:
    verdict = run(text.equals, "ignored", {"a": [1]}, transformed={"a": [1]})
    assert verdict.passed


# --- regex ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "pattern", "passed", "reason"),
    [
        ("order p42 shipped", r"p\d+", True, r"output matches /p\d+/ with 'p42'"),
        ("order shipped", r"p\d+", False, r"output has no match for /p\d+/"),
        ("Hello", r"(?i)^hello$", True, "with 'Hello'"),
        ("line one\nline two", r"^line two$", False, "no match"),
        ("line one\nline two", r"(?m)^line two$", True, "with 'line two'"),
        ("naïve", r"^\w+$", True, "with 'naïve'"),
        ("x" * 300, r"x+", True, "…'"),
    ],
)
def test_regex_searches_the_output(output: str, pattern: str, passed: bool, reason: str) -> None:
    verdict = run(regex.regex, output, pattern)
    assert verdict.passed is passed
    assert reason in verdict.reason


def test_regex_that_does_not_compile_at_run_time_is_an_error() -> None:
    verdict = run(regex.regex, "x", "(")
    assert verdict.error == "bad regex: missing ), unterminated subpattern at position 0"


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        (r"\d+", None),
        ("(", "bad regex: missing ), unterminated subpattern at position 0"),
        ("a[", "bad regex: unterminated character set at position 1"),
        ("*a", "bad regex: nothing to repeat at position 0"),
        ("ok\n(", "bad regex: missing ), unterminated subpattern at position 3 (line 2, column 1)"),
        (
            "a{1000000}",
            "bad regex: the pattern's repeats write out 1,000,000 items, over the limit"
            " of 100,000; use a smaller count, or + or * instead of {n}",
        ),
        ("(" * 2000 + ")" * 2000, "bad regex: the pattern nests groups too deeply"),
    ],
)
def test_regex_check_value_compiles_the_pattern(pattern: str, problem: str | None) -> None:
    assert check_value(regex.regex, pattern) == problem


# --- is-json / contains-json ------------------------------------------------------------------

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name"],
}


@pytest.mark.parametrize(
    ("output", "schema", "passed", "reason"),
    [
        ('{"a": 1}', None, True, "output is JSON"),
        (" [1, 2]\n", None, True, "output is JSON"),
        ("42", None, True, "output is JSON"),
        ('"日本"', None, True, "output is JSON"),
        ("", None, False, "output is not JSON (expecting value at line 1 column 1)"),
        ('{"a": 1', None, False, "expecting ',' delimiter at line 1 column 8"),
        ('```json\n{"a": 1}\n```', None, False, "output is not JSON"),
        ('Sure! {"a": 1}', None, False, "output is not JSON"),
        ('{"a": Infinity}', None, False, "Infinity is not valid JSON"),
        ('{"name": "Ada", "tags": ["x"]}', PERSON, True, "output is JSON matching the schema"),
        (
            '{"name": "Ada", "tags": ["x", 3]}',
            PERSON,
            False,
            "at $.tags[1]: 3 is not of type 'string'",
        ),
        ('{"tags": []}', PERSON, False, "at $: 'name' is a required property"),
        ('"not-an-email"', {"format": "email"}, False, "is not a 'email'"),
        ("{}", True, True, "matching the schema"),
        ("{}", False, False, "does not match the schema"),
    ],
)
def test_is_json(output: str, schema: Any, passed: bool, reason: str) -> None:
    verdict = run(structured.is_json, output, schema)
    assert verdict.passed is passed
    assert verdict.error is None
    assert reason in verdict.reason


def test_is_json_reports_an_unresolvable_reference_as_an_error() -> None:
    verdict = run(structured.is_json, "{}", {"$ref": "https://example.invalid/s.json"})
    assert verdict.error is not None
    assert "schema reference cannot be resolved" in verdict.error


def test_is_json_with_an_invalid_schema_at_run_time_is_an_error() -> None:
    verdict = run(structured.is_json, "{}", {"type": "strin"})
    assert verdict.error is not None
    assert verdict.error.startswith("invalid JSON Schema")


@pytest.mark.parametrize("fn", [structured.is_json, structured.contains_json])
@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        (None, None),
        (PERSON, None),
        (True, None),
        ({"type": "strin"}, "invalid JSON Schema at $.type: 'strin' is not valid under any"),
        ({"properties": {"a": {"minimum": "x"}}}, "at $.properties.a.minimum: 'x' is not of type"),
        ({"required": "name"}, "at $.required: 'name' is not of type 'array'"),
    ],
)
def test_json_schema_check_value(fn: Handler, schema: Any, problem: str | None) -> None:
    found = check_value(fn, schema)
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem in found


@pytest.mark.parametrize(
    ("output", "fragments"),
    [
        ("no json here", []),
        ('Sure: {"a": 1}.', [(6, {"a": 1})]),
        ('{"a": {"b": 1}} then [1, 2]', [(0, {"a": {"b": 1}}), (21, [1, 2])]),
        ('{broken {"ok": true}', [(8, {"ok": True})]),
        ('```json\n"just text"\n```', [(8, "just text")]),
        ('```JSON\n{"a": 1}\n```', [(8, {"a": 1})]),
        ('```python\n{"a": 1}\n```', [(10, {"a": 1})]),
        ('Text {"a": [1, {"b": 2}]} and {"c": 3}', [(5, {"a": [1, {"b": 2}]}), (30, {"c": 3})]),
        ("[" * 5000, []),
        ('{"x": NaN}', []),
    ],
)
def test_json_fragments_are_found_once_each_in_order(output: str, fragments: list[Any]) -> None:
    assert list(jsontext.json_fragments(output)) == fragments


@pytest.mark.parametrize(
    ("output", "schema", "passed", "reason"),
    [
        ('Here you go: {"name": "Ada"}', None, True, "output contains a JSON object at offset 13"),
        ("Numbers: [1, 2, 3].", None, True, "a JSON array at offset 9"),
        ('```json\n{"name": "Ada"}\n```', None, True, "a JSON object at offset 8"),
        ("```json\n42\n```", None, True, "a JSON number at offset 8"),
        ("no braces at all", None, False, "output contains no JSON object or array"),
        ("{not json}", None, False, "no JSON object or array"),
        ('a {"x": 1} b {"name": "Ada"}', PERSON, True, "matching the schema at offset 13"),
        (
            'a {"x": 1}',
            PERSON,
            False,
            "output has 1 JSON fragment, none matching the schema (first fails at $: 'name'",
        ),
        ('{"x": 1} {"y": 2}', PERSON, False, "output has 2 JSON fragments"),
        ("plain text", PERSON, False, "output contains no JSON object or array"),
    ],
)
def test_contains_json(output: str, schema: Any, passed: bool, reason: str) -> None:
    verdict = run(structured.contains_json, output, schema)
    assert verdict.passed is passed
    assert reason in verdict.reason


# --- jmespath ---------------------------------------------------------------------------------

ORDER = json.dumps(
    {
        "id": 7,
        "items": [{"name": "pen", "price": 2}, {"name": "lamp", "price": 30}],
        "notes": [],
        "count": 0,
        "gift": False,
    }
)


@pytest.mark.parametrize(
    ("value", "passed", "reason"),
    [
        ("items[0].name", True, "query 'items[0].name' gives \"pen\", which is truthy"),
        ("count", True, "gives 0, which is truthy"),
        ("notes", False, "gives [], which is falsy"),
        ("gift", False, "gives false, which is falsy"),
        ("missing", False, "gives null, which is falsy"),
        ("length(items) == `2`", True, "gives true"),
        ({"query": "id", "equals": 7}, True, "query 'id' gives 7"),
        ({"query": "id", "equals": 8}, False, "gives 7, which differs: $ is 7, expected 8"),
        ({"query": "items[?price > `10`].name", "equals": ["lamp"]}, True, 'gives ["lamp"]'),
        ({"query": "items[*].price", "equals": [2, 31]}, False, "$[1] is 30, expected 31"),
        ({"query": "missing", "equals": None}, True, "gives null"),
        ({"query": "gift", "equals": 0}, False, "$ is false, expected 0"),
    ],
)
def test_jmespath(value: Any, passed: bool, reason: str) -> None:
    verdict = run(structured.jmespath_, ORDER, value)
    assert verdict.passed is passed
    assert verdict.error is None
    assert reason in verdict.reason


def test_jmespath_fails_when_the_output_is_not_json() -> None:
    verdict = run(structured.jmespath_, "Sorry, I can't.", "a")
    assert not verdict.passed
    assert verdict.error is None
    assert verdict.reason.startswith("output is not JSON")


def test_jmespath_queries_the_transformed_object_when_there_is_one() -> None:
    verdict = run(structured.jmespath_, "not json", "a", transformed={"a": [1]})
    assert verdict.passed


@pytest.mark.parametrize("fn", [text.equals, structured.jmespath_])
def test_a_text_transform_result_is_parsed_like_the_output(fn: Handler) -> None:
    value: Any = {"a": 1} if fn is text.equals else {"query": "a", "equals": 1}
    assert run(fn, '{"a": 1}', value, transformed='{"a": 1}').passed


def test_jmespath_type_error_on_the_data_is_an_error() -> None:
    verdict = run(structured.jmespath_, '{"a": 3}', "length(a)")
    assert verdict.error is not None
    assert verdict.error.startswith("query 'length(a)' cannot run on this output")


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("a.b[0]", None),
        ({"query": "a", "equals": 1}, None),
        ("foo[]]", "bad jmespath query: unexpected token: ] at position 5"),
        ("`bad", "bad jmespath query: unclosed ` delimiter at position 0"),
        ("length(", "bad jmespath query: it ends too early"),
        ({"query": "a.", "equals": 1}, "bad jmespath query: expecting: ["),
    ],
)
def test_jmespath_check_value_compiles_the_query(value: Any, problem: str | None) -> None:
    found = check_value(structured.jmespath_, value)
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert found.startswith(problem)


# --- length -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fn", "output", "value", "passed", "reason"),
    [
        (length.max_length, "héllo", 5, True, "output is 5 characters (max 5)"),
        (length.max_length, "hello!", 5, False, "output is 6 characters (max 5)"),
        (length.max_length, "👍", 1, True, "output is 1 character (max 1)"),
        (length.max_length, "", 0, True, "output is 0 characters"),
        (length.min_length, "hello", 5, True, "output is 5 characters (min 5)"),
        (length.min_length, "hi", 5, False, "output is 2 characters (min 5)"),
        (length.word_count, "one two three", 3, True, "output has 3 words (expected 3)"),
        (length.word_count, "one  two\n\tthree ", 3, True, "3 words"),
        (length.word_count, "one", 3, False, "output has 1 word (expected 3)"),
        (length.word_count, "", 0, True, "output has 0 words"),
        (length.word_count, "héllo wörld", {"min": 2}, True, "(expected at least 2)"),
        (length.word_count, "one", {"min": 2}, False, "1 word (expected at least 2)"),
        (length.word_count, "a b c", {"max": 2}, False, "3 words (expected at most 2)"),
        (length.word_count, "a b", {"min": 2, "max": 4}, True, "(expected 2–4)"),
        (length.word_count, "a b c d", {"min": 2, "max": 4}, True, "4 words"),
        (length.word_count, "a b c d e", {"min": 2, "max": 4}, False, "5 words (expected 2–4)"),
    ],
)
def test_length_checks(fn: Handler, output: str, value: Any, passed: bool, reason: str) -> None:
    verdict = run(fn, output, value)
    assert verdict.passed is passed
    assert reason in verdict.reason


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (3, None),
        ({"min": 1, "max": 1}, None),
        ({"max": 2}, None),
        ({"min": 5, "max": 2}, "word-count min 5 is greater than max 2"),
    ],
)
def test_word_count_check_value_refuses_empty_ranges(value: Any, problem: str | None) -> None:
    assert check_value(length.word_count, value) == problem


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [
        ("", "", 0),
        ("abc", "", 3),
        ("", "abc", 3),
        ("same", "same", 0),
        ("kitten", "sitting", 3),
        ("flaw", "lawn", 2),
        ("café", "cafe", 1),
        ("🙂🙂", "🙂", 1),
        ("intention", "execution", 5),
        ("abcdef", "azced", 3),
    ],
)
def test_edit_distance(a: str, b: str, distance: int) -> None:
    assert length.edit_distance(a, b) == distance
    assert length.edit_distance(b, a) == distance


@pytest.mark.parametrize(
    ("output", "reference", "threshold", "passed", "similarity", "reason"),
    [
        ("kitten", "sitting", None, True, 1 - 3 / 7, "output is 3 edits from 'sitting' (max 5"),
        ("kitten", "sitting", 2, False, 1 - 3 / 7, "(max 2;"),
        ("Paris", "Paris", None, True, 1.0, "output is 0 edits"),
        ("", "", None, True, 1.0, "0 edits"),
        ("completely different", "x", None, False, 0.0, "20 edits"),
        ("1234", 1235, 1, True, 0.75, "1 edit from '1235' (max 1; similarity 0.75)"),
    ],
)
def test_levenshtein(
    output: str,
    reference: Any,
    threshold: float | None,
    passed: bool,
    similarity: float,
    reason: str,
) -> None:
    verdict = run(length.levenshtein, output, reference, threshold=threshold)
    assert verdict.passed is passed
    # promptfoo's score: pass or fail against the distance; the similarity is kept beside it.
    assert verdict.score == (1.0 if passed else 0.0)
    assert verdict.details["similarity"] == pytest.approx(similarity)
    assert reason in verdict.reason


def test_levenshtein_on_long_texts_is_exact() -> None:
    # 6,000 characters each took 23 s in pure Python; the answer must be the same, fast.
    a = "abcdefgh " * 700
    b = a.replace("c", "x")
    verdict = run(length.levenshtein, a, b, threshold=700)
    assert verdict.passed is True
    assert "700 edits" in verdict.reason


def test_levenshtein_past_the_size_limit_is_an_error_not_a_wait() -> None:
    side = int(length.MAX_CELLS**0.5) + 1
    verdict = run(length.levenshtein, "a" * side, "b" * side)
    assert verdict.error is not None
    assert "too slow to compute" in verdict.error


# --- latency, max-tokens, cost ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "threshold", "stats", "passed", "reason"),
    [
        (1000, None, Stats(latency_ms=850.0), True, "latency was 850 ms (max 1000 ms)"),
        (1000, None, Stats(latency_ms=1000.4), False, "latency was 1000.4 ms (max 1000 ms)"),
        (None, 500, Stats(latency_ms=120.0), True, "(max 500 ms)"),
        (
            1000,
            None,
            Stats(latency_ms=1234.5, cached=True),
            False,
            "latency was 1234.5 ms (max 1000 ms), recorded when the output was first generated",
        ),
    ],
)
def test_latency(
    value: Any, threshold: float | None, stats: Stats, passed: bool, reason: str
) -> None:
    verdict = run(perf.latency, "x", value, threshold=threshold, stats=stats)
    assert verdict.passed is passed
    assert reason in verdict.reason


def test_latency_of_a_fresh_output_does_not_mention_the_cache() -> None:
    assert "cache" not in run(perf.latency, "x", 10, stats=Stats(latency_ms=1.0)).reason


def test_latency_without_any_limit_is_an_error() -> None:
    assert run(perf.latency, "x").error is not None


@pytest.mark.parametrize(
    ("used", "limit", "passed", "reason"),
    [
        (100, 100, True, "reply used 100 completion tokens (max 100)"),
        (101, 100, False, "reply used 101 completion tokens (max 100)"),
        (1, 5, True, "used 1 completion token "),
    ],
)
def test_max_tokens(used: int, limit: int, passed: bool, reason: str) -> None:
    verdict = run(perf.max_tokens, "x", limit, stats=Stats(completion_tokens=used))
    assert verdict.passed is passed
    assert reason in verdict.reason


@pytest.mark.parametrize(
    ("value", "threshold", "spent", "passed", "reason"),
    [
        (0.01, None, 0.0, True, "cost was $0 (max $0.01)"),
        (0.01, None, 0.0125, False, "cost was $0.0125 (max $0.01)"),
        (None, 0.5, 0.25, True, "(max $0.5)"),
    ],
)
def test_cost(value: Any, threshold: float | None, spent: float, passed: bool, reason: str) -> None:
    verdict = run(perf.cost, "x", value, threshold=threshold, cost=spent)
    assert verdict.passed is passed
    assert reason in verdict.reason


def test_cost_unknown_for_the_provider_is_an_error() -> None:
    verdict = run(perf.cost, "x", 0.01)
    assert verdict.error == "cost is not known for this provider"


# --- python -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "passed", "reason"),
    [
        ("'Paris' in output", True, "python returned true"),
        ("output.startswith('Rome')", False, "python returned false"),
        ("  len(output) > 3  \n", True, "returned true"),
        ("context['vars']['city'] in output", True, "returned true"),
        ("json.loads('[1]') == [1] and bool(re.search(r'P\\w+', output))", True, "true"),
        ("n = len(output.split())\nreturn n >= 3", True, "returned true"),
        ("if 'Paris' in output:\n    return 1.0\nreturn 0.0", True, "python returned 1"),
        (
            "    words = output.split()\n    return {'pass': len(words) > 9, 'reason': 'too short'}",
            False,
            "too short",
        ),
        ("return context['test_id'] == 't1' and context['trial'] == 2", True, "true"),
        ("context['stats']['completion_tokens'] == 9", True, "true"),
    ],
)
def test_python_inline(code: str, passed: bool, reason: str) -> None:
    verdict = run(
        python.python,
        "The capital is Paris",
        code,
        vars={"city": "Paris"},
        test_id="t1",
        trial=2,
        stats=Stats(completion_tokens=9),
    )
    assert verdict.passed is passed
    assert verdict.error is None
    assert reason in verdict.reason


@pytest.mark.parametrize(
    ("returned", "threshold", "passed", "score", "reason"),
    [
        ("True", None, True, None, "python returned true"),
        ("0.7", 0.5, True, 0.7, "python returned 0.7 (threshold 0.5)"),
        ("0.3", 0.5, False, 0.3, "python returned 0.3 (threshold 0.5)"),
        ("0", None, False, 0.0, "python returned 0"),
        ("0.1", None, True, 0.1, "python returned 0.1"),
        ("3", None, True, 1.0, "python returned 3 (score clamped to 1)"),
        ("{'pass': True, 'score': 0.9, 'reason': 'fine'}", None, True, 0.9, "fine"),
        ("{'passed': False}", None, False, None, "python returned pass: false"),
        ("{'score': 0.6}", 0.5, True, 0.6, "python returned pass: true"),
        ("{'pass': True, 'score': 0.4}", 0.5, False, 0.4, "score 0.4 is below threshold 0.5"),
    ],
)
def test_python_return_shapes(
    returned: str, threshold: float | None, passed: bool, score: float | None, reason: str
) -> None:
    verdict = run(python.python, "x", f"return {returned}", threshold=threshold)
    assert verdict.passed is passed
    assert verdict.error is None
    assert verdict.score == (None if score is None else pytest.approx(score))
    assert reason in verdict.reason


def test_python_mapping_extras_become_snake_case_details() -> None:
    verdict = run(python.python, "x", "return {'pass': True, 'namedScores': {'tone': 1}}")
    assert verdict.details == {"named_scores": {"tone": 1}}


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("x = 1", "python returned None; expected a bool, a number"),
        ("'yes'", "python returned str; expected"),
        ("[True]", "python returned list; expected"),
        ("{'reason': 'hm'}", "python returned a mapping without 'pass' or 'score'"),
        ("{'pass': 'yes'}", "python returned 'pass' as str; expected true or false"),
        ("{'pass': True, 'score': 'high'}", "python returned 'score' as str; expected a number"),
        ("float('nan')", "python returned NaN as its score"),
        ("output ==", "python syntax error at line 1"),
    ],
)
def test_python_bad_returns_are_errors(code: str, error: str) -> None:
    verdict = run(python.python, "x", code)
    assert not verdict.passed
    assert verdict.error is not None
    assert error in verdict.error


def test_python_returning_a_verdict_keeps_it() -> None:
    code = "from skilleval.api import Verdict\nreturn Verdict(True, 'mine', score=0.5)"
    assert run(python.python, "x", code) == Verdict(True, "mine", score=0.5)


def test_python_exceptions_propagate_for_the_runner_to_record() -> None:
    with pytest.raises(ZeroDivisionError):
        run(python.python, "x", "1 / 0")


def write(path: Path, source: str) -> Path:
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def test_python_file_calls_get_assert_relative_to_the_base_dir(tmp_path: Path) -> None:
    write(
        tmp_path / "checks.py",
        """
        def get_assert(output, context):
            return {"pass": output == context["vars"]["want"], "reason": "compared"}
        """,
    )
    verdict = run(
        python.python, "ok", "file://checks.py", base_dir=str(tmp_path), vars={"want": "ok"}
    )
    assert verdict == Verdict(True, "compared", details={})


def test_python_file_names_its_function(tmp_path: Path) -> None:
    write(
        tmp_path / "checks.py",
        """
        def short(output, context):
            return len(output) < 5
        """,
    )
    verdict = run(python.python, "a long output", "file://checks.py:short", base_dir=str(tmp_path))
    assert not verdict.passed
    assert verdict.reason == "short returned false"


def test_python_file_accepts_an_absolute_path(tmp_path: Path) -> None:
    path = write(tmp_path / "abs.py", "def get_assert(output, context):\n    return 0.8\n")
    verdict = run(python.python, "x", f"file://{path}", base_dir="/nonexistent", threshold=0.5)
    assert verdict.passed
    assert verdict.score == pytest.approx(0.8)


def test_python_file_is_imported_again_when_it_changes(tmp_path: Path) -> None:
    path = write(tmp_path / "flip.py", "def get_assert(output, context):\n    return True\n")
    assert run(python.python, "x", "file://flip.py", base_dir=str(tmp_path)).passed
    assert run(python.python, "x", "file://flip.py", base_dir=str(tmp_path)).passed
    write(path, "def get_assert(output, context):\n    return False\n")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert not run(python.python, "x", "file://flip.py", base_dir=str(tmp_path)).passed


def test_python_file_may_define_dataclasses(tmp_path: Path) -> None:
    write(
        tmp_path / "dc.py",
        """
        from __future__ import annotations
        from dataclasses import dataclass

        @dataclass
        class Result:
            ok: bool

        def get_assert(output, context):
            return Result(True).ok
        """,
    )
    assert run(python.python, "x", "file://dc.py", base_dir=str(tmp_path)).passed


@pytest.mark.parametrize(
    ("files", "ref", "error"),
    [
        ({}, "file://missing.py", "python file not found: missing.py"),
        (
            {"c.py": "def other(o, c):\n    return True\n"},
            "file://c.py",
            "c.py has no function 'get_assert'",
        ),
        ({"c.py": "get_assert = 3\n"}, "file://c.py", "c.py has no function 'get_assert'"),
        ({"c.py": "def f(o, c):\n    return True\n"}, "file://c.py:g", "c.py has no function 'g'"),
    ],
)
def test_python_file_problems_are_errors(
    tmp_path: Path, files: dict[str, str], ref: str, error: str
) -> None:
    for name, source in files.items():
        write(tmp_path / name, source)
    verdict = run(python.python, "x", ref, base_dir=str(tmp_path))
    assert verdict.error is not None
    assert verdict.error.startswith(error)


@pytest.mark.parametrize(
    ("code", "problem"),
    [
        ("len(output) > 3", None),
        ("n = len(output)\nreturn n > 3", None),
        ("file://checks.py", None),
        ("file://checks.py:grade", None),
        ("output ==", "python syntax error at line 1: invalid syntax"),
        ("x = 1\nif x\n    return 2", "python syntax error at line 2, column 5: expected ':'"),
        ("a = (\nreturn a", "python syntax error at line 1, column 5: '(' was never closed"),
        ("x = 1\n  y = 2\nreturn y", "python syntax error at line 2, column 2: unexpected indent"),
        ("file://checks.txt", "python file reference must name a .py file: file://checks.txt"),
    ],
)
def test_python_check_value_reports_syntax_errors_with_their_line(
    code: str, problem: str | None
) -> None:
    assert check_value(python.python, code) == problem


# --- normalize_result -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "threshold", "expected"),
    [
        (True, None, Verdict(True, "check returned true")),
        (False, 0.5, Verdict(False, "check returned false")),
        (0.5, 0.5, Verdict(True, "check returned 0.5 (threshold 0.5)", score=0.5)),
        (-2, None, Verdict(False, "check returned -2 (score clamped to 0)", score=0.0)),
        ({"pass": True}, None, Verdict(True, "check returned pass: true")),
        ({"score": 0.0}, None, Verdict(False, "check returned pass: false", score=0.0)),
    ],
)
def test_normalize_result(obj: Any, threshold: float | None, expected: Verdict) -> None:
    assert normalize_result(obj, threshold) == expected


def test_normalize_result_names_the_source_in_reasons() -> None:
    assert normalize_result(object(), None, label="grade").error == (
        "grade returned object; expected a bool, a number, a mapping with pass/score/reason,"
        " or a Verdict"
    )
