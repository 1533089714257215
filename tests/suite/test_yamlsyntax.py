"""The characters YAML does not allow: ASCII text is searched with a pattern that finds what
the full pattern finds, without compiling the full one's wide ranges."""

from __future__ import annotations

from skilleval.suite.yamlsyntax import control_characters, control_pattern

FULL = control_pattern("\u00e9")


def test_the_ascii_pattern_finds_what_the_full_one_finds_in_ascii_text() -> None:
    text = "".join(chr(c) for c in range(128))
    fast = control_pattern(text)
    assert fast is not FULL
    assert [m.start() for m in fast.finditer(text)] == [m.start() for m in FULL.finditer(text)]


def test_text_beyond_ascii_is_searched_with_the_full_pattern() -> None:
    text = "caf\u00e9 \x07 \ufffe"
    assert control_pattern(text) is FULL
    found = control_characters(text, "s.yaml", 0)
    assert [d.message.split(" is")[0] for d in found] == [
        "control character U+0007",
        "character U+FFFE",
    ]
