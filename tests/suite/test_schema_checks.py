"""``is_valid``: the compiled check of a schema is built once per schema, whether the same
object comes back or an equal one is built afresh (as for every judge reply)."""

from __future__ import annotations

from typing import Any

from skilleval.judge.schemas import rubric_schema
from skilleval.suite import schema


def test_an_equal_schema_built_afresh_shares_the_compiled_check() -> None:
    first, second = rubric_schema(), rubric_schema()
    assert first is not second
    assert not schema.is_valid(first, {"reason": "x"})
    assert not schema.is_valid(second, {"reason": "x"})
    assert schema.compiled_check(first) is schema.compiled_check(second)


def test_different_schemas_get_different_checks() -> None:
    small: dict[str, Any] = {"type": "integer", "maximum": 3}
    large: dict[str, Any] = {"type": "integer", "maximum": 30}
    assert schema.is_valid(large, 10)
    assert not schema.is_valid(small, 10)


def test_a_schema_that_is_not_json_text_is_still_checked() -> None:
    odd: dict[Any, Any] = {"type": "object", 1: "not a keyword"}
    assert schema.is_valid(odd, {"a": 1})
    assert not schema.is_valid(odd, [])
