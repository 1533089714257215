"""Reading users' YAML, JSON, JSONL and CSV files: values, positions, limits and refusals."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skilleval.cli import run_cli
from skilleval.errors import Location, SuiteError
from skilleval.suite import yamlio
from skilleval.suite.yamlio import parse_yaml
from skilleval.userfile import read_bytes, read_text

INVALID = Path(__file__).resolve().parent.parent / "data" / "invalid"


def _validate(
    tmp_path: Path, suite: str, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str]:
    (tmp_path / "suite.yaml").write_text(suite, encoding="utf-8")
    os.chdir(tmp_path)
    code = run_cli(["validate", "suite.yaml", "--no-entry-points", *args])
    captured = capsys.readouterr()
    return code, captured.err + captured.out


def test_values_follow_yaml_1_2_as_before() -> None:
    doc = parse_yaml(
        "a: yes\nb: 0x1F\nc: 1_000\nd: .inf\ne: 2024-01-05\nf: ~\ng: 1e3\nh: !!str 12\n"
        "i: '007'\nj: true\n1: one\n",
        "x.yaml",
    )
    assert doc.data == {
        "a": "yes",
        "b": 31,
        "c": 1000,
        "d": float("inf"),
        "e": "2024-01-05",
        "f": None,
        "g": 1000.0,
        "h": "12",
        "i": "007",
        "j": True,
        "1": "one",
    }


def test_a_colon_inside_a_flow_scalar_reads_as_yaml_1_2() -> None:
    """libyaml (YAML 1.1) refuses ``{x: file://a}``; the file is then read by the 1.2 parser."""
    doc = parse_yaml("providers: [openai:gpt-4.1]\nvars: {x: file://a.txt}\n", "f.yaml")
    assert doc.data == {"providers": ["openai:gpt-4.1"], "vars": {"x": "file://a.txt"}}
    assert doc.at(["vars", "x"]) == Location("f.yaml", 2, 11)


def test_every_key_and_value_has_its_position() -> None:
    doc = parse_yaml("tests:\n  - prompt: hi\n    vars: {x: [1, 2]}\n", "s.yaml")
    assert doc.key_at(["tests", 0, "prompt"]) == Location("s.yaml", 2, 5)
    assert doc.at(["tests", 0, "prompt"]) == Location("s.yaml", 2, 13)
    assert doc.at(["tests", 0, "vars", "x", 1]) == Location("s.yaml", 3, 19)
    assert doc.at(["tests", 0]) == Location("s.yaml", 2, 5)


def test_nodes_reached_through_an_alias_have_their_anchors_positions() -> None:
    text = "a: &shared\n  - type: regex\n    value: x\nb: *shared\n"
    doc = parse_yaml(text, "t.yaml")
    assert doc.data["b"] == doc.data["a"]
    assert doc.at(["b"]) == Location("t.yaml", 4, 4)
    assert doc.at(["b", 0, "value"]) == Location("t.yaml", 3, 12)
    assert doc.key_at(["b", 0, "value"]) == Location("t.yaml", 3, 5)


def test_merge_keys_merge_and_explicit_keys_win() -> None:
    doc = parse_yaml(
        "base: &base {prompt: hi, vars: {x: 1}}\n"
        "more: &more {description: d}\n"
        "t1:\n  <<: *base\n  vars: {x: 2}\n"
        "t2:\n  <<: [*base, *more]\n",
        "m.yaml",
    )
    assert doc.data["t1"] == {"vars": {"x": 2}, "prompt": "hi"}
    assert doc.data["t2"] == {"prompt": "hi", "vars": {"x": 1}, "description": "d"}
    # A merged key points at the `<<` that brought it in.
    assert doc.at(["t1", "prompt"]) == Location("m.yaml", 4, 7)


def test_a_suite_with_merge_keys_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _validate(
        tmp_path,
        "version: 1\ntests:\n  - &base\n    prompt: hi\n    assert: [{type: contains, value: h}]\n"
        "  - <<: *base\n    prompt: hello\n",
        capsys,
    )
    assert code == 0, out
    assert "2 tests" in out


def test_problems_are_collected_not_raised_when_asked() -> None:
    doc = parse_yaml("a: 1\na: 2\nb: !foo x\n", "d.yaml", strict=False)
    assert [str(p) for p in doc.problems] == [
        "d.yaml:2:1: error: duplicate key 'a' (first defined at line 1)",
        "d.yaml:3:4: error: unsupported YAML tag '!foo': suites use plain YAML values; "
        "remove the tag",
    ]
    with pytest.raises(SuiteError):
        parse_yaml("a: 1\na: 2\n", "d.yaml")


def test_a_document_over_the_size_cap_is_refused_by_name() -> None:
    with pytest.raises(SuiteError) as caught:
        parse_yaml("#" * (yamlio.MAX_YAML_BYTES + 1), "big.yaml")
    assert "document too large" in str(caught.value)
    assert "limited to 16.0 MiB" in str(caught.value)


def test_positions_inside_a_jsonl_line_count_the_lines_before_it(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"vars": {}}\n\n{"vars": {"n": ' + "9" * 4400 + "}}\n", encoding="utf-8")
    with pytest.raises(SuiteError) as caught:
        list(yamlio.load_jsonl(path))
    assert ":3:16: error: integer too long" in str(caught.value)


def test_a_file_over_the_size_cap_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 100)
    with pytest.raises(SuiteError) as caught:
        read_bytes(path, limit=64)
    assert "is too large (100 bytes); skilleval reads files of up to 64 bytes" in str(caught.value)
    assert read_text(path, limit=100) == "x" * 100


def test_a_fifo_is_refused_without_blocking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.mkfifo(tmp_path / "pipe.txt")
    result: list[tuple[int, str]] = []
    worker = threading.Thread(
        target=lambda: result.append(
            _validate(
                tmp_path,
                "version: 1\ntests:\n  - prompt: hi\n    vars:\n      x: file://pipe.txt\n",
                capsys,
            )
        ),
        daemon=True,
    )
    worker.start()
    worker.join(10)
    assert result, "reading a FIFO blocked"
    code, out = result[0]
    assert code == 4
    assert "suite.yaml:5:10: error: expected a regular file, but pipe.txt is a FIFO" in out


def test_dev_stdin_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _validate(
        tmp_path,
        "version: 1\ntests:\n  - prompt: hi\n    vars:\n      x: file:///dev/stdin\n",
        capsys,
    )
    assert code == 4
    assert "suite.yaml:5:10: error: expected a regular file, but /dev/stdin is" in out
    assert "Traceback" not in out


def test_csv_long_fields_and_cr_line_endings_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = "y" * 200_000
    (tmp_path / "long.csv").write_text(f"q,__expected\n{long},contains:y\n", encoding="utf-8")
    (tmp_path / "cr.csv").write_text("q,__expected\ra,contains:a\rb,contains:b\r")
    code, out = _validate(
        tmp_path,
        "version: 1\nprompts: ['{{q}}']\ntests:\n  - file://long.csv\n  - file://cr.csv\n",
        capsys,
    )
    assert code == 0, out
    assert "3 tests" in out


def test_a_broken_csv_row_is_positioned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t.csv").write_text('q\n"a\nb",\n"open\n', encoding="utf-8")
    code, out = _validate(tmp_path, "version: 1\nprompts: ['{{q}}']\ntests: file://t.csv\n", capsys)
    assert code == 4
    assert "Traceback" not in out
    assert "t.csv:" in out


def test_every_yaml_level_mistake_is_reported_in_one_validate(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Duplicate key, control character, tag, huge integer, unknown alias, bad merge: all."""
    monkeypatch.chdir(INVALID)
    assert run_cli(["validate", "yaml-many-mistakes.yaml", "--json", "--no-entry-points"]) == 4
    diags = json.loads(capsys.readouterr().out)["files"][0]["diagnostics"]
    messages = [d["message"] for d in diags]
    for part in (
        "duplicate key 'prompt'",
        "control character U+0007",
        "unsupported YAML tag '!env'",
        "unknown key 'vars2'",
        "integer too long",
        "unknown alias '*undefined'",
        "a merge key `<<` takes a mapping",
        "unknown key 'colour'",
    ):
        assert sum(part in m for m in messages) == 1, (part, messages)
    assert len(messages) == 8
    assert all(d["line"] > 1 for d in diags)


_YAML_PIECES = st.sampled_from(
    [
        "a: 1\n",
        "- x\n",
        "  ",
        "\t",
        ": ",
        "&a ",
        "*a",
        "<<: ",
        "!foo ",
        "!!int ",
        "[",
        "]",
        "{",
        "}",
        ",",
        "'",
        '"',
        "|\n",
        ">\n",
        "#c\n",
        "---\n",
        "? ",
        "\x01",
        "9" * 4400,
        "\n",
        "  b: [1, 2]\n",
        "key: value: more\n",
        "x: file://a:b\n",
    ]
)


@given(st.lists(_YAML_PIECES, max_size=30).map("".join))
@settings(max_examples=300, deadline=None)
def test_any_text_gives_a_document_or_positioned_errors(text: str) -> None:
    try:
        diagnostics = parse_yaml(text, "f.yaml", strict=False).problems
    except SuiteError as exc:
        diagnostics = exc.diagnostics
        assert diagnostics, "an error with nothing to say"
    assert all(d.where.line >= 1 and d.where.col >= 1 for d in diagnostics)
