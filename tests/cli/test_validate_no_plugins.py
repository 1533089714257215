"""``validate --no-plugins`` checks a suite without running any of its code."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from skilleval.cli import run_cli

PLUGIN = '''
from pathlib import Path

from skilleval import Check, Verdict, assertion

Path(__file__).with_name("IMPORTED").write_text("ran at import")


@assertion("max-words", value={"type": "integer", "minimum": 1})
def max_words(check: Check) -> Verdict:
    """At most VALUE words."""
    return Verdict(passed=len(check.output.split()) <= check.value, reason="counted")


@assertion("shouts")
def shouts(check: Check) -> Verdict:
    return Verdict(passed=check.output.isupper(), reason="checked")
'''

TOOL = """
from pathlib import Path

Path(__file__).with_name("TOOL-IMPORTED").write_text("ran at import")


def lookup(arguments, workspace):
    return "found"
"""


def _suite(tmp_path: Path, asserts: str) -> Path:
    (tmp_path / "asserts").mkdir()
    (tmp_path / "asserts" / "words.py").write_text(PLUGIN, encoding="utf-8")
    (tmp_path / "lookup.py").write_text(TOOL, encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        textwrap.dedent(
            """\
            version: 1
            model: echo
            plugins: [asserts/]
            tests:
              - prompt: hi
                tools:
                  - name: lookup
                    description: Look a thing up.
                    python: file://lookup.py:lookup
                assert:
            """
        )
        + textwrap.indent(textwrap.dedent(asserts), "      "),
        encoding="utf-8",
    )
    return suite


def test_no_plugin_code_runs_and_plugin_types_are_still_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _suite(tmp_path, "- {type: max-words, value: 3}\n- {type: not-shouts}\n")
    assert run_cli(["validate", "--no-plugins", str(suite)]) == 0
    assert "ok (1 tests)" in capsys.readouterr().err
    assert not (tmp_path / "asserts" / "IMPORTED").exists()
    assert not (tmp_path / "TOOL-IMPORTED").exists()
    # Without the flag, validating imports both: this is what the flag is for.
    assert run_cli(["validate", str(suite)]) == 0
    assert (tmp_path / "asserts" / "IMPORTED").exists()
    assert (tmp_path / "TOOL-IMPORTED").exists()


def test_literal_value_schemas_and_unknown_types_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _suite(tmp_path, "- {type: max-words, value: many}\n- {type: whisper}\n")
    assert run_cli(["validate", "--no-plugins", str(suite)]) == 4
    err = capsys.readouterr().err
    assert "max-words" in err
    assert "'many'" in err
    assert "unknown assertion type 'whisper'" in err
    assert "2 errors" in err
    assert not (tmp_path / "asserts" / "IMPORTED").exists()


def test_a_plugin_with_a_syntax_error_is_reported_without_running_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _suite(tmp_path, "- {type: shouts}\n")
    (tmp_path / "asserts" / "broken.py").write_text("def f(:\n", encoding="utf-8")
    assert run_cli(["validate", "--no-plugins", str(suite)]) == 4
    assert "broken.py:1:7: error: plugin has a syntax error" in capsys.readouterr().err
