"""The error tree and diagnostic codes: what code may test instead of message text."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import skilleval
from skilleval import errors
from skilleval.errors import (
    MISSING_FILE,
    UNREADABLE_FILE,
    Diagnostic,
    DiagnosticsError,
    Location,
    SkillevalError,
)
from skilleval.lint.checks import INVALID_SUITE
from skilleval.lint.checks import MISSING_FILE as MISSING_FILE_CHECK
from skilleval.lint.core import from_loader
from skilleval.suite.load import load_suite


def loader_diagnostics(tmp_path: Path, text: str) -> list[Diagnostic]:
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DiagnosticsError) as info:
        load_suite(path)
    return list(info.value.diagnostics)


def test_every_exception_class_in_the_package_is_in_the_errors_tree() -> None:
    import importlib
    import pkgutil

    outside = []
    for info in pkgutil.walk_packages(skilleval.__path__, "skilleval."):
        if info.name.endswith("__main__"):
            continue  # running it is the command line
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue  # a package-private module: its names never leave the package
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == module.__name__
                and not name.startswith("_")  # private control flow that never escapes
                and not issubclass(obj, SkillevalError | Warning)
            ):
                outside.append(f"{module.__name__}.{name}")
    assert outside == []


def test_missing_files_carry_a_code_and_the_path_looked_for(tmp_path: Path) -> None:
    (tmp_path / "folder.yaml").mkdir()
    found = loader_diagnostics(
        tmp_path,
        "model: echo\n"
        "skill: nowhere/SKILL.md\n"
        "tests:\n"
        "  - file://absent.yaml\n"
        "  - file://none-*.yaml\n"
        "  - file://folder.yaml\n",
    )
    coded = {(d.code, Path(d.target or "").name) for d in found}
    assert (MISSING_FILE, "SKILL.md") in coded
    assert (MISSING_FILE, "absent.yaml") in coded
    assert (MISSING_FILE, "none-*.yaml") in coded
    assert (UNREADABLE_FILE, "folder.yaml") in coded


def test_lint_classifies_loader_diagnostics_by_code_not_by_words() -> None:
    here = Location("suite.yaml", 3, 1)
    worded = Diagnostic(here, "file not found: but no code")
    coded = errors.missing_file(here, "any words at all", "x.yaml")
    unreadable = errors.unreadable_file(here, "any words", "y.yaml")
    assert from_loader(worded).check is INVALID_SUITE
    assert from_loader(coded).check is MISSING_FILE_CHECK
    assert from_loader(unreadable).check is MISSING_FILE_CHECK


def test_file_codes_are_in_the_json_form_not_the_text() -> None:
    diag = errors.missing_file(Location("s.yaml", 2, 5), "file not found: a.txt", "/abs/a.txt")
    assert str(diag) == "s.yaml:2:5: error: file not found: a.txt"
    assert diag.to_json()["code"] == MISSING_FILE
    assert diag.to_json()["target"] == "/abs/a.txt"
    lint = Diagnostic(Location("s.yaml", 2, 5), "too few tests", "warning", code="L101")
    assert str(lint).endswith("[L101]")


def test_the_plugin_api_is_exported_from_the_package() -> None:
    for name in ("assertion", "Check", "Verdict", "Judge", "CannotEvaluate", "ProviderError"):
        assert name in skilleval.__all__
        assert getattr(skilleval, name) is not None
    verdict = skilleval.Verdict.errored("cannot tell")
    assert (verdict.status, verdict.error, verdict.passed) == ("error", "cannot tell", False)
    assert issubclass(skilleval.CannotEvaluate, SkillevalError)
