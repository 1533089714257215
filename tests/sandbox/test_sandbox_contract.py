"""The sandbox package keeps its one documented contract in step with its modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import skilleval.sandbox

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "skilleval" / "sandbox"
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")


def test_the_package_has_the_modules_it_was_made_from() -> None:
    assert MODULES == [
        "_jsworker", "jsengine", "jspool", "process", "pyfile", "saferegex", "usercode"
    ]  # fmt: skip


@pytest.mark.parametrize("name", MODULES)
def test_every_module_is_in_the_contract_and_in_the_architecture_doc(name: str) -> None:
    assert f":mod:`.{name}`" in (skilleval.sandbox.__doc__ or "")
    architecture = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = architecture.split("## User code under limits", 1)[1].split("\n## ", 1)[0]
    assert f"`{name}.py`" in section


def test_the_javascript_worker_imports_nothing_from_skilleval() -> None:
    # It is started as `python -I _jsworker.py`, away from skilleval's own imports.
    tree = ast.parse((PACKAGE / "_jsworker.py").read_text(encoding="utf-8"))
    imported = [
        name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in (
            [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        )
    ]
    assert imported
    assert not [name for name in imported if name.split(".")[0] == "skilleval"]
