"""Which language a ``transform:`` is in, decided at load: expr, JMESPath or JavaScript."""

from __future__ import annotations

from pathlib import Path

import pytest

from skilleval.errors import DiagnosticsError
from skilleval.suite.load import Overrides, load_suite


def transform_of(tmp_path: Path, written: str) -> tuple[str, str]:
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "version: 1\nmodel: echo\ntests:\n  - prompt: hi\n"
        f"    options: {{transform: {written}}}\n"
        "    assert: [{type: contains, value: h}]\n",
        encoding="utf-8",
    )
    loaded, _ = load_suite(suite, Overrides(entry_points=False))
    transform = loaded.tests[0].transform
    assert transform is not None
    return transform.kind, transform.source


@pytest.mark.parametrize(
    ("written", "kind"),
    [
        ("upper(output)", "expr"),
        ("json.answer", "expr"),
        ("'output + vars.suffix'", "expr"),  # valid in both, and the same in both
        ("\"strip(output) + 'output.x'\"", "expr"),  # a property named inside a string
        ("{expr: output}", "expr"),
        ("{jmespath: answer}", "jmespath"),
        ("output.toUpperCase()", "javascript"),  # a method: never expr
        ("JSON.parse(output)", "javascript"),
        ("output.countries", "javascript"),  # in expr, text has no properties
        ("output.length", "javascript"),
        ("'context.vars.x'", "javascript"),  # a name expr does not have
        ("'output.trim() === \"yes\"'", "javascript"),
        ("{javascript: output}", "javascript"),
        ("parseInt(output)", "javascript"),  # a JavaScript global, not an expr function
        ("'Math.round(number(output))'", "javascript"),
        ('\'output.length > 3 ? "long" : "short"\'', "javascript"),
    ],
)
def test_the_language_of_a_transform(tmp_path: Path, written: str, kind: str) -> None:
    assert transform_of(tmp_path, written)[0] == kind


def test_a_javascript_file_transform_is_kept_with_its_absolute_path(tmp_path: Path) -> None:
    (tmp_path / "t.js").write_text("exports.up = (o) => o.toUpperCase();\n", encoding="utf-8")
    kind, source = transform_of(tmp_path, "'file://t.js:up'")
    assert kind == "javascript"
    assert source == f"file://{(tmp_path / 't.js').resolve()}:up"


def test_a_javascript_file_with_a_syntax_error_is_reported_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "t.js").write_text(
        "module.exports = (o) => {\n  return o +;\n};\n", encoding="utf-8"
    )
    with pytest.raises(DiagnosticsError) as info:
        transform_of(tmp_path, "file://t.js")
    [diagnostic] = info.value.diagnostics
    assert (diagnostic.where.line, diagnostic.where.col) == (2, 1)
    assert diagnostic.where.path.endswith("t.js")


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ("uper(output)", "did you mean 'upper'"),  # an expr mistake stays an expr error
        ("\"matches(output, '(')\"", "invalid regular expression"),
        ("output.toUpperCase(", "JavaScript syntax error at line 1"),
    ],
)
def test_a_broken_transform_is_reported_in_its_language(
    tmp_path: Path, written: str, message: str
) -> None:
    with pytest.raises(DiagnosticsError) as info:
        transform_of(tmp_path, written)
    [diagnostic] = info.value.diagnostics
    assert message in diagnostic.message
