"""The one parser of ``file://`` and ``path.py:fn`` references."""

from __future__ import annotations

from pathlib import Path

import pytest

from skilleval.util import fileref
from skilleval.util.fileref import FileRef


@pytest.mark.parametrize(
    ("ref", "parsed"),
    [
        ("file://checks.py", FileRef("checks.py")),
        ("file://checks.py:grade", FileRef("checks.py", "grade")),
        ("file://dir/a:b.py:grade", FileRef("dir/a:b.py", "grade")),
        ("file://checks.py:not-an-identifier", FileRef("checks.py:not-an-identifier")),
        ("file://data/a:b.txt", FileRef("data/a:b.txt")),
        ("file://tests.csv", FileRef("tests.csv")),
        ("tools.py:search", FileRef("tools.py", "search")),
        ("tools:search", FileRef("tools", "search")),
        ("tools.py", FileRef("tools.py")),
        (":search", FileRef(":search")),
    ],
)
def test_references_split_into_path_and_function(ref: str, parsed: FileRef) -> None:
    assert fileref.parse(ref) == parsed


def test_only_file_urls_are_references() -> None:
    assert fileref.is_ref("file://x.txt")
    assert not fileref.is_ref("x.txt")
    assert not fileref.is_ref(["file://x.txt"])


def test_a_relative_path_is_relative_to_the_folder_given(tmp_path: Path) -> None:
    assert fileref.resolve("a/b.txt", tmp_path) == tmp_path / "a" / "b.txt"
    assert fileref.resolve(str(tmp_path / "c.txt"), Path("elsewhere")) == tmp_path / "c.txt"
