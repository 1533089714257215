"""Checks on an agent's workspace: files it left, and commands run there after it finished.

They read :attr:`~skilleval.api.Check.workspace`, the folder the agent worked in.
A test that runs no agent loop has none, and these checks give an ``error`` verdict there.
Every path is relative to the workspace and resolved inside it
(:func:`~skilleval.util.workpath.resolve_inside`): one that leads out is an error, not a fail.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.builtin._common import clip, quote
from skilleval.errors import PathEscape, RegexError, RegexTimeoutError
from skilleval.sandbox import saferegex
from skilleval.sandbox.process import run_in
from skilleval.suite.template import is_template
from skilleval.util.workpath import path_problem, resolve_inside

_PATH: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "description": "A path relative to the workspace.",
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


def _workspace(check: Check) -> Path | Verdict:
    if check.workspace is None:
        return Verdict.errored("this test has no workspace")
    return check.workspace


def _inside(check: Check, rel: str) -> Path | Verdict:
    root = _workspace(check)
    if isinstance(root, Verdict):
        return root
    try:
        return resolve_inside(root, rel)
    except PathEscape as exc:
        return Verdict.errored(str(exc))


# -- files ------------------------------------------------------------------------------------


def _path_of(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("path"), str):
        return str(value["path"])
    return None


def check_path(value: Any) -> str | None:
    """The path cannot leave the workspace (judged from its text; symlinks are checked later)."""
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
        return Verdict.errored(f"cannot read {rel}: {exc.strerror or exc}")
    return raw.decode("utf-8", errors="replace")


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


@assertion("file-contains", value=_FILE_TEXT, check_value=check_path)
def file_contains(check: Check) -> Verdict:
    """The file at ``path`` contains ``value`` (case-sensitive)."""
    return _contains(check, wanted=True)


@assertion("file-not-contains", value=_FILE_TEXT, check_value=check_path)
def file_not_contains(check: Check) -> Verdict:
    """The file at ``path`` does not contain ``value``; a missing file contains nothing."""
    return _contains(check, wanted=False)


def _contains(check: Check, *, wanted: bool) -> Verdict:
    """Whether the file at ``path`` holds ``value``, judged for file-contains (``wanted``) or
    file-not-contains, where a missing file passes."""
    rel, needle = str(check.value["path"]), _text(check.value["value"])
    path = _inside(check, rel)
    if isinstance(path, Verdict):
        return path
    if not wanted and not path.exists():
        return Verdict.of(True, f"{rel} does not exist, so it does not contain {quote(needle)}")
    text = _read(path, rel)
    if isinstance(text, Verdict):
        return text
    at = text.find(needle)
    if at >= 0:
        return Verdict.of(wanted, f"{rel} contains {quote(needle)} at line {_line_of(text, at)}")
    if wanted:
        return Verdict.of(False, f"{rel} lacks {quote(needle)}; it has {_glimpse(text)}")
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
        return Verdict.errored(f"invalid regex {quote(pattern)}: {exc}")
    text = _read(path, rel)
    if isinstance(text, Verdict):
        return text
    try:
        found = saferegex.search(compiled, text)
    except RegexTimeoutError as exc:
        return Verdict.errored(f"{rel}: {exc}")
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
        # A program that is not installed here says nothing about the reply.
        return Verdict.errored(f"{shown} could not run: {done.error}")
    if done.timed_out:
        return Verdict.of(False, f"{shown} timed out after {timeout:g} s and was killed")
    if isinstance(command, str) and done.exit_code == 127 and expected != 127:
        return Verdict.errored(
            f"{shown} could not run: the shell found no such command "
            f"({quote(done.stderr.strip(), 80)})"
        )
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
        return Verdict.errored(f"invalid stdout regex {quote(str(pattern))}: {exc}")
    except RegexTimeoutError as exc:
        return Verdict.errored(f"stdout: {exc}")
    if found is None:
        return Verdict.of(
            False,
            f"{said} but its stdout has no match for /{clip(str(pattern), 60)}/: "
            f"{quote(done.stdout, 60)}",
        )
    return Verdict.of(True, f"{said}; stdout matches /{clip(str(pattern), 60)}/")
