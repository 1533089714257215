"""docs/promptfoo.md's table of assertion types says what the registry does."""

from __future__ import annotations

import json
import re
from pathlib import Path

from skilleval.plugins.registry import UNSUPPORTED, default_registry

DOC = Path(__file__).resolve().parents[1] / "docs" / "promptfoo.md"


def _table() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Assertion types", 1)[1]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        for name in re.findall(r"`([a-z][a-z0-9:-]*)`", cells[0]):
            rows[name] = cells[1]
    return rows


def test_every_unsupported_type_is_listed_as_unsupported() -> None:
    rows = _table()
    for name in UNSUPPORTED:
        assert rows.get(name) == "unsupported", name


def test_every_type_listed_as_supported_is_registered() -> None:
    registry = default_registry(entry_points=False)
    for name, status in _table().items():
        if status != "unsupported":
            assert name in registry, name
            assert name not in UNSUPPORTED, name


PROMPTFOO_TYPES = Path(__file__).resolve().parent / "data" / "promptfoo" / "assertion-types.json"


def test_the_table_lists_every_type_promptfoo_has() -> None:
    """The pinned list is promptfoo 0.123.1's own (tools: its BaseAssertionTypesSchema and
    SpecialAssertionTypesSchema); each has a row saying what skilleval does with it."""
    pinned = json.loads(PROMPTFOO_TYPES.read_text(encoding="utf-8"))
    assert pinned["promptfoo"] == "promptfoo@0.123.1"
    assert len(pinned["types"]) >= 70
    rows = _table()
    missing = [t for t in pinned["types"] if t not in rows]
    assert not missing, missing


def test_each_type_promptfoo_has_is_registered_or_refused_by_name() -> None:
    registry = default_registry(entry_points=False)
    for name in json.loads(PROMPTFOO_TYPES.read_text(encoding="utf-8"))["types"]:
        assert name in registry or name in UNSUPPORTED, name
