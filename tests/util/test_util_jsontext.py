"""JSON read out of model text: strict, lenient, and embedded in prose."""

from __future__ import annotations

import json

import pytest

from skilleval.util.jsontext import first_object, json_error, loads_or_none, loads_strict


def test_strict_reading_refuses_nan_and_says_where_text_is_not_json() -> None:
    assert loads_strict('{"a": [1, 2.5]}') == {"a": [1, 2.5]}
    with pytest.raises(ValueError, match="NaN is not valid JSON"):
        loads_strict('{"a": NaN}')
    with pytest.raises(json.JSONDecodeError) as info:
        loads_strict('{"a": }')
    assert json_error(info.value) == "expecting value at line 1 column 7"


def test_lenient_reading_gives_none_for_prose_and_accepts_what_json_loads_does() -> None:
    assert loads_or_none("just words") is None
    assert loads_or_none("[" * 100_000) is None
    assert loads_or_none('{"x": NaN}') is not None


def test_the_first_object_is_the_whole_text_or_the_first_one_in_prose() -> None:
    assert first_object('{"a": 1}') == {"a": 1}
    assert first_object('Sure: [1] then {"b": 2} and {"c": 3}') == {"b": 2}
    assert first_object("[1, 2]") is None
    assert first_object("no json") is None
