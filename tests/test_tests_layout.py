"""The test tree stays collectable as it grows."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_every_test_module_has_a_name_of_its_own() -> None:
    """pytest imports a test file by its base name (the folders are not packages), so two
    files of one name in different folders stop collection with "import file mismatch"."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        if "data" in path.relative_to(TESTS).parts:
            continue
        where[path.name].append(str(path.relative_to(TESTS)))
    shared = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert shared == {}
