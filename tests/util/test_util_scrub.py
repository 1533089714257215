"""Scrubbing model text: NUL bytes and lone surrogates replaced, and said where."""

from __future__ import annotations

import json

from skilleval.util.scrub import REPLACEMENT, scrub, scrub_text


def test_clean_text_is_returned_as_is() -> None:
    assert scrub_text("plain — ünïcode 🙂") == ("plain — ünïcode 🙂", None)


def test_nul_bytes_and_lone_surrogates_are_counted_and_replaced() -> None:
    text, note = scrub_text("a\x00b\x00c\ud800d\udfff")
    assert text == f"a{REPLACEMENT}b{REPLACEMENT}c{REPLACEMENT}d{REPLACEMENT}"
    assert note == "2 NUL bytes and 2 lone surrogates"
    text.encode("utf-8")


def test_every_string_of_a_json_value_is_scrubbed_with_its_path() -> None:
    value = json.loads('{"a": ["ok", "x\\u0000"], "b\\ud800": {"c": "\\udc00"}, "n": 1}')
    clean, notes = scrub(value, "arguments")
    assert clean == {"a": ["ok", "x\ufffd"], "b\ufffd": {"c": "\ufffd"}, "n": 1}
    assert notes == [
        "arguments.a[1]: 1 NUL byte",
        "arguments (a key): 1 lone surrogate",
        "arguments.b\ufffd.c: 1 lone surrogate",
    ]
    json.dumps(clean, ensure_ascii=False).encode("utf-8")
