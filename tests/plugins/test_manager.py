"""The plugin manager: every kind is found, named and checked the same way."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from skilleval.api import MARK, Registration
from skilleval.errors import Location, PluginError
from skilleval.plugins import PluginManager, ProviderType, registration_of
from skilleval.plugins.manager import ENTRY_POINT_GROUPS
from skilleval.plugins.registry import default_registry


def folder_with(tmp_path: Path, name: str, source: str) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(textwrap.dedent(source), encoding="utf-8")
    return folder


def test_builtins_register_every_kind_through_the_marks() -> None:
    manager = PluginManager()
    manager.load_builtins()
    assert manager.names("provider") == [
        "echo",
        "exec",
        "gguf",
        "http",
        "openai",
        "python",
        "scripted",
    ]
    assert [r.suffix for r in manager.reporters()] == [
        ".csv",
        ".html",
        ".json",
        ".jsonl",
        ".xml",
        ".md",
    ]
    assert [k.name for k in manager.tool_kinds()] == ["mock", "command", "python"]
    assert "contains" in manager.names("assertion")
    assert all(p.origin == "builtin" for p in manager.entries("provider"))


def test_every_builtin_passes_the_checks_a_plugin_gets() -> None:
    # A run registers the built-ins from the manifest, checked when it was written; this
    # is where those checks run.
    manager = PluginManager()
    manager.load_builtins()
    kinds = ("assertion", "provider", "reporter", "tool_kind")
    plugins = [p for kind in kinds for p in manager.entries(kind)]
    assert len(plugins) > 40
    assert {p.name: p.problem() for p in plugins if p.problem()} == {}


def test_a_plugin_folder_is_still_checked(tmp_path: Path) -> None:
    folder = folder_with(
        tmp_path,
        "bad.py",
        """
        from skilleval import provider

        @provider("bad", schema={"type": "no-such-type"})
        def bad(config, context):
            return None
        """,
    )
    registry = default_registry(entry_points=False)
    with pytest.raises(PluginError, match="invalid config schema"):
        registry.load_folder(folder)


def test_the_older_entry_point_group_still_counts() -> None:
    assert ENTRY_POINT_GROUPS == ("skilleval.plugins", "skilleval.assertions")


def test_a_provider_defined_twice_names_both_places(tmp_path: Path) -> None:
    folder = folder_with(
        tmp_path,
        "dup.py",
        """
        from skilleval import provider

        @provider("echo")
        def mine(config, context):
            return None
        """,
    )
    with pytest.raises(PluginError) as info:
        default_registry([(folder, None)], entry_points=False)
    message = str(info.value)
    assert "provider 'echo' is defined twice" in message
    assert "skilleval/engine/testing.py:" in message
    assert "plugins/dup.py:4" in message


def test_two_formats_for_one_extension_are_refused(tmp_path: Path) -> None:
    folder = folder_with(
        tmp_path,
        "fmt.py",
        """
        from skilleval import reporter

        @reporter("other-json", suffix=".json")
        def write(results, dest):
            pass
        """,
    )
    with pytest.raises(PluginError, match=r"'json' and 'other-json' both write '\.json' files"):
        default_registry([(folder, None)], entry_points=False)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "@provider('bad', schema={'type': 'nope'})\ndef f(config, context):\n    pass\n",
            "provider 'bad' has an invalid config schema",
        ),
        (
            "@reporter('txt', suffix='txt')\ndef f(results, dest):\n    pass\n",
            "needs a lower-case suffix like '.txt'",
        ),
        (
            "@tool_kind('two words', schema={})\ndef f(value, ctx):\n    pass\n",
            "tool kind name 'two words' may only use",
        ),
    ],
)
def test_invalid_registrations_are_refused_at_their_line(
    tmp_path: Path, source: str, message: str
) -> None:
    folder = folder_with(
        tmp_path, "p.py", "from skilleval import provider, reporter, tool_kind\n\n" + source
    )
    with pytest.raises(PluginError, match=message) as info:
        default_registry([(folder, None)], entry_points=False)
    assert "plugins/p.py:3:1" in str(info.value)


def test_an_unknown_name_suggests_the_closest_one_of_its_kind() -> None:
    manager = PluginManager()
    manager.load_builtins()
    with pytest.raises(PluginError, match="unknown provider 'opneai'; did you mean 'openai'"):
        manager.lookup("provider", "opneai", Location("s.yaml", 2, 3))


def test_a_registration_is_found_from_its_function() -> None:
    from skilleval.engine.llama import gguf

    reg = registration_of(gguf)
    assert isinstance(reg, ProviderType)
    assert reg.implied_by == "path"
    with pytest.raises(TypeError, match="carries no skilleval plugin mark"):
        registration_of(folder_with)


def test_every_kind_is_one_registration_class_under_one_mark(tmp_path: Path) -> None:
    folder = folder_with(
        tmp_path,
        "all.py",
        """
        from skilleval import assertion, provider, reporter, tool_kind

        @assertion("shouts")
        def shouts(check):
            return check.output.isupper()

        @provider("silent")
        def silent(config, context):
            return None

        @reporter("txt", suffix=".txt")
        def txt(run, dest):
            dest.write_text(run.run_id)

        @tool_kind("noop", schema={"type": "string"})
        def noop(value, ctx):
            return None
        """,
    )
    registry = default_registry([(folder, None)], entry_points=False)
    mine = [registry.find(kind, name) for kind, name in PLUGIN_NAMES]
    builtin = [registry.find(kind, name) for kind, name in BUILTIN_NAMES]
    for reg in [*mine, *builtin]:
        assert isinstance(reg, Registration)
        assert getattr(reg.factory, MARK).name == reg.name
    # What differs is declared: a plugin's code is external, skilleval's is not.
    assert [r.external for r in mine if r is not None] == [True] * 4
    assert [r.external for r in builtin if r is not None] == [False] * 4
    listed = {(row["kind"], row["name"]): row for row in registry.describe()}
    assert listed["assertion", "shouts"]["defined_at"].endswith("all.py:4")
    assert listed["assertion", "contains"]["defined_at"] is None


PLUGIN_NAMES = [
    ("assertion", "shouts"),
    ("provider", "silent"),
    ("reporter", "txt"),
    ("tool_kind", "noop"),
]
BUILTIN_NAMES = [
    ("assertion", "contains"),
    ("provider", "echo"),
    ("reporter", "csv"),
    ("tool_kind", "mock"),
]
