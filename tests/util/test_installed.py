"""The memo of installed entry points and versions: used while nothing is installed or
removed, and never when it could give a different answer from a scan."""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skilleval.util.installed import (
    MEMO_NAME,
    entry_points_in,
    keep_pending,
    path_fingerprint,
    version_of,
)
from skilleval.util.memo import read_memo

GROUPS = ("skilleval.plugins", "skilleval.assertions")


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Path]:
    """An empty folder first on sys.path, where a test can install a distribution."""
    folder = tmp_path / "site"
    folder.mkdir()
    sys.path.insert(0, str(folder))
    try:
        yield folder
    finally:
        sys.path.remove(str(folder))


def _install(site: Path, name: str, version: str, entry_points: str | None = None) -> Path:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if entry_points is not None:
        (info / "entry_points.txt").write_text(entry_points)
    return info


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each call that reached importlib.metadata, by the group or distribution it asked for."""
    seen: list[str] = []
    real_entry_points = importlib.metadata.entry_points
    real_version = importlib.metadata.version

    def entry_points(**kwargs: Any) -> Any:
        seen.append(kwargs["group"])
        return real_entry_points(**kwargs)

    def version(name: str) -> str:
        seen.append(name)
        return real_version(name)

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    monkeypatch.setattr(importlib.metadata, "version", version)
    return seen


def test_none_installed_is_remembered_and_the_next_scan_skipped(
    site: Path, tmp_path: Path, scans: list[str]
) -> None:
    assert entry_points_in(GROUPS, tmp_path) == []
    assert scans == list(GROUPS)
    memo = read_memo(tmp_path / MEMO_NAME)
    assert memo["no-entry-points"] == {path_fingerprint(): True}
    assert entry_points_in(GROUPS, tmp_path) == []
    assert scans == list(GROUPS)  # not scanned again


def test_a_package_installed_after_the_memo_is_found(
    site: Path, tmp_path: Path, scans: list[str]
) -> None:
    assert entry_points_in(GROUPS, tmp_path) == []
    _install(site, "shoutpkg", "1.2", "[skilleval.assertions]\nshout = shoutpkg\n")
    found = entry_points_in(GROUPS, tmp_path)
    assert [(ep.group, ep.name, ep.value) for ep in found] == [
        ("skilleval.assertions", "shout", "shoutpkg")
    ]
    # Found entry points are never remembered as none: every later start scans.
    assert path_fingerprint() not in read_memo(tmp_path / MEMO_NAME)["no-entry-points"]
    entry_points_in(GROUPS, tmp_path)
    assert scans == list(GROUPS) * 3


def test_each_way_of_starting_keeps_its_own_answer(
    site: Path, tmp_path: Path, scans: list[str]
) -> None:
    entry_points_in(GROUPS, tmp_path)
    other = tmp_path / "bin"
    other.mkdir()
    sys.path.insert(0, str(other))  # as a console script's folder comes first
    try:
        entry_points_in(GROUPS, tmp_path)
    finally:
        sys.path.remove(str(other))
    entry_points_in(GROUPS, tmp_path)
    assert scans == list(GROUPS) * 2
    assert len(read_memo(tmp_path / MEMO_NAME)["no-entry-points"]) == 2


def test_other_files_in_a_path_folder_leave_the_fingerprint_alone(site: Path) -> None:
    before = path_fingerprint()
    (site / "notes.txt").write_text("not a package")
    (site / "module.py").write_text("")
    assert path_fingerprint() == before


def test_a_version_file_edited_in_place_changes_the_fingerprint(site: Path) -> None:
    info = _install(site, "editpkg", "1.0")
    before = path_fingerprint()
    metadata = info / "METADATA"
    metadata.write_text("Metadata-Version: 2.1\nName: editpkg\nVersion: 1.1\n")
    stamp = metadata.stat().st_mtime_ns + 1_000_000_000
    os.utime(metadata, ns=(stamp, stamp))
    assert path_fingerprint() != before


def test_an_entry_points_file_edited_in_place_changes_the_fingerprint(site: Path) -> None:
    info = _install(site, "quietpkg", "1.0", "[console_scripts]\nquiet = quietpkg:main\n")
    before = path_fingerprint()
    entry_points = info / "entry_points.txt"
    entry_points.write_text("[skilleval.plugins]\nquiet = quietpkg\n")
    stamp = entry_points.stat().st_mtime_ns + 1_000_000_000
    os.utime(entry_points, ns=(stamp, stamp))
    assert path_fingerprint() != before


def test_a_folder_added_to_the_path_changes_the_fingerprint(tmp_path: Path) -> None:
    before = path_fingerprint()
    extra = tmp_path / "extra"
    extra.mkdir()
    sys.path.append(str(extra))
    try:
        assert path_fingerprint() != before
    finally:
        sys.path.remove(str(extra))


def test_a_finder_that_lists_other_distributions_disables_the_memo(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, scans: list[str]
) -> None:
    class Finder:
        def find_spec(self, *args: Any) -> None:
            return None

        def find_distributions(self, *args: Any) -> list[Any]:
            return []

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    assert path_fingerprint() is None
    entry_points_in(GROUPS, tmp_path)
    entry_points_in(GROUPS, tmp_path)
    assert scans == list(GROUPS) * 2
    assert not (tmp_path / MEMO_NAME).exists()


def test_no_memo_is_written_into_a_home_that_does_not_exist(
    tmp_path: Path, scans: list[str]
) -> None:
    home = tmp_path / "no-home"
    assert entry_points_in(GROUPS, home) == []
    assert version_of("nosuchpkgskilleval", home) is None
    assert not home.exists()


def test_a_version_is_remembered_until_the_package_changes(
    site: Path, tmp_path: Path, scans: list[str]
) -> None:
    info = _install(site, "verpkg", "1.0")
    assert version_of("verpkg", tmp_path) == "1.0"
    assert version_of("verpkg", tmp_path) == "1.0"
    assert scans == ["verpkg"]
    # An upgrade replaces the metadata folder: the memo no longer applies.
    (info / "METADATA").unlink()
    info.rmdir()
    _install(site, "verpkg", "2.0")
    assert version_of("verpkg", tmp_path) == "2.0"
    assert scans == ["verpkg", "verpkg"]


def test_a_missing_package_is_remembered_as_missing(
    site: Path, tmp_path: Path, scans: list[str]
) -> None:
    assert version_of("nosuchpkgskilleval", tmp_path) is None
    assert version_of("nosuchpkgskilleval", tmp_path) is None
    assert scans == ["nosuchpkgskilleval"]
    _install(site, "nosuchpkgskilleval", "0.1")
    assert version_of("nosuchpkgskilleval", tmp_path) == "0.1"


def test_an_answer_found_before_the_home_existed_is_kept_once_it_does(
    site: Path, tmp_path: Path, scans: list[str]
) -> None:
    home = tmp_path / "home"
    assert entry_points_in(GROUPS, home) == []
    assert not home.exists()
    home.mkdir()  # as a first run creates it
    keep_pending(home)
    assert entry_points_in(GROUPS, home) == []
    assert scans == list(GROUPS)
