"""The agentic feature keeps to the layers: config reads it, the runtime runs it, checks grade it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "skilleval"


def imports(path: Path) -> Iterator[tuple[str, bool]]:
    """Each skilleval module ``path`` imports, and whether the import is at module level."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            continue
        for name in names:
            if name == "skilleval" or name.startswith("skilleval."):
                yield name, id(node) in top


def files(*parts: str) -> list[Path]:
    found: list[Path] = []
    for part in parts:
        target = PACKAGE / part
        found.extend(sorted(target.rglob("*.py")) if target.is_dir() else [target])
    return found


AGENTIC = files(
    "agent",
    "suite/agentic.py",
    "suite/agent_config.py",
    "suite/agentic_schema.py",
    "assertions/builtin/agentic.py",
    "assertions/builtin/workspace.py",
    "runner/agentic.py",
    "trajectory.py",
    "util/jsontext.py",
    "sandbox/process.py",
    "util/scrub.py",
    "util/workpath.py",
)


@pytest.mark.parametrize("path", files("suite"), ids=lambda p: p.name)
def test_the_config_layer_never_imports_the_agent_runtime(path: Path) -> None:
    assert [n for n, _ in imports(path) if n.startswith("skilleval.agent")] == []


@pytest.mark.parametrize("path", files("agent"), ids=lambda p: p.name)
def test_the_agent_runtime_takes_only_typed_config_from_the_config_layer(path: Path) -> None:
    allowed = ("skilleval.suite.agent_config",)
    found = [n for n, _ in imports(path) if n.startswith("skilleval.suite") and n not in allowed]
    assert found == []


@pytest.mark.parametrize(
    "path",
    files("api.py", "assertions/builtin/agentic.py", "assertions/builtin/workspace.py"),
    ids=lambda p: p.name,
)
def test_the_agentic_checks_import_nothing_of_the_agent_runner_or_judge(path: Path) -> None:
    above = ("skilleval.agent", "skilleval.runner", "skilleval.judge")
    # From the config layer, only the template check (is a value still a template?) is used.
    config = [n for n, _ in imports(path) if n.startswith("skilleval.suite")]
    assert [n for n, _ in imports(path) if n.startswith(above)] == []
    assert set(config) <= {"skilleval.suite.template"}


@pytest.mark.parametrize(
    "path",
    files(
        "trajectory.py",
        "util/jsontext.py",
        "sandbox/process.py",
        "util/scrub.py",
        "util/workpath.py",
    ),
    ids=lambda p: p.name,
)
def test_the_shared_low_modules_import_only_the_error_tree(path: Path) -> None:
    assert [n for n, _ in imports(path) if n != "skilleval.errors"] == []


@pytest.mark.parametrize("path", AGENTIC, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_feature_imports_its_own_modules_at_module_level(path: Path) -> None:
    assert [n for n, at_top in imports(path) if not at_top] == []


def test_no_agentic_fences_are_left_in_the_shared_modules() -> None:
    for path in files("suite/model.py", "suite/load.py", "suite/suite_schema.py"):
        text = path.read_text(encoding="utf-8")
        assert "# -- end agentic" not in text, path.name
