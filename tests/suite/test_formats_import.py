"""``skilleval import FORMAT``: the suite written gives the same tests as the file read directly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli
from skilleval.suite.load import load_suite
from tests.suite.formats_support import (
    EVALS,
    PAI_SUITE,
    PAI_TASK,
    TRIGGERS_CASES,
    TRIGGERS_LIST,
    TRIGGERS_QUERIES,
    VALLY,
    VALLY_OLD,
    shape,
    skill_folder,
    write_json,
    write_yaml,
)


def _vally(folder: Path, text: str) -> Path:
    (folder / "fixtures").mkdir(exist_ok=True)
    (folder / "fixtures" / "people.csv").write_text("name\nann\n", encoding="utf-8")
    return write_yaml(folder / "eval.yaml", text)


CASES: list[tuple[str, str, Any]] = [
    ("skill-creator", "evals/evals.json", EVALS),
    ("skill-creator", "evals/evals.json", EVALS["evals"]),
    ("triggers", "evals/trigger_eval.json", TRIGGERS_LIST),
    ("triggers", "evals/triggers.json", TRIGGERS_QUERIES),
    ("triggers", "evals/triggers.json", TRIGGERS_CASES),
    ("vally", "eval.yaml", VALLY),
    ("vally", "tests/eval.yaml", VALLY_OLD),
    ("pai", "evals/suite.yaml", PAI_SUITE),
    ("pai", "route-001.yaml", PAI_TASK),
]


@pytest.mark.parametrize(
    ("fmt", "rel", "content"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_import_gives_the_same_tests_as_reading_the_file(
    tmp_path: Path, fmt: str, rel: str, content: Any
) -> None:
    folder = skill_folder(tmp_path / "csv-summary")
    if isinstance(content, str):
        path = _vally(folder, content) if fmt == "vally" else write_yaml(folder / rel, content)
        if fmt == "vally" and rel != "eval.yaml":
            path = write_yaml(folder / rel, content)
    else:
        path = write_json(folder / rel, content)
    direct, _ = load_suite(path)
    # Written elsewhere, so that every path in it must be rewritten to still work.
    target = tmp_path / "elsewhere" / "suite.yaml"
    target.parent.mkdir()
    assert run_cli(["import", fmt, str(path), "-o", str(target)]) == 0
    imported, _ = load_suite(target)
    assert shape(imported) == shape(direct)
    assert (imported.skill is None) == (direct.skill is None)
    assert (imported.trials, imported.type) == (direct.trials, direct.type)
    text = target.read_text(encoding="utf-8")
    assert f"# Imported by `skilleval import {fmt} {path.name}`." in text
    assert f"{path.name}:" in text  # each part names the line it came from


def test_import_of_a_skill_folder_gives_the_same_tests(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "csv-summary")
    write_json(folder / "evals" / "evals.json", EVALS)
    write_json(folder / "evals" / "trigger_eval.json", TRIGGERS_LIST)
    direct, _ = load_suite(folder)
    assert run_cli(["import", "skill", str(folder)]) == 0
    imported, _ = load_suite(folder / "suite.yaml")
    assert shape(imported) == shape(direct)
    # The suite written beside the evals is not read back as one of them.
    again, _ = load_suite(folder)
    assert shape(again) == shape(direct)


def test_import_says_which_format_a_file_really_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skill_folder(tmp_path / "s")
    path = write_json(folder / "evals" / "evals.json", EVALS)
    assert run_cli(["import", "vally", str(path)]) == 2
    err = capsys.readouterr().err
    assert "is not a dotnet/skills Vally spec" in err
    assert "it reads as skill-creator" in err
    assert not (folder / "evals" / "suite.yaml").exists()


def test_import_keeps_the_warnings_in_the_header(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "s")
    path = _vally(folder, VALLY)
    assert run_cli(["import", "vally", str(path)]) == 0
    text = (folder / "suite.yaml").read_text(encoding="utf-8")
    assert "# Not kept as written: eval.yaml:" in text
    assert "`timeout` is not enforced" in text
