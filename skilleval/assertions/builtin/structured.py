"""JSON checks on the model's output: whole-output JSON, embedded JSON, and JMESPath queries."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import jmespath
from jmespath import exceptions as jmespath_errors

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.builtin._common import (
    clip,
    dump,
    json_difference,
    quote,
    transformed_object,
)
from skilleval.assertions.builtin._formats import format_checker
from skilleval.suite.template import is_template
from skilleval.util.jsontext import json_error, json_fragments, loads_strict, lower_first

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

_SCHEMA_VALUE: dict[str, Any] = {
    "type": ["object", "boolean"],
    "description": "a JSON Schema (draft 2020-12) the JSON must satisfy",
}
_JMESPATH_VALUE: dict[str, Any] = {
    "oneOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "properties": {"query": {"type": "string", "minLength": 1}, "equals": {}},
            "required": ["query", "equals"],
            "additionalProperties": False,
        },
    ]
}

# --- JSON Schema ------------------------------------------------------------------------------


def check_schema(value: Any) -> str | None:
    """The reason ``value`` is not a valid draft 2020-12 JSON Schema, or None when it is."""
    if value is None:
        return None
    from jsonschema import Draft202012Validator  # lazy: start-up time
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(value)
    except SchemaError as exc:
        return f"invalid JSON Schema at {exc.json_path}: {clip(exc.message)}"
    return None


@functools.lru_cache(maxsize=64)
def _validator_for(key: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator  # lazy: start-up time

    schema = json.loads(key)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=format_checker())


def _validator(schema: Any) -> Draft202012Validator:
    """A cached validator for ``schema``.

    Raises:
        SchemaError: The schema is invalid.
    """
    return _validator_for(json.dumps(schema, sort_keys=True))


def _schema_error(validator: Draft202012Validator, instance: Any) -> ValidationError | None:
    from jsonschema.exceptions import best_match  # lazy: start-up time

    error: ValidationError | None = best_match(validator.iter_errors(instance))
    return error


def _describe(error: ValidationError) -> str:
    return f"at {error.json_path}: {clip(error.message)}"


# --- is-json ----------------------------------------------------------------------------------


@assertion("is-json", value=_SCHEMA_VALUE, value_required=False, check_value=check_schema)
def is_json(check: Check) -> Verdict:
    """Whole output is JSON, optionally matching a JSON Schema given as the value.

    Any JSON value counts, as in promptfoo: ``42`` and ``"hi"`` are JSON. Surrounding
    whitespace is allowed; a Markdown fence is not (use ``contains-json``).
    """
    try:
        data = loads_strict(check.output)
    except ValueError as exc:
        return Verdict.of(False, f"output is not JSON ({json_error(exc)})")
    if check.value is None:
        return Verdict.of(True, "output is JSON")
    from jsonschema.exceptions import SchemaError  # lazy: start-up time
    from referencing.exceptions import Unresolvable

    try:
        error = _schema_error(_validator(check.value), data)
    except SchemaError as exc:
        return Verdict.errored(f"invalid JSON Schema: {clip(exc.message)}")
    except Unresolvable as exc:
        return Verdict.errored(f"schema reference cannot be resolved: {exc}")
    if error is None:
        return Verdict.of(True, "output is JSON matching the schema")
    return Verdict.of(False, f"output JSON does not match the schema {_describe(error)}")


# --- contains-json ----------------------------------------------------------------------------


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    return "boolean" if isinstance(value, bool) else "number"


@assertion("contains-json", value=_SCHEMA_VALUE, value_required=False, check_value=check_schema)
def contains_json(check: Check) -> Verdict:
    """Output contains a JSON object or array, optionally one matching a JSON Schema.

    Fragments are found by decoding at each ``{`` and ``[``; a fence tagged ``json`` also
    counts, whatever JSON value it holds. With a schema, the assertion passes when any
    fragment satisfies it.
    """
    fragments = list(json_fragments(check.output))
    if not fragments:
        return Verdict.of(False, "output contains no JSON object or array")
    # An object or array inside an array found counts too, as promptfoo finds them.
    if check.value is None:
        offset, value = fragments[0]
        return Verdict.of(True, f"output contains a JSON {_kind(value)} at offset {offset}")
    from jsonschema.exceptions import SchemaError  # lazy: start-up time
    from referencing.exceptions import Unresolvable

    try:
        validator = _validator(check.value)
        errors = []
        for offset, value in _with_items(fragments):
            error = _schema_error(validator, value)
            if error is None:
                return Verdict.of(
                    True, f"output contains JSON matching the schema at offset {offset}"
                )
            errors.append(error)
    except SchemaError as exc:
        return Verdict.errored(f"invalid JSON Schema: {clip(exc.message)}")
    except Unresolvable as exc:
        return Verdict.errored(f"schema reference cannot be resolved: {exc}")
    count = "1 JSON fragment" if len(fragments) == 1 else f"{len(fragments)} JSON fragments"
    return Verdict.of(
        False,
        f"output has {count}, none matching the schema (first fails {_describe(errors[0])})",
    )


def _with_items(fragments: list[tuple[int, Any]]) -> Iterator[tuple[int, Any]]:
    """Each fragment, then the objects and arrays inside each array fragment, depth first."""
    for offset, value in fragments:
        yield offset, value
        stack = [value] if isinstance(value, list) else []
        while stack:
            for item in stack.pop():
                if isinstance(item, (dict, list)):
                    yield offset, item
                if isinstance(item, list):
                    stack.append(item)


# --- jmespath ---------------------------------------------------------------------------------


def _query_error(exc: jmespath_errors.JMESPathError) -> str:
    if isinstance(exc, jmespath_errors.EmptyExpressionError):
        return "bad jmespath query: it is empty"
    if isinstance(exc, jmespath_errors.IncompleteExpressionError):
        return "bad jmespath query: it ends too early"
    if isinstance(exc, jmespath_errors.LexerError):
        return f"bad jmespath query: {lower_first(exc.message)} at position {exc.lexer_position}"
    if isinstance(exc, jmespath_errors.ParseError):
        return f"bad jmespath query: {lower_first(exc.msg)} at position {exc.lex_position}"
    return f"bad jmespath query: {lower_first(str(exc))}"


@functools.lru_cache(maxsize=256)
def _compile(query: str) -> Any:
    return jmespath.compile(query)


def _query_of(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("query"), str):
        return str(value["query"])
    return None


def check_query(value: Any) -> str | None:
    """The reason the JMESPath query in ``value`` does not compile, or None when it does."""
    query = _query_of(value)
    if query is None or is_template(query):
        return None
    try:
        _compile(query)
    except jmespath_errors.JMESPathError as exc:
        return _query_error(exc)
    return None


def _truthy(value: Any) -> bool:
    # JMESPath truthiness: numbers, 0 included, are true; empty containers are false
    return not (value is None or value is False or value in ("", [], {}))


@assertion("jmespath", value=_JMESPATH_VALUE, check_value=check_query)
def jmespath_(check: Check) -> Verdict:
    """A JMESPath query on the output's JSON is truthy, or equals a given value.

    The value is a query string, which passes when its result is truthy in JMESPath's sense
    (not null, false, or an empty string, list or object; ``0`` is truthy), or a mapping
    ``{query, equals}``, which passes when the result deep-equals ``equals``. The query runs on
    the transform's result when it was not text, else on the output parsed as JSON.
    """
    query = _query_of(check.value)
    if query is None:
        return Verdict.errored("jmespath needs a query string or {query, equals}")
    try:
        compiled = _compile(query)
    except jmespath_errors.JMESPathError as exc:
        return Verdict.errored(_query_error(exc))
    data = transformed_object(check)
    if data is None:
        try:
            data = loads_strict(check.output)
        except ValueError as exc:
            return Verdict.of(False, f"output is not JSON ({json_error(exc)})")
    try:
        result = compiled.search(data)
    except jmespath_errors.JMESPathError as exc:
        return Verdict.errored(
            f"query {quote(query)} cannot run on this output: {clip(lower_first(str(exc)))}"
        )
    shown = f"query {quote(query)} gives {dump(result)}"
    if isinstance(check.value, Mapping):
        difference = json_difference(result, check.value["equals"])
        if difference is None:
            return Verdict.of(True, shown)
        return Verdict.of(False, f"{shown}, which differs: {difference}")
    if _truthy(result):
        return Verdict.of(True, f"{shown}, which is truthy")
    return Verdict.of(False, f"{shown}, which is falsy")


def schema_problem(schema: Any, instance: Any) -> str | None:
    """Where ``instance`` breaks ``schema`` (formats checked as promptfoo checks them), or
    None when it satisfies it.

    Raises:
        SchemaError: The schema is invalid.
    """
    error = _schema_error(_validator(schema), instance)
    return None if error is None else _describe(error)
