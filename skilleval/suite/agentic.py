"""The agentic keys of a suite, read into typed config: ``tools``, ``environment``, ``turns``.

A test runs as an agent when it has tools, an environment, turns or ``max_steps``. This module
turns those keys into the :class:`~skilleval.suite.agent_config.AgentConfig` that the agent
runtime (:mod:`skilleval.agent`) consumes; nothing here runs a tool or makes a workspace.

A tool is a name, a description, a JSON Schema for its arguments and one implementation,
chosen by a key naming a registered tool kind (:func:`~skilleval.plugins.tool_kind`). The
kind's factory builds the implementation while the suite loads; its problems are positioned
diagnostics like any other.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skilleval.errors import Diagnostic, Location, missing_file
from skilleval.plugins.markers import ToolKindType
from skilleval.suite.agent_config import (
    DEFAULT_MAX_STEPS,
    SETUP_TIMEOUT_S,
    AgentConfig,
    EnvironmentConfig,
    FileCopy,
    SetupCommand,
    ToolConfig,
    Turn,
)
from skilleval.suite.agentic_schema import ENVIRONMENT, tools_schema
from skilleval.suite.model import AssertionEntry, Prompt
from skilleval.suite.schema import validate
from skilleval.suite.yamlio import Document
from skilleval.trajectory import ToolImpl
from skilleval.userfile import display_path, lookup_problem
from skilleval.util.frozen import frozen
from skilleval.util.workpath import path_problem

NO_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {},
    "additionalProperties": False,
}
_AGENT_KEYS = ("environment", "max_steps")


# -- tools ------------------------------------------------------------------------------------


@dataclass
class _ToolContext:
    """The :class:`~skilleval.trajectory.ToolContext` a kind's factory is given."""

    name: str
    parameters: Mapping[str, Any]
    options: Mapping[str, Any]
    base_dir: Path
    plugin_dirs: Sequence[Path]
    doc: Document
    at: list[str | int]
    kind: str
    diags: list[Diagnostic] = field(default_factory=list)

    def where(self, key: str | None = None) -> Location:
        return self.doc.at([*self.at, key or self.kind])

    def error(self, message: str, key: str | None = None) -> None:
        self.diags.append(Diagnostic(self.where(key), message))


def parse_tools(
    doc: Document,
    path: Sequence[str | int],
    *,
    base_dir: Path,
    kinds: Sequence[ToolKindType],
    plugin_dirs: Sequence[Path] = (),
) -> tuple[tuple[ToolConfig, ...], list[Diagnostic]]:
    """Read the ``tools:`` list at ``path`` in ``doc``.

    Args:
        doc: The file the list is in.
        path: Where the list is, e.g. ``["tools"]`` or ``["tests", 2, "tools"]``.
        base_dir: The folder ``file://`` references are relative to.
        kinds: The registered tool kinds, in order (the plugin manager's ``tool_kinds()``).
        plugin_dirs: Folders searched for ``module.py:fn`` python tools.

    Returns:
        The tools that are valid, and every problem found, positioned.
    """
    sub = doc.sub(path)
    diags = validate(sub, tools_schema(kinds), what="tools")
    if diags:
        return (), diags
    tools: list[ToolConfig] = []
    seen: dict[str, Location] = {}
    for i, raw in enumerate(sub.data or []):
        at = [*path, i]
        name = raw["name"]
        first = seen.get(name)
        if first is not None:
            diags.append(
                Diagnostic(
                    doc.at([*at, "name"]), f"duplicate tool name '{name}' (first at {first})"
                )
            )
            continue
        seen[name] = doc.at([*at, "name"])
        tool = _tool(doc, at, raw, base_dir, plugin_dirs, kinds, diags)
        if tool is not None:
            tools.append(tool)
    return tuple(tools), diags


def _tool(
    doc: Document,
    at: list[str | int],
    raw: Mapping[str, Any],
    base_dir: Path,
    plugin_dirs: Sequence[Path],
    kinds: Sequence[ToolKindType],
    diags: list[Diagnostic],
) -> ToolConfig | None:
    name = raw["name"]
    before = len(diags)
    parameters = raw.get("parameters", NO_PARAMETERS)
    problem = parameters_problem(parameters)
    if problem is not None:
        diags.append(Diagnostic(doc.at([*at, "parameters"]), f"tool '{name}': {problem}"))
    present = [k for k in kinds if k.name in raw]
    if not present:
        listed = ", ".join(k.name for k in kinds[:-1]) + f" or {kinds[-1].name}" if kinds else ""
        diags.append(Diagnostic(doc.at(at), f"tool '{name}' needs an implementation: {listed}"))
        return None
    if len(present) > 1:
        diags.append(
            Diagnostic(
                doc.key_at([*at, present[1].name]),
                f"tool '{name}' has both {present[0].name} and {present[1].name}; give exactly one",
            )
        )
        return None
    kind = present[0]
    for other in kinds:
        for key in other.options:
            if key in raw and key not in kind.options:
                diags.append(
                    Diagnostic(
                        doc.key_at([*at, key]), f"'{key}' applies to {other.name} tools only"
                    )
                )
    ctx = _ToolContext(name, parameters, raw, base_dir, plugin_dirs, doc, list(at), kind.name)
    impl: object = kind.factory(raw[kind.name], ctx)
    diags.extend(ctx.diags)
    if impl is not None and not isinstance(impl, ToolImpl):
        diags.append(
            Diagnostic(
                ctx.where(),
                f"tool kind '{kind.name}' ({kind.defined_at}) returned {type(impl).__name__}, "
                "which lacks kind, run() or to_json()",
            )
        )
    if not isinstance(impl, ToolImpl) or len(diags) > before:
        return None
    return ToolConfig(name, str(raw.get("description", "")), parameters, impl, doc.at(at))


def parameters_problem(parameters: Any) -> str | None:
    """Why ``parameters`` cannot describe a tool's arguments, or None when it can."""
    from jsonschema import Draft202012Validator  # lazy: start-up time
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(parameters)
    except SchemaError as exc:
        return f"invalid parameters schema at {exc.json_path}: {exc.message}"
    kind = parameters.get("type") if isinstance(parameters, Mapping) else None
    if kind is not None and kind != "object":
        return f"parameters must describe an object (type: object), not type {kind!r}"
    return None


def merge_tools(*levels: Iterable[ToolConfig]) -> tuple[ToolConfig, ...]:
    """Tools from suite, defaultTest and test, in that order; a later one replaces a name."""
    merged: dict[str, ToolConfig] = {}
    for level in levels:
        for tool in level:
            merged[tool.name] = tool
    return tuple(merged.values())


# -- environment ------------------------------------------------------------------------------


def parse_environment(
    doc: Document, path: Sequence[str | int], *, base_dir: Path
) -> tuple[EnvironmentConfig | None, list[Diagnostic]]:
    """Read the ``environment:`` mapping at ``path`` in ``doc``.

    Args:
        doc: The file the mapping is in.
        path: Where the mapping is, e.g. ``["tests", 0, "environment"]``.
        base_dir: The folder ``src`` paths are relative to (the suite's).

    Returns:
        The environment (None when there are errors) and every problem found, positioned.
    """
    sub = doc.sub(path)
    diags = validate(sub, ENVIRONMENT, what="environment")
    if diags:
        return None, diags
    data = sub.data or {}
    files: list[FileCopy] = []
    for i, item in enumerate(data.get("files") or []):
        copy = _file_copy(doc, [*path, "files", i], item, base_dir, diags)
        if copy is not None:
            files.append(copy)
    commands = [
        SetupCommand(cmd if isinstance(cmd, str) else tuple(cmd), doc.at([*path, "commands", i]))
        for i, cmd in enumerate(data.get("commands") or [])
    ]
    env = EnvironmentConfig(
        tuple(files), tuple(commands), float(data.get("timeout", SETUP_TIMEOUT_S))
    )
    return (None if diags else env), diags


def _file_copy(
    doc: Document, at: list[str | int], item: Any, base_dir: Path, diags: list[Diagnostic]
) -> FileCopy | None:
    raw_src = item if isinstance(item, str) else item["src"]
    src_at = at if isinstance(item, str) else [*at, "src"]
    src = Path(raw_src).expanduser()
    src = src if src.is_absolute() else base_dir / src
    unreadable = lookup_problem(src)
    if unreadable is not None:
        diags.append(Diagnostic(doc.at(src_at), unreadable))
        return None
    if not src.exists():
        message = f"file not found: {raw_src} (looked for {display_path(src)})"
        diags.append(missing_file(doc.at(src_at), message, str(src)))
        return None
    if not (src.is_file() or src.is_dir()):
        diags.append(Diagnostic(doc.at(src_at), f"expected a regular file or a folder: {raw_src}"))
        return None
    dest = src.name if isinstance(item, str) else item.get("dest", src.name)
    problem = path_problem(dest)
    if problem is not None:
        dest_at = at if isinstance(item, str) else [*at, "dest"]
        diags.append(Diagnostic(doc.at(dest_at), f"dest: {problem}"))
        return None
    escaping = _escaping_link(src)
    if escaping is not None:
        message = f"{raw_src} holds a symlink that points outside it: {escaping}"
        diags.append(Diagnostic(doc.at(src_at), message))
        return None
    return FileCopy(src, dest, doc.at(at))


def _escaping_link(src: Path) -> str | None:
    """A symlink under the folder ``src`` whose target lies outside ``src``, if any."""
    if not src.is_dir():
        return None
    root = src.resolve()
    for dirpath, dirnames, filenames in os.walk(src):
        for name in [*dirnames, *filenames]:
            entry = Path(dirpath) / name
            if entry.is_symlink():
                target = entry.resolve()
                if target != root and root not in target.parents:
                    return str(entry.relative_to(src))
    return None


# -- a test's agent settings ------------------------------------------------------------------

CompileAssertion = Callable[[Any, Sequence[str | int]], AssertionEntry | None]
"""The loader's reading of one assertion mapping at a path in the test's document."""


@frozen
class AgentSources:
    """Where a test's agentic keys may come from, and what reading them needs."""

    kinds: Sequence[ToolKindType]
    plugin_dirs: Sequence[Path]
    suite_dir: Path
    """The suite file's folder: ``defaultTest`` keys are relative to it."""
    shared_tools: tuple[ToolConfig, ...] = ()
    """Tools from the top-level ``tools:`` and ``defaultTest.tools``, in that order."""


def shared_tools(
    doc: Document, default_doc: Document | None, sources: AgentSources
) -> tuple[tuple[ToolConfig, ...], list[Diagnostic]]:
    """The top-level and ``defaultTest`` tools, parsed once; every test gets them."""
    shared: list[ToolConfig] = []
    diags: list[Diagnostic] = []
    for source in [doc] + ([default_doc] if default_doc is not None else []):
        if "tools" in source.data:
            tools, found = parse_tools(
                source,
                ["tools"],
                base_dir=sources.suite_dir,
                plugin_dirs=sources.plugin_dirs,
                kinds=sources.kinds,
            )
            diags.extend(found)
            shared.extend(tools)
    if default_doc is not None and "turns" in default_doc.data:
        diags.append(
            Diagnostic(
                default_doc.key_at(["turns"]), "`turns` belongs on a test, not on defaultTest"
            )
        )
    return tuple(shared), diags


def agent_config(
    doc: Document,
    default_doc: Document | None,
    base: Path,
    sources: AgentSources,
    compile_assertion: CompileAssertion,
) -> tuple[AgentConfig | None, list[Diagnostic]]:
    """A test's agent settings, or None when it is a plain single-call test.

    Args:
        doc: The test's document.
        default_doc: The suite's ``defaultTest`` document, if any.
        base: The folder the test's relative paths are relative to.
        sources: The kinds, folders and shared tools of the suite.
        compile_assertion: Reads one turn assertion (its problems go to the loader).
    """
    data: dict[str, Any] = doc.data
    default: Mapping[str, Any] = default_doc.data if default_doc is not None else {}
    diags: list[Diagnostic] = []
    own: tuple[ToolConfig, ...] = ()
    if "tools" in data:
        own, found = parse_tools(
            doc, ["tools"], base_dir=base, plugin_dirs=sources.plugin_dirs, kinds=sources.kinds
        )
        diags.extend(found)
    environment = None
    if "environment" in data:
        environment, found = parse_environment(doc, ["environment"], base_dir=base)
        diags.extend(found)
    elif default_doc is not None and "environment" in default:
        environment, found = parse_environment(
            default_doc, ["environment"], base_dir=sources.suite_dir
        )
        diags.extend(found)
    turns: list[Turn] = []
    for i, raw in enumerate(data.get("turns") or []):
        entries = [
            compile_assertion(entry, ["turns", i, "assert", j])
            for j, entry in enumerate(raw.get("assert") or [])
        ]
        turns.append(
            Turn(str(raw["user"]), tuple(e for e in entries if e), doc.at(["turns", i, "user"]))
        )
    tools = merge_tools(sources.shared_tools, own)
    declared = any(key in data or key in default for key in _AGENT_KEYS)
    if not (tools or turns or declared):
        return None, diags
    max_steps = int(data.get("max_steps", default.get("max_steps", DEFAULT_MAX_STEPS)))
    return AgentConfig(tools, environment, tuple(turns), max_steps), diags


def turn_prompt(doc: Document, agent: AgentConfig) -> tuple[Prompt, list[Diagnostic]]:
    """A test with turns has no other prompt; its first turn stands in for routing and ids."""
    diags = []
    if "prompt" in doc.data:
        diags.append(
            Diagnostic(doc.key_at(["prompt"]), "a test has `prompt:` or `turns:`, not both")
        )
    first = agent.turns[0]
    return Prompt("prompt", text=first.user, where=first.where), diags


def turn_templates(agent: AgentConfig) -> list[Prompt]:
    """Each turn's message as a prompt template, for the loader's check of its variables."""
    return [
        Prompt(f"turn {i}", text=turn.user, where=turn.where)
        for i, turn in enumerate(agent.turns, start=1)
    ]
