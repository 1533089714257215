"""A Vally stimulus's workspace: ``environment.files``, or the older ``setup:`` block.

``environment.files`` (``{src, dest}``) are copied into the test's workspace; the older
``setup.files`` (``{path, content}``) are written by set-up commands, ``setup.commands`` run
as they are, and ``setup.copy_test_files: true`` copies everything beside the spec.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from skilleval.suite.formats.reading import Reading, unavailable


def read_environment(
    reading: Reading, item: Mapping[str, Any], at: list[str | int], missing: list[Any]
) -> dict[str, Any]:
    """The stimulus's workspace; a fixture not found adds an ``unavailable`` check to
    ``missing``."""
    env = item.get("environment")
    out: dict[str, Any] = {}
    if isinstance(env, Mapping) and isinstance(env.get("files"), list):
        files = []
        for j, entry in enumerate(env["files"]):
            where = [*at, "environment", "files", j]
            if not isinstance(entry, Mapping) or not isinstance(entry.get("src"), str):
                reading.error(where, "an environment file must be `{src, dest}`")
                continue
            src = reading.path.parent / entry["src"]
            if not src.exists():
                reading.warn(
                    [*where, "src"],
                    f"fixture not found: {entry['src']}; the stimulus's result will be an error",
                )
                missing.append(
                    unavailable(
                        reading, [*where, "src"], f"fixture {entry['src']}", "it is missing"
                    )
                )
                continue
            dest = entry.get("dest") if isinstance(entry.get("dest"), str) else src.name
            files.append(reading.wrap(where, {"src": reading.relative(src), "dest": dest}))
        if files:
            out["files"] = files
    elif env is not None:
        reading.error([*at, "environment"], "`environment` must be a mapping with `files:`")
    setup = item.get("setup")
    if setup is None:
        return out
    if not isinstance(setup, Mapping):
        reading.error([*at, "setup"], "`setup` must be a mapping (`files:`, `commands:` …)")
        return out
    for key in setup:
        if key not in ("files", "commands", "copy_test_files"):
            reading.warn([*at, "setup", key], f"setup `{key}` is not read", key=True)
    if setup.get("copy_test_files") is True:
        out.setdefault("files", []).extend(_test_files(reading, [*at, "setup", "copy_test_files"]))
    commands: list[Any] = []
    for j, entry in enumerate(setup.get("files") or []):
        where = [*at, "setup", "files", j]
        path = entry.get("path") if isinstance(entry, Mapping) else None
        if not isinstance(path, str) or not _SAFE.match(path) or ".." in path.split("/"):
            reading.error(where, "a setup file must be `{path, content}` with a relative path")
            continue
        content = entry.get("content", "")
        commands.append(
            reading.wrap(
                where,
                [
                    "sh",
                    "-c",
                    'mkdir -p "$(dirname "$1")" && printf %s "$2" > "$1"',
                    "sh",
                    path,
                    str(content),
                ],
            )
        )
    raw = setup.get("commands")
    for j, command in enumerate(raw if isinstance(raw, list) else [] if raw is None else [raw]):
        where = (
            [*at, "setup", "commands"]
            if not isinstance(raw, list)
            else [*at, "setup", "commands", j]
        )
        text = reading.text(command, where, "command")
        if text is not None:
            commands.append(reading.wrap(where, text))
    if commands:
        out["commands"] = commands
    return out


_SPEC_NAMES = ("SKILL.md",)


def _test_files(reading: Reading, at: list[str | int]) -> list[Any]:
    """``copy_test_files: true``: everything beside the spec (but the spec and the skill)."""
    folder = reading.path.parent
    out = []
    for entry in sorted(folder.iterdir()):
        if entry.resolve() == reading.path.resolve() or entry.name in _SPEC_NAMES:
            continue
        if entry.name.startswith(".") or (
            entry.suffix in (".yaml", ".yml") and "eval" in entry.name
        ):
            continue
        out.append(reading.wrap(at, {"src": reading.relative(entry), "dest": entry.name}))
    return out


_SAFE = re.compile(r"^[^/~][^\0]*$")
