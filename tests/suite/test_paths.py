"""One rule for relative paths: a path written in a file is relative to that file's folder,
a path given on the command line is relative to the current directory."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from skilleval.suite.load import Overrides, load_suite


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def test_default_vars_are_read_next_to_the_suite_even_for_an_included_tests_file(
    tmp_path: Path,
) -> None:
    write(tmp_path / "who.txt", "the suite's file")
    write(tmp_path / "cases" / "who.txt", "the tests file's neighbour")
    write(tmp_path / "cases" / "own.txt", "the test's own file")
    write(
        tmp_path / "cases" / "tests.yaml",
        """
        - prompt: "Hi {{ who }}"
        - prompt: "Hi {{ who }} and {{ mine }}"
          vars: {mine: file://own.txt}
        """,
    )
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        model: echo
        defaultTest:
          vars: {who: file://who.txt}
        tests: file://cases/tests.yaml
        """,
    )
    loaded, _ = load_suite(suite)
    assert [t.vars["who"] for t in loaded.tests] == ["the suite's file"] * 2
    assert loaded.tests[1].vars["mine"] == "the test's own file"


def test_a_test_file_var_overrides_a_default_var(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        model: echo
        defaultTest:
          vars: {who: world, greeting: hello}
        tests:
          - prompt: "{{ greeting }} {{ who }}"
            vars: {who: there}
        """,
    )
    loaded, _ = load_suite(suite)
    assert dict(loaded.tests[0].vars) == {"who": "there", "greeting": "hello"}


def test_a_default_vars_file_reference_holds_the_whole_mapping(tmp_path: Path) -> None:
    write(tmp_path / "vars.yaml", "who: world\n")
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        model: echo
        defaultTest:
          vars: file://vars.yaml
        tests:
          - prompt: "hi {{ who }}"
        """,
    )
    loaded, _ = load_suite(suite)
    assert loaded.tests[0].vars["who"] == "world"


def test_a_model_path_in_the_suite_is_relative_to_the_suite(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "suites" / "suite.yaml",
        """
        version: 1
        model: ./m.gguf
        tests:
          - prompt: hi
        """,
    )
    loaded, _ = load_suite(suite)
    assert Path(loaded.model.config.path) == tmp_path / "suites" / "m.gguf"


def test_a_model_path_on_the_command_line_is_relative_to_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = write(
        tmp_path / "suites" / "suite.yaml",
        """
        version: 1
        tests:
          - prompt: hi
        """,
    )
    monkeypatch.chdir(tmp_path)
    loaded, _ = load_suite(suite, Overrides(model="./m.gguf"))
    assert Path(loaded.model.config.path) == tmp_path / "m.gguf"
    judged, _ = load_suite(suite, Overrides(judge="models/j.gguf"))
    assert judged.judge is not None
    assert Path(judged.judge.config.path) == tmp_path / "models" / "j.gguf"
