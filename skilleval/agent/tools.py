"""Tools an agent may call: their declarations, the built-in tool kinds, and the parser.

A tool is a name, a description, a JSON Schema for its arguments and one implementation,
chosen by a key naming a registered tool kind (:func:`~skilleval.plugins.tool_kind`; plugins
add their own). The built-in kinds:

``mock``
    Canned results. Each case has ``args`` and ``match`` (``subset``, the default: the call
    has at least these arguments with these values; ``exact``: exactly these) and a
    ``result``. The first matching case wins; otherwise ``default``; with no default the call
    is an error step.
``command``
    Runs in the test's workspace with a timeout (killed when it hangs) and an output cap
    (output past it is dropped and the result marked truncated). Arguments reach the command
    two ways, neither of which lets a model inject shell syntax: ``{name}`` placeholders,
    replaced by the argument *shell-quoted* (``shlex.quote``) in a command line, or verbatim
    as one argv item in a list command; and environment variables, ``SKILLEVAL_ARGS`` (all
    arguments as JSON) and ``SKILLEVAL_ARG_<NAME>`` (each one as text).
``python``
    ``fn(arguments: dict, workspace: Path | None) -> Any`` from ``file://path.py:fn``
    (relative to the suite) or ``module.py:fn`` in a plugin folder. It runs in-process with
    no timeout.

A result that is not a string is shown to the model as JSON.
"""

from __future__ import annotations

import json
import re
import shlex
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from skilleval.agent.schema import COMMAND, COMMAND_OPTIONS, MOCK, PYTHON, tools_schema
from skilleval.errors import Diagnostic, Location
from skilleval.plugins.markers import ToolKindType, registration_of, tool_kind
from skilleval.suite.yamlio import Document, display_path
from skilleval.userfile import lookup_problem
from skilleval.util import fileref
from skilleval.util.pyfile import import_file

COMMAND_TIMEOUT_S = 10.0
COMMAND_MAX_OUTPUT = 16_000
NO_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {},
    "additionalProperties": False,
}
_PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_NAME = re.compile(r"[^A-Za-z0-9]+")


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What one call returned."""

    output: str
    """The observation shown to the model."""
    error: str | None = None
    """Why the call failed (no matching mock, a timeout, an exception); shown to the model too."""
    truncated: bool = False
    exit_code: int | None = None
    """command: the exit code (None if it was killed or could not start)."""
    timed_out: bool = False


@runtime_checkable
class ToolImpl(Protocol):
    """How a tool answers."""

    @property
    def kind(self) -> str:
        """mock, command or python."""
        ...

    def run(self, arguments: Mapping[str, Any], workspace: Path | None) -> ToolResult: ...

    def to_json(self) -> dict[str, Any]: ...


def as_text(value: Any) -> str:
    """A result as the model sees it: text unchanged, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# -- argument matching ------------------------------------------------------------------------


def _same(actual: Any, expected: Any, subset: bool) -> bool:
    # JSON equality: true is not 1, though 1 and 1.0 are equal.
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return False
        if not subset and set(actual) != set(expected):
            return False
        return all(k in actual and _same(actual[k], v, subset) for k, v in expected.items())
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(_same(a, e, False) for a, e in zip(actual, expected, strict=True))
        )
    return bool(actual == expected)


def args_match(
    actual: Mapping[str, Any], expected: Mapping[str, Any], *, exact: bool = False
) -> bool:
    """Whether a call's arguments match ``expected``.

    Subset matching (the default) needs every key of ``expected``, at any depth of nested
    mappings, with an equal value; lists must be equal item for item. Exact matching needs
    equal mappings.
    """
    return _same(actual, expected, not exact)


# -- implementations --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MockCase:
    args: Mapping[str, Any] | None
    """None matches every call."""
    result: Any
    exact: bool = False


_NO_DEFAULT = object()


@dataclass(frozen=True, slots=True)
class MockTool:
    """Canned results matched on arguments."""

    cases: tuple[MockCase, ...] = ()
    default: Any = _NO_DEFAULT
    kind: str = "mock"

    def run(self, arguments: Mapping[str, Any], workspace: Path | None) -> ToolResult:
        for case in self.cases:
            if case.args is None or args_match(arguments, case.args, exact=case.exact):
                return ToolResult(as_text(case.result))
        if self.default is not _NO_DEFAULT:
            return ToolResult(as_text(self.default))
        shown = as_text(dict(arguments))
        return ToolResult("", error=f"the mock has no result for arguments {shown}")

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "cases": len(self.cases)}


@dataclass(frozen=True, slots=True)
class CommandTool:
    """A command run in the workspace; see the module docstring for how arguments reach it."""

    command: str | tuple[str, ...]
    timeout_s: float = COMMAND_TIMEOUT_S
    max_output: int = COMMAND_MAX_OUTPUT
    kind: str = "command"

    def argv_for(self, arguments: Mapping[str, Any]) -> str | list[str]:
        """The command with its placeholders filled in from ``arguments``."""

        def fill(quote: bool) -> Callable[[re.Match[str]], str]:
            def one(match: re.Match[str]) -> str:
                text = _arg_text(arguments.get(match.group(1)))
                return shlex.quote(text) if quote else text

            return one

        if isinstance(self.command, str):
            return _PLACEHOLDER.sub(fill(True), self.command)
        return [_PLACEHOLDER.sub(fill(False), part) for part in self.command]

    def run(self, arguments: Mapping[str, Any], workspace: Path | None) -> ToolResult:
        from skilleval.agent.process import run_process

        if workspace is None:
            return ToolResult("", error="a command tool needs a workspace, and this run has none")
        env = {"SKILLEVAL_WORKSPACE": str(workspace), "SKILLEVAL_ARGS": as_text(dict(arguments))}
        for name, value in arguments.items():
            env[f"SKILLEVAL_ARG_{_ENV_NAME.sub('_', name).upper()}"] = _arg_text(value)
        done = run_process(
            self.argv_for(arguments),
            cwd=workspace,
            timeout_s=self.timeout_s,
            max_output=self.max_output,
            env=env,
        )
        if done.error is not None:
            return ToolResult("", error=done.error)
        parts = []
        if done.exit_code not in (0, None):
            parts.append(f"exit code {done.exit_code}")
        if done.stdout:
            parts.append(done.stdout.rstrip("\n"))
        if done.stderr:
            parts.append(f"stderr:\n{done.stderr.rstrip(chr(10))}")
        if done.truncated:
            parts.append(f"[output cut at {self.max_output} bytes per stream]")
        output = "\n".join(parts)
        error = done.describe_failure(self.timeout_s) if done.timed_out else None
        return ToolResult(
            output,
            error=error,
            truncated=done.truncated,
            exit_code=done.exit_code,
            timed_out=done.timed_out,
        )

    def to_json(self) -> dict[str, Any]:
        command = self.command if isinstance(self.command, str) else list(self.command)
        return {"kind": self.kind, "command": command, "timeout_s": self.timeout_s}


def _arg_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else as_text(value)


PythonFn = Callable[[dict[str, Any], "Path | None"], Any]


@dataclass(frozen=True, slots=True)
class PythonTool:
    """A Python function called in-process."""

    ref: str
    fn: PythonFn
    kind: str = "python"

    def run(self, arguments: Mapping[str, Any], workspace: Path | None) -> ToolResult:
        try:
            value = self.fn(dict(arguments), workspace)
        except Exception as exc:
            # A tool's own failure is an observation for the model, not a crash of the run.
            return ToolResult("", error=f"{type(exc).__name__}: {exc}")
        return ToolResult(as_text(value))

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "function": self.ref}


# -- the declaration --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One declared tool."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    """JSON Schema (draft 2020-12) for the arguments, an object."""
    impl: ToolImpl
    where: Location = field(default_factory=lambda: Location("<tool>"))

    def argument_error(self, arguments: Any) -> str | None:
        """Why ``arguments`` do not satisfy the parameters schema, or None when they do."""
        from jsonschema.exceptions import best_match

        if not isinstance(arguments, Mapping):
            return f"arguments must be a JSON object, not {as_text(arguments)}"
        error = best_match(_validator(self.parameters).iter_errors(dict(arguments)))
        if error is None:
            return None
        return f"at {error.json_path}: {error.message}"

    def call(
        self, arguments: Mapping[str, Any], workspace: Path | None
    ) -> tuple[ToolResult, float]:
        """Run the implementation; returns the result and how long it took (ms)."""
        start = time.perf_counter()
        result = self.impl.run(arguments, workspace)
        return result, (time.perf_counter() - start) * 1000.0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.parameters),
            "impl": self.impl.to_json(),
        }


_validators: dict[str, Any] = {}
_validators_lock = threading.Lock()


def _validator(schema: Mapping[str, Any]) -> Any:
    from jsonschema import Draft202012Validator

    key = json.dumps(schema, sort_keys=True, default=str)
    with _validators_lock:
        found = _validators.get(key)
        if found is None:
            found = _validators[key] = Draft202012Validator(dict(schema))
    return found


def merge_tools(*levels: Iterable[ToolSpec]) -> tuple[ToolSpec, ...]:
    """Tools from suite, defaultTest and test, in that order; a later one replaces a name."""
    merged: dict[str, ToolSpec] = {}
    for level in levels:
        for tool in level:
            merged[tool.name] = tool
    return tuple(merged.values())


# -- parsing ----------------------------------------------------------------------------------


@dataclass
class ToolContext:
    """What a tool kind's factory may use while it builds one tool's implementation."""

    name: str
    """The tool's name."""
    parameters: Mapping[str, Any]
    """The tool's parameters schema."""
    options: Mapping[str, Any]
    """The whole tool mapping as written (for the kind's own ``options`` keys)."""
    base_dir: Path
    """The folder ``file://`` references are relative to."""
    plugin_dirs: Sequence[Path]
    """The suite's plugin folders."""
    doc: Document
    at: list[str | int]
    """Where the tool is in ``doc``."""
    kind: str
    diags: list[Diagnostic] = field(default_factory=list)

    def where(self, key: str | None = None) -> Location:
        """The position of ``key`` on the tool; default: the kind's value."""
        return self.doc.at([*self.at, key or self.kind])

    def error(self, message: str, key: str | None = None) -> None:
        """Record a problem at ``key`` of the tool (default: at the kind's value)."""
        self.diags.append(Diagnostic(self.where(key), message))


def parse_tools(
    doc: Document,
    path: Sequence[str | int],
    *,
    base_dir: Path,
    plugin_dirs: Sequence[Path] = (),
    kinds: Sequence[ToolKindType] | None = None,
) -> tuple[tuple[ToolSpec, ...], list[Diagnostic]]:
    """Read the ``tools:`` list at ``path`` in ``doc``.

    Args:
        doc: The file the list is in.
        path: Where the list is, e.g. ``["tools"]`` or ``["tests", 2, "tools"]``.
        base_dir: The folder ``file://`` references are relative to.
        plugin_dirs: Folders searched for ``module.py:fn`` python tools.
        kinds: The registered tool kinds, in order; default: the built-in ones.

    Returns:
        The tools that are valid, and every problem found, positioned.
    """
    from skilleval.suite.schema import validate

    if kinds is None:
        kinds = builtin_kinds()
    sub = doc.sub(path)
    diags = validate(sub, tools_schema(kinds), what="tools")
    if diags:
        return (), diags
    tools: list[ToolSpec] = []
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
) -> ToolSpec | None:
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
    ctx = ToolContext(name, parameters, raw, base_dir, plugin_dirs, doc, list(at), kind.name)
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
    return ToolSpec(name, str(raw.get("description", "")), parameters, impl, doc.at(at))


def parameters_problem(parameters: Any) -> str | None:
    """Why ``parameters`` cannot describe a tool's arguments, or None when it can."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(parameters)
    except SchemaError as exc:
        return f"invalid parameters schema at {exc.json_path}: {exc.message}"
    kind = parameters.get("type") if isinstance(parameters, Mapping) else None
    if kind is not None and kind != "object":
        return f"parameters must describe an object (type: object), not type {kind!r}"
    return None


# -- the built-in tool kinds ------------------------------------------------------------------


@tool_kind("mock", schema=MOCK)
def mock(value: Mapping[str, Any], ctx: ToolContext) -> MockTool:
    """Canned results matched on the call's arguments."""
    cases = tuple(
        MockCase(case.get("args"), case["result"], case.get("match", "subset") == "exact")
        for case in value.get("results") or []
    )
    return MockTool(cases, value.get("default", _NO_DEFAULT))


@tool_kind("command", schema=COMMAND, options=COMMAND_OPTIONS)
def command(value: str | list[str], ctx: ToolContext) -> CommandTool:
    """A command run in the workspace, with a timeout and an output cap."""
    parts = [value] if isinstance(value, str) else list(value)
    parameters = ctx.parameters
    declared = set((parameters.get("properties") or {}) if isinstance(parameters, Mapping) else {})
    for part in parts:
        for match in _PLACEHOLDER.finditer(part):
            if match.group(1) not in declared:
                ctx.error(
                    f"command uses {{{match.group(1)}}}, which is not a parameter of "
                    f"tool '{ctx.name}'"
                )
    return CommandTool(
        value if isinstance(value, str) else tuple(value),
        float(ctx.options.get("timeout", COMMAND_TIMEOUT_S)),
        int(ctx.options.get("max_output", COMMAND_MAX_OUTPUT)),
    )


@tool_kind("python", schema=PYTHON)
def python(ref: str, ctx: ToolContext) -> PythonTool | None:
    """A Python function called in-process: file://path.py:fn or module.py:fn."""
    parsed = fileref.parse(ref)
    target, fn_name = parsed.path, parsed.function
    if fn_name is None:
        ctx.error(f"python tool must be file://path.py:function or module.py:function, not {ref!r}")
        return None
    if fileref.is_ref(ref):
        candidates = [fileref.resolve(target, ctx.base_dir)]
    else:
        name = target if target.endswith(".py") else f"{target}.py"
        candidates = [folder / name for folder in ctx.plugin_dirs]
    unreadable = next((lookup_problem(p) for p in candidates if lookup_problem(p)), None)
    if unreadable is not None:
        ctx.error(unreadable)
        return None
    path = next((p for p in candidates if p.is_file()), None)
    if path is None:
        looked = ", ".join(display_path(p) for p in candidates) or "no plugin folders are set"
        ctx.error(f"python tool file not found: {target} (looked in {looked})")
        return None
    try:
        module = import_file(path)
    except Exception as exc:
        # Importing runs the author's code, which may raise anything.
        ctx.error(f"{target} failed to import: {type(exc).__name__}: {exc}")
        return None
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        ctx.error(f"{target} has no function {fn_name!r}")
        return None
    return PythonTool(ref, fn)


def builtin_kinds() -> tuple[ToolKindType, ...]:
    """The built-in tool kinds, in the order messages list them."""
    found = (registration_of(mock), registration_of(command), registration_of(python))
    return tuple(k for k in found if isinstance(k, ToolKindType))
