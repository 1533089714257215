"""The manifest of the built-ins is what scanning their modules registers, and a manager
built from it imports a module only when one of its registrations is looked up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skilleval.errors import PluginError
from skilleval.plugins.builtins import read_manifest
from skilleval.plugins.manager import PluginManager, manifest_entries
from skilleval.plugins.registry import Registry

ROOT = Path(__file__).resolve().parents[2]


def test_the_manifest_matches_the_modules() -> None:
    scanned = json.loads(json.dumps(manifest_entries()))  # tuples as JSON writes them
    assert read_manifest() == scanned, "skilleval/plugins/builtins.json is stale: run `make schema`"


def test_the_manifest_registers_what_scanning_registers() -> None:
    lazy, scanned = PluginManager(), PluginManager()
    lazy.load_builtins()
    scanned.scan_builtins()
    assert lazy.describe() == scanned.describe()
    for kind in ("assertion", "provider", "reporter", "tool_kind"):
        assert lazy.names(kind) == scanned.names(kind)
        assert [p.name for p in lazy._tables[kind].values()] == [
            p.name for p in scanned._tables[kind].values()
        ]
        for name in lazy.names(kind):
            # A lookup gives the registration the module itself makes.
            assert lazy.find(kind, name) == scanned.find(kind, name)
    assert lazy.tool_kinds() == scanned.tool_kinds()


def test_a_manifest_entry_works_before_its_module_is_looked_up() -> None:
    registry = Registry()
    registry.load_builtins()
    listed = {p.name: p for p in registry.entries("assertion")}
    spec = listed["contains"]
    assert "text.py:" in spec.defined_at
    real = registry.get("contains")
    assert real is not None
    assert real.fn is not spec.fn
    assert real.defined_at == spec.defined_at
    assert spec.problem() is None


def test_a_run_imports_only_the_modules_of_the_types_it_uses(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "version: 1\nmodel: echo\nprompts: ['{{q}}']\n"
        "tests:\n  - vars: {q: hi}\n    assert:\n      - {type: contains, value: hi}\n",
        encoding="utf-8",
    )
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from skilleval.suite.load import load_suite\n"
        f"load_suite(Path({str(suite)!r}))\n"
        "print(sorted(m for m in sys.modules if m.startswith("
        "('skilleval.assertions.builtin.', 'skilleval.agent', 'skilleval.engine.openai'))"
        " and '._' not in m))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "SKILLEVAL_HOME": str(tmp_path / "home")},
    ).stdout
    assert out.strip() == "['skilleval.assertions.builtin.text']"


def test_a_plugin_redefining_a_builtin_names_the_builtins_place(tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "p.py").write_text(
        "from skilleval import assertion\n\n\n"
        "@assertion('contains', value={'type': 'string'})\n"
        "def mine(check):\n    return True\n",
        encoding="utf-8",
    )
    registry = Registry()
    registry.load_builtins()
    with pytest.raises(PluginError, match=r"defined twice: at \S+text\.py:\d+ \(builtin\)"):
        registry.load_folder(folder)
