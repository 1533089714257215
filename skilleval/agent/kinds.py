"""The built-in tool kinds: ``mock``, ``command`` and ``python``.

Each is a registration (:func:`~skilleval.plugins.tool_kind`) found by the plugin manager the
way a plugin's kinds are: its factory runs while the suite loads and builds the implementation
that the agent loop calls.

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
    arguments as JSON) and ``SKILLEVAL_ARG_<NAME>`` (each one as text). A command that
    cannot start (a missing program, an argument over the OS limit) is an error step that
    did not run.
``python``
    ``fn(arguments: dict, workspace: Path | None) -> Any`` from ``file://path.py:fn``
    (relative to the suite) or ``module.py:fn`` in a plugin folder. It runs in-process with
    no timeout.

A result that is not a string is shown to the model as JSON.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from skilleval.plugins.markers import tool_kind
from skilleval.sandbox.process import run_process
from skilleval.sandbox.pyfile import import_file, imports_allowed
from skilleval.trajectory import ToolContext, ToolResult, args_match, result_text
from skilleval.userfile import display_path, lookup_problem
from skilleval.util import fileref
from skilleval.util.frozen import frozen

COMMAND_TIMEOUT_S = 10.0
COMMAND_MAX_OUTPUT = 16_000
_PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_NAME = re.compile(r"[^A-Za-z0-9]+")

# -- the kinds' config schemas ----------------------------------------------------------------

MOCK_CASE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["result"],
    "properties": {
        "args": {
            "type": "object",
            "description": "Arguments this result answers; omitted matches every call.",
        },
        "match": {
            "enum": ["subset", "exact"],
            "description": "subset (default): the call has at least these arguments; exact: only these.",
        },
        "result": {"description": "What the tool returns: text, or any JSON value."},
    },
}

MOCK: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "Canned results: the first case whose args match wins, else the default.",
    "properties": {
        "results": {"type": "array", "items": MOCK_CASE},
        "default": {"description": "The result when no case matches."},
    },
}

COMMAND: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "minLength": 1},
        {"type": "array", "items": {"type": "string"}, "minItems": 1},
    ],
    "description": "Run in the workspace: a shell line with {arg} placeholders (shell-quoted), or an argv list.",
}

COMMAND_OPTIONS: dict[str, Any] = {
    "timeout": {
        "type": "number",
        "exclusiveMinimum": 0,
        "description": "command: seconds before it is killed (default 10).",
    },
    "max_output": {
        "type": "integer",
        "minimum": 1,
        "description": "command: bytes kept from each of stdout and stderr (default 16000).",
    },
}

PYTHON: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "description": "file://path.py:fn (relative to the suite) or module.py:fn in a plugin folder.",
}


# -- mock -------------------------------------------------------------------------------------


@frozen
class MockCase:
    args: Mapping[str, Any] | None
    """None matches every call."""
    result: Any
    exact: bool = False


_NO_DEFAULT = object()


@frozen
class MockTool:
    """Canned results matched on arguments."""

    cases: tuple[MockCase, ...] = ()
    default: Any = _NO_DEFAULT
    kind: str = "mock"

    def run(self, arguments: Mapping[str, Any], workspace: Path | None) -> ToolResult:
        for case in self.cases:
            if case.args is None or args_match(arguments, case.args, exact=case.exact):
                return ToolResult(result_text(case.result))
        if self.default is not _NO_DEFAULT:
            return ToolResult(result_text(self.default))
        shown = result_text(dict(arguments))
        return ToolResult("", error=f"the mock has no result for arguments {shown}")

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "cases": len(self.cases)}


@tool_kind("mock", schema=MOCK)
def mock(value: Mapping[str, Any], ctx: ToolContext) -> MockTool:
    """Canned results matched on the call's arguments."""
    cases = tuple(
        MockCase(case.get("args"), case["result"], case.get("match", "subset") == "exact")
        for case in value.get("results") or []
    )
    return MockTool(cases, value.get("default", _NO_DEFAULT))


# -- command ----------------------------------------------------------------------------------


@frozen
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
        if workspace is None:
            return ToolResult(
                "", error="a command tool needs a workspace, and this run has none", started=False
            )
        env = {
            "SKILLEVAL_WORKSPACE": str(workspace),
            "SKILLEVAL_ARGS": result_text(dict(arguments)),
        }
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
            # It never started: not a run, whatever the model asked for.
            return ToolResult("", error=done.error, started=False)
        parts = []
        if done.exit_code not in (0, None):
            parts.append(f"exit code {done.exit_code}")
        if done.stdout:
            parts.append(done.stdout.rstrip("\n"))
        if done.stderr:
            parts.append(f"stderr:\n{done.stderr.rstrip(chr(10))}")
        if done.truncated:
            parts.append(f"[output cut at {self.max_output} bytes per stream]")
        error = done.describe_failure(self.timeout_s) if done.timed_out else None
        return ToolResult(
            "\n".join(parts),
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
    return value if isinstance(value, str) else result_text(value)


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


# -- python -----------------------------------------------------------------------------------

PythonFn = Callable[[dict[str, Any], "Path | None"], Any]


@frozen
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
        return ToolResult(result_text(value))

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "function": self.ref}


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
    if not imports_allowed():
        return PythonTool(ref, _not_imported)  # validate --no-plugins: the file is not run
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


def _not_imported(_arguments: dict[str, Any], _workspace: Path | None) -> Any:
    raise RuntimeError("this tool's file was not imported (validate --no-plugins)")
