"""The assertion registry: built-ins, installed entry points and plugin folders, in that order."""

from __future__ import annotations

import json
import struct
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from skilleval.cli import run_cli
from skilleval.engine.prefix_store import STATE_MAGIC, PrefixStore, store_folder
from skilleval.errors import Location, PluginError
from skilleval.plugins.registry import Registry, default_registry
from skilleval.runner.rundir import home_dir

PLUGIN = '''
from skilleval import Verdict, assertion

@assertion("shouty")
def shouty(check):
    """The output is upper case."""
    return Verdict(passed=check.output.isupper(), reason="upper" if check.output.isupper() else "not upper")
'''


@pytest.fixture
def installed_plugin(tmp_path: Path) -> Iterator[Path]:
    """A real installed distribution exposing one module in the skilleval.assertions group."""
    site = tmp_path / "site"
    (site / "shoutpkg").mkdir(parents=True)
    (site / "shoutpkg" / "__init__.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    info = site / "shoutpkg-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shoutpkg\nVersion: 1.2\n")
    (info / "entry_points.txt").write_text("[skilleval.assertions]\nshout = shoutpkg\n")
    sys.path.insert(0, str(site))
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("shoutpkg", None)


def test_entry_point_types_are_loaded_with_their_origin(installed_plugin: Path) -> None:
    registry = default_registry()
    spec = registry.get("shouty")
    assert spec is not None
    assert spec.origin == "entry point 'shout' (shoutpkg 1.2)"


def test_no_entry_points_leaves_them_out(installed_plugin: Path) -> None:
    assert default_registry(entry_points=False).get("shouty") is None


def test_a_folder_type_clashing_with_an_entry_point_names_both_places(
    installed_plugin: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "asserts"
    folder.mkdir()
    (folder / "again.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    with pytest.raises(PluginError) as info:
        default_registry([(folder, None)])
    message = str(info.value)
    assert "'shouty' is defined twice" in message
    assert "shoutpkg/__init__.py:4" in message
    assert "asserts/again.py:4" in message


def test_a_plugin_may_not_redefine_a_builtin(tmp_path: Path) -> None:
    folder = tmp_path / "asserts"
    folder.mkdir()
    (folder / "mine.py").write_text(
        "from skilleval import assertion\n\n@assertion('contains')\ndef mine(check):\n    return True\n",
        encoding="utf-8",
    )
    with pytest.raises(PluginError, match="'contains' is defined twice"):
        default_registry([(folder, None)], entry_points=False)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("@assertion('not-this')\ndef f(check):\n    return True\n", "must not start with 'not-'"),
        ("@assertion('two-args')\ndef f(check, other):\n    return True\n", "exactly one argument"),
        (
            "@assertion('bad', value={'type': 'nope'})\ndef f(check):\n    return True\n",
            "invalid value schema",
        ),
    ],
)
def test_invalid_declarations_are_refused_at_registration(
    tmp_path: Path, source: str, message: str
) -> None:
    folder = tmp_path / "asserts"
    folder.mkdir()
    (folder / "p.py").write_text("from skilleval import assertion\n\n" + source, encoding="utf-8")
    with pytest.raises(PluginError, match=message):
        default_registry([(folder, None)], entry_points=False)


def test_unknown_type_suggests_the_closest_name() -> None:
    registry = Registry()
    registry.load_builtins()
    with pytest.raises(PluginError, match="did you mean 'not-icontains'"):
        registry.resolve("not-icontain", Location("s.yaml", 3, 7))


def test_underscore_files_in_a_plugin_folder_are_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "asserts"
    folder.mkdir()
    (folder / "_helpers.py").write_text("raise RuntimeError('never imported')\n", encoding="utf-8")
    default_registry([(folder, None)], entry_points=False)


def test_plugins_command_lists_every_type_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[2]
    assert run_cli(["plugins", str(root / "examples/plugins/suite.yaml"), "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    names = {t["name"]: t for t in listing}
    assert names["contains"]["origin"] == "builtin"
    assert names["no-apology"]["origin"].endswith("asserts/style.py")
    assert names["llm-rubric"]["tier"] == "model"
    assert all(t["summary"] for t in listing)


def test_cache_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text("version: 1\nmodel: echo\ntests:\n  - prompt: hi\n", encoding="utf-8")
    run_cli(["run", str(suite)])
    capsys.readouterr()
    assert run_cli(["cache", "info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entries"] == 1
    assert run_cli(["cache", "clear", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["removed"] == 1
    run_cli(["cache", "info", "--json"])
    assert json.loads(capsys.readouterr().out)["entries"] == 0


def test_cache_commands_count_and_clear_the_kept_prompt_prefixes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Laid out as llama.cpp's state of one sequence holding 40 cells (one per token).
    cells = struct.pack("<IiII", STATE_MAGIC, 0, 1, 40) + b"cells"
    PrefixStore(store_folder(home_dir(), "gguf:x")).write(range(40), cells)
    assert run_cli(["cache", "info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["prefixes"]["entries"] == 1
    assert run_cli(["cache", "clear", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["removed_prefixes"] == 1
    run_cli(["cache", "info", "--json"])
    assert json.loads(capsys.readouterr().out)["prefixes"]["entries"] == 0
