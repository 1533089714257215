"""Relative paths rewritten for the folder a case file is written to."""

from __future__ import annotations

from pathlib import Path

from skilleval.cases.paths import Rebase


def test_a_path_made_absolute_has_no_climbs_left_in_it(tmp_path: Path) -> None:
    # Two folders that share nothing but the root: the path is written absolute, as the
    # file it names, not as the suite's folder followed by `../..`.
    suite_dir = tmp_path / "repo" / "examples" / "demo"
    suite_dir.mkdir(parents=True)
    elsewhere = Path(tmp_path.anchor) / "an-unlikely-top-level-folder"
    rebased = Rebase(suite_dir, elsewhere).path("../../schemas/suite.schema.json")
    assert rebased == (tmp_path / "repo" / "schemas" / "suite.schema.json").resolve().as_posix()


def test_a_path_between_neighbouring_folders_stays_relative(tmp_path: Path) -> None:
    rebase = Rebase(tmp_path / "a" / "b", tmp_path / "c")
    assert rebase.path("../skill/SKILL.md") == "../a/skill/SKILL.md"
