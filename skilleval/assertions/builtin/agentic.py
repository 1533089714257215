"""Checks on what an agent did: the tools it called (its trajectory) and its workspace.

They read two entries of ``check.extra`` that the runner fills for tests that run the agent
loop: ``trajectory``, the list of step records (see :class:`skilleval.agent.loop.Step`), and
``workspace``, the path of the run's workspace. A test that has neither gets an ``error``
verdict, not a fail: the check cannot be evaluated there.

A tool counts as *called* when its implementation ran; an attempt rejected for an unknown
name or invalid arguments does not count (reasons mention such attempts). Prefer the file
checks and ``run-command``, which grade outcomes and accept any route; keep trajectory checks
for "a required tool actually ran".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from skilleval.assertions.api import Check, Verdict, assertion
from skilleval.assertions.builtin._common import clip, dump, quote
from skilleval.errors import RegexError, RegexTimeoutError
from skilleval.suite.template import is_template
from skilleval.util import saferegex

_NAME: dict[str, Any] = {"type": "string", "minLength": 1}
_PATH: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "description": "A path relative to the workspace.",
}
_CALL: dict[str, Any] = {
    "anyOf": [
        _NAME,
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["name"],
            "properties": {
                "name": _NAME,
                "args": {"type": "object"},
                "match": {"enum": ["subset", "exact"]},
            },
        },
    ]
}
_COUNT: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "properties": {
        "name": _NAME,
        "min": {"type": "integer", "minimum": 0},
        "max": {"type": "integer", "minimum": 0},
    },
}
_QUERY: dict[str, Any] = {
    "oneOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "properties": {"query": {"type": "string", "minLength": 1}, "equals": {}},
            "required": ["query", "equals"],
            "additionalProperties": False,
        },
    ]
}
_FILE_TEXT: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["path", "value"],
    "properties": {"path": _PATH, "value": {"type": ["string", "number"]}},
}
_FILE_PATTERN: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["path", "pattern"],
    "properties": {"path": _PATH, "pattern": {"type": "string", "minLength": 1}},
}
_COMMAND_LINE: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "minLength": 1},
        {"type": "array", "items": {"type": "string"}, "minItems": 1},
    ]
}
_RUN: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["command"],
            "properties": {
                "command": _COMMAND_LINE,
                "exit_code": {"type": "integer"},
                "stdout": {"type": "string", "description": "A regex stdout must match."},
                "timeout": {"type": "number", "exclusiveMinimum": 0},
            },
        },
    ]
}

RUN_TIMEOUT_S = 30.0
RUN_MAX_OUTPUT = 256_000
FILE_LIMIT = 10_000_000
"""Bytes of a file read for content checks; a larger file is checked on its first 10 MB."""

_LISTED = 5


# -- context ----------------------------------------------------------------------------------


def _steps(check: Check) -> list[Mapping[str, Any]] | Verdict:
    steps = check.extra.get("trajectory")
    if steps is None:
        return Verdict.failed_with_error("this test has no trajectory (it runs no agent loop)")
    return [s for s in steps if isinstance(s, Mapping)]


def _workspace(check: Check) -> Path | Verdict:
    root = check.extra.get("workspace")
    if not root:
        return Verdict.failed_with_error("this test has no workspace")
    return Path(str(root))


def _inside(check: Check, rel: str) -> Path | Verdict:
    from skilleval.agent.workspace import PathEscape, resolve_inside

    root = _workspace(check)
    if isinstance(root, Verdict):
        return root
    try:
        return resolve_inside(root, rel)
    except PathEscape as exc:
        return Verdict.failed_with_error(str(exc))


def _calls(steps: Sequence[Mapping[str, Any]], name: str | None = None) -> list[Mapping[str, Any]]:
    return [s for s in steps if s.get("ran") and (name is None or s.get("tool") == name)]


def _rejected(steps: Sequence[Mapping[str, Any]], name: str) -> str:
    count = sum(1 for s in steps if s.get("tool") == name and not s.get("ran"))
    if not count:
        return ""
    return f" ({count} attempt{'s' if count > 1 else ''} rejected before running)"


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _summary(steps: Sequence[Mapping[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for step in _calls(steps):
        counts[str(step.get("tool"))] = counts.get(str(step.get("tool")), 0) + 1
    if not counts:
        return "no tool ran"
    shown = [f"{n} ×{c}" if c > 1 else n for n, c in counts.items()]
    rest = len(shown) - _LISTED
    return "calls: " + ", ".join(shown[:_LISTED]) + (f" and {rest} more" if rest > 0 else "")


def _call_spec(value: Any) -> tuple[str, Mapping[str, Any] | None, bool]:
    if isinstance(value, Mapping):
        return str(value["name"]), value.get("args"), value.get("match") == "exact"
    return str(value), None, False


def _matching(
    calls: Sequence[Mapping[str, Any]], args: Mapping[str, Any] | None, exact: bool
) -> list[Mapping[str, Any]]:
    from skilleval.agent.tools import args_match

    if args is None:
        return list(calls)
    return [
        c
        for c in calls
        if isinstance(c.get("arguments"), Mapping) and args_match(c["arguments"], args, exact=exact)
    ]


def _step_numbers(steps: Sequence[Mapping[str, Any]]) -> str:
    numbers = [str(s.get("index")) for s in steps[:_LISTED]]
    more = len(steps) - _LISTED
    word = "step" if len(steps) == 1 else "steps"
    return f"{word} {', '.join(numbers)}" + (f" and {more} more" if more > 0 else "")


# -- trajectory -------------------------------------------------------------------------------


@assertion("tool-called", value=_CALL)
def tool_called(check: Check) -> Verdict:
    """A tool ran at least once; with ``{name, args}``, with matching arguments.

    ``args`` match as a subset by default (the call has at least these arguments with these
    values, at any depth of nested objects); ``match: exact`` requires exactly these.
    """
    steps = _steps(check)
    if isinstance(steps, Verdict):
        return steps
    name, args, exact = _call_spec(check.value)
    calls = _calls(steps, name)
    if not calls:
        return Verdict.of(
            False, f"{name} was never called{_rejected(steps, name)}; {_summary(steps)}"
        )
    found = _matching(calls, args, exact)
    if args is None:
        return Verdict.of(True, f"{name} was called {_times(len(calls))} ({_step_numbers(calls)})")
    wanted = f"arguments {'equal to' if exact else 'matching'} {dump(args)}"
    if found:
        return Verdict.of(True, f"{name} was called with {wanted} ({_step_numbers(found)})")
    got = ", ".join(dump(c.get("arguments"), 60) for c in calls[:3])
    return Verdict.of(
        False, f"{name} was called {_times(len(calls))}, never with {wanted}; got {got}"
    )


@assertion("tool-not-called", value=_CALL)
def tool_not_called(check: Check) -> Verdict:
    """A tool never ran; with ``{name, args}``, never with matching arguments."""
    steps = _steps(check)
    if isinstance(steps, Verdict):
        return steps
    name, args, exact = _call_spec(check.value)
    found = _matching(_calls(steps, name), args, exact)
    if found:
        how = "" if args is None else f" with arguments matching {dump(args)}"
        return Verdict.of(
            False, f"{name} was called{how} {_times(len(found))} ({_step_numbers(found)})"
        )
    how = "" if args is None else f" with arguments matching {dump(args)}"
    return Verdict.of(True, f"{name} was not called{how}; {_summary(steps)}")


def check_count(value: Any) -> str | None:
    """``min`` must not exceed ``max``, and one of them must be given."""
    if not isinstance(value, Mapping):
        return None
    if "min" not in value and "max" not in value:
        return "tool-call-count needs `min`, `max` or both"
    low, high = value.get("min"), value.get("max")
    if isinstance(low, int) and isinstance(high, int) and low > high:
        return f"tool-call-count: min ({low}) is greater than max ({high})"
    return None


@assertion("tool-call-count", value=_COUNT, check_value=check_count)
def tool_call_count(check: Check) -> Verdict:
    """The number of calls that ran, of one tool (``name``) or of all, is within ``min``..``max``."""
    steps = _steps(check)
    if isinstance(steps, Verdict):
        return steps
    name = check.value.get("name")
    low, high = check.value.get("min"), check.value.get("max")
    count = len(_calls(steps, name))
    subject = f"{name} was called" if name else "tools were called"
    bounds = " and ".join(
        part
        for part in (
            f"at least {low}" if low is not None else "",
            f"at most {high}" if high is not None else "",
        )
        if part
    )
    passed = (low is None or count >= low) and (high is None or count <= high)
    return Verdict.of(passed, f"{subject} {_times(count)}; expected {bounds}")


@assertion("max-steps", value={"type": "integer", "minimum": 0})
def max_steps(check: Check) -> Verdict:
    """The agent used at most this many steps (model calls), error steps included."""
    steps = _steps(check)
    if isinstance(steps, Verdict):
        return steps
    limit = int(check.value)
    used = len(steps)
    word = "step" if used == 1 else "steps"
    return Verdict.of(used <= limit, f"the agent took {used} {word} (limit {limit})")


def check_query(value: Any) -> str | None:
    """The JMESPath query compiles."""
    from skilleval.assertions.builtin.structured import check_query as compiles

    return compiles(value)


def _truthy(value: Any) -> bool:
    # JMESPath truthiness: numbers, 0 included, are true; empty containers are false
    return not (value is None or value is False or value in ("", [], {}))


@assertion("trajectory", value=_QUERY, check_value=check_query)
def trajectory(check: Check) -> Verdict:
    """A JMESPath query over the list of steps is truthy, or equals ``equals``.

    Each step has ``index``, ``turn``, ``kind`` (tool, final, invalid), ``tool``,
    ``arguments``, ``result``, ``error``, ``ran``, ``answer`` and token counts. For example
    ``length([?tool=='search' && ran]) >= `1``` or ``[?ran].tool | [0]``.
    """
    import jmespath
    from jmespath.exceptions import JMESPathError

    from skilleval.assertions.builtin._common import json_difference

    steps = _steps(check)
    if isinstance(steps, Verdict):
        return steps
    query = check.value if isinstance(check.value, str) else str(check.value["query"])
    try:
        result = jmespath.search(query, [dict(s) for s in steps])
    except JMESPathError as exc:
        return Verdict.failed_with_error(f"query {quote(query)} failed: {clip(str(exc))}")
    shown = f"query {quote(query)} gives {dump(result)}"
    if isinstance(check.value, Mapping):
        difference = json_difference(result, check.value["equals"])
        if difference is None:
            return Verdict.of(True, shown)
        return Verdict.of(False, f"{shown}, which differs: {difference}")
    return Verdict.of(
        _truthy(result), f"{shown}, which is {'truthy' if _truthy(result) else 'falsy'}"
    )


# -- files ------------------------------------------------------------------------------------


def _path_of(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("path"), str):
        return str(value["path"])
    return None


def check_path(value: Any) -> str | None:
    """The path cannot leave the workspace (judged from its text; symlinks are checked later)."""
    from skilleval.agent.workspace import path_problem

    rel = _path_of(value)
    if rel is None or is_template(rel):
        return None
    return path_problem(rel)


def check_pattern(value: Any) -> str | None:
    """The path stays inside the workspace and the pattern compiles."""
    problem = check_path(value)
    if problem is not None or not isinstance(value, Mapping):
        return problem
    pattern = str(value.get("pattern", ""))
    if is_template(pattern):
        return None
    try:
        saferegex.compile(pattern, saferegex.MULTILINE)
    except RegexError as exc:
        return f"invalid regex {quote(pattern)}: {exc}"
    return None


def _describe(path: Path, rel: str) -> str:
    if path.is_dir():
        return f"{rel} exists (a directory)"
    size = path.stat().st_size
    return f"{rel} exists ({size} byte{'s' if size != 1 else ''})"


@assertion("file-exists", value=_PATH, check_value=check_path)
def file_exists(check: Check) -> Verdict:
    """A file or folder exists at this path in the workspace."""
    rel = str(check.value)
    path = _inside(check, rel)
    if isinstance(path, Verdict):
        return path
    if path.exists():
        return Verdict.of(True, _describe(path, rel))
    return Verdict.of(False, f"{rel} does not exist{_siblings(path, rel)}")


@assertion("file-not-exists", value=_PATH, check_value=check_path)
def file_not_exists(check: Check) -> Verdict:
    """Nothing exists at this path in the workspace."""
    rel = str(check.value)
    path = _inside(check, rel)
    if isinstance(path, Verdict):
        return path
    if path.exists():
        return Verdict.of(False, _describe(path, rel))
    return Verdict.of(True, f"{rel} does not exist")


def _siblings(path: Path, rel: str) -> str:
    folder = path.parent
    if not folder.is_dir():
        return ""
    names = sorted(p.name for p in folder.iterdir())
    if not names:
        return "; its folder is empty"
    shown = ", ".join(names[:_LISTED]) + (
        f" and {len(names) - _LISTED} more" if len(names) > _LISTED else ""
    )
    return f"; its folder has {shown}"


def _read(path: Path, rel: str) -> str | Verdict:
    """The file's text, or a failing verdict saying why there is none."""
    if not path.exists():
        return Verdict.of(False, f"{rel} does not exist{_siblings(path, rel)}")
    if path.is_dir():
        return Verdict.of(False, f"{rel} is a directory, not a file")
    try:
        with path.open("rb") as fh:
            raw = fh.read(FILE_LIMIT)
    except OSError as exc:
        return Verdict.failed_with_error(f"cannot read {rel}: {exc.strerror or exc}")
    return raw.decode("utf-8", errors="replace")


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


@assertion("file-contains", value=_FILE_TEXT, check_value=check_path)
def file_contains(check: Check) -> Verdict:
    """The file at ``path`` contains ``value`` (case-sensitive)."""
    rel, needle = str(check.value["path"]), _text(check.value["value"])
    path = _inside(check, rel)
    if isinstance(path, Verdict):
        return path
    text = _read(path, rel)
    if isinstance(text, Verdict):
        return text
    at = text.find(needle)
    if at >= 0:
        return Verdict.of(True, f"{rel} contains {quote(needle)} at line {_line_of(text, at)}")
    return Verdict.of(False, f"{rel} lacks {quote(needle)}; it has {_glimpse(text)}")


@assertion("file-not-contains", value=_FILE_TEXT, check_value=check_path)
def file_not_contains(check: Check) -> Verdict:
    """The file at ``path`` does not contain ``value``; a missing file contains nothing."""
    rel, needle = str(check.value["path"]), _text(check.value["value"])
    path = _inside(check, rel)
    if isinstance(path, Verdict):
        return path
    if not path.exists():
        return Verdict.of(True, f"{rel} does not exist, so it does not contain {quote(needle)}")
    text = _read(path, rel)
    if isinstance(text, Verdict):
        return text
    at = text.find(needle)
    if at >= 0:
        return Verdict.of(False, f"{rel} contains {quote(needle)} at line {_line_of(text, at)}")
    return Verdict.of(True, f"{rel} does not contain {quote(needle)}")


@assertion("file-matches", value=_FILE_PATTERN, check_value=check_pattern)
def file_matches(check: Check) -> Verdict:
    """The regex ``pattern`` is found in the file at ``path`` (``^`` and ``$`` match at lines)."""
    rel, pattern = str(check.value["path"]), str(check.value["pattern"])
    path = _inside(check, rel)
    if isinstance(path, Verdict):
        return path
    try:
        compiled = saferegex.compile(pattern, saferegex.MULTILINE)
    except RegexError as exc:
        return Verdict.failed_with_error(f"invalid regex {quote(pattern)}: {exc}")
    text = _read(path, rel)
    if isinstance(text, Verdict):
        return text
    try:
        found = saferegex.search(compiled, text)
    except RegexTimeoutError as exc:
        return Verdict.failed_with_error(f"{rel}: {exc}")
    if found is None:
        return Verdict.of(
            False, f"{rel} has no match for /{clip(pattern, 60)}/; it has {_glimpse(text)}"
        )
    return Verdict.of(
        True,
        f"{rel} matches /{clip(pattern, 60)}/ at line {_line_of(text, found.start())}: "
        f"{quote(found.group(0), 60)}",
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _glimpse(text: str) -> str:
    if not text:
        return "no content (0 bytes)"
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    return f"{lines} line{'s' if lines != 1 else ''} starting {quote(text, 60)}"


# -- commands ---------------------------------------------------------------------------------


def check_run(value: Any) -> str | None:
    """The stdout pattern compiles."""
    if not isinstance(value, Mapping) or "stdout" not in value:
        return None
    pattern = str(value["stdout"])
    if is_template(pattern):
        return None
    try:
        saferegex.compile(pattern, saferegex.MULTILINE)
    except RegexError as exc:
        return f"invalid stdout regex {quote(pattern)}: {exc}"
    return None


@assertion("run-command", value=_RUN, check_value=check_run)
def run_command(check: Check) -> Verdict:
    """A command run in the workspace exits with ``exit_code`` (default 0).

    The value is a command line (run by ``/bin/sh``) or ``{command, exit_code, stdout,
    timeout}``, where ``stdout`` is a regex the output must match and ``timeout`` (default
    30 s) kills a command that hangs; a killed command fails.
    """
    from skilleval.agent.workspace import run_in

    root = _workspace(check)
    if isinstance(root, Verdict):
        return root
    spec: Mapping[str, Any] = check.value if isinstance(check.value, Mapping) else {}
    command = spec.get("command", check.value)
    command = command if isinstance(command, str) else [str(c) for c in command]
    label = command if isinstance(command, str) else " ".join(command)
    expected = int(spec.get("exit_code", 0))
    timeout = float(spec.get("timeout", RUN_TIMEOUT_S))
    done = run_in(root, command, timeout_s=timeout, max_output=RUN_MAX_OUTPUT)
    shown = f"`{clip(label, 60)}`"
    if done.error is not None:
        return Verdict.of(False, f"{shown} could not run: {done.error}")
    if done.timed_out:
        return Verdict.of(False, f"{shown} timed out after {timeout:g} s and was killed")
    if done.exit_code != expected:
        failure = done.describe_failure(timeout)
        return Verdict.of(False, f"{shown} {failure}; expected exit code {expected}")
    said = f"{shown} exited with {done.exit_code}"
    pattern = spec.get("stdout")
    if pattern is None:
        return Verdict.of(True, said)
    try:
        found = saferegex.search(str(pattern), done.stdout, saferegex.MULTILINE)
    except RegexError as exc:
        return Verdict.failed_with_error(f"invalid stdout regex {quote(str(pattern))}: {exc}")
    except RegexTimeoutError as exc:
        return Verdict.failed_with_error(f"stdout: {exc}")
    if found is None:
        return Verdict.of(
            False,
            f"{said} but its stdout has no match for /{clip(str(pattern), 60)}/: "
            f"{quote(done.stdout, 60)}",
        )
    return Verdict.of(True, f"{said}; stdout matches /{clip(str(pattern), 60)}/")
