"""docs/architecture.md names only modules, and names in them, that exist."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
FILES = [
    p.relative_to(ROOT).as_posix()
    for folder in ("skilleval", "tests", "tools")
    for p in (ROOT / folder).rglob("*")
    if p.is_file() and "__pycache__" not in p.parts
]

# `engine/hf.py`, `hf.py`, `skilleval/api.py`: a file, by a path or by its name alone.
_PATH = re.compile(r"`((?:[a-z_]+/)*[a-z_0-9]+\.(?:py|j2|txt))`")
# `runner/document.build_run`, `lint/core.lint_findings`: a name in a module, by its path.
_NAME_IN = re.compile(r"`((?:[a-z_]+/)+[a-z_0-9]+)\.(?!py`)([A-Za-z_][A-Za-z_0-9]*)`")


def _cited(pattern: re.Pattern[str]) -> list[Any]:
    return sorted(set(pattern.findall(DOC.read_text(encoding="utf-8"))))


def _files_ending(path: str) -> list[str]:
    """The files whose path is ``path`` or ends with it after a folder: a path in the doc may
    start at the package (``engine/hf.py``), at a package inside it, or at the repository."""
    return [f for f in FILES if f == path or f.endswith("/" + path)]


@pytest.mark.parametrize("path", _cited(_PATH))
def test_every_cited_file_exists(path: str) -> None:
    assert _files_ending(path), f"docs/architecture.md cites `{path}`, which is not a file"


@pytest.mark.parametrize(("module", "name"), _cited(_NAME_IN))
def test_every_name_cited_in_a_module_is_defined_there(module: str, name: str) -> None:
    found = _files_ending(module + ".py") or _files_ending(module + "/__init__.py")
    assert found, f"docs/architecture.md cites `{module}.{name}`, but `{module}` is no module"
    text = "\n".join((ROOT / f).read_text(encoding="utf-8") for f in found)
    assert re.search(rf"\b{re.escape(name)}\b", text), f"`{module}` defines no `{name}`"


def test_the_check_finds_the_citations() -> None:
    # The patterns must keep matching how the doc cites modules, or the tests above pass empty.
    assert len(_cited(_PATH)) > 50
    assert len(_cited(_NAME_IN)) > 10
