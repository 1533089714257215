"""Syntax errors worded for people: control characters, and libyaml's errors with hints."""

from __future__ import annotations

import functools
import re
from typing import Any

from skilleval.errors import Diagnostic, Location
from skilleval.userfile import position

__all__ = ["control_characters", "control_pattern", "shift", "yaml_error"]

_ASCII_CONTROL = re.compile("[^\t\n\r\x20-\x7e]")
"""The characters YAML does not allow, as found in ASCII text."""


@functools.cache
def _control() -> re.Pattern[str]:
    return re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def control_pattern(text: str) -> re.Pattern[str]:
    """The characters YAML does not allow, as a pattern to search ``text`` with.

    Both patterns find the same characters in ASCII text; the full one, whose wide ranges
    take milliseconds to compile, is compiled only for text that needs it.
    """
    return _ASCII_CONTROL if text.isascii() else _control()


_MAX_CONTROL_REPORTS = 20


def control_characters(text: str, display: str, line_offset: int) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    control = control_pattern(text)
    for found in control.finditer(text):
        if len(out) == _MAX_CONTROL_REPORTS:
            rest = len(control.findall(text, found.start()))
            line, col = position(text, found.start())
            out.append(
                Diagnostic(
                    Location(display, line + line_offset, col),
                    f"{rest} more control characters from here on; is this a text file?",
                )
            )
            break
        line, col = position(text, found.start())
        code = ord(found.group())
        out.append(
            Diagnostic(
                Location(display, line + line_offset, col),
                f"control character U+{code:04X} is not allowed in YAML; remove it, or write "
                f'it as "\\x{code:02x}" inside a double-quoted string'
                if code < 0x100
                else f"character U+{code:04X} is not allowed in YAML; remove it",
            )
        )
    return out


def _key_column(line: str) -> tuple[str, int] | None:
    """The key a line starts (after any ``- ``) and its 0-based column, if it holds one."""
    found = re.match(r"^([ ]*(?:-[ ]+)*)([^\s#:][^:]*?):(?:\s|$)", line)
    if found is None:
        return None
    return found.group(2).strip(), len(found.group(1))


def _indent_hint(lines: list[str], line_no: int) -> str:
    """For a line that breaks a block: the key above it, and how the two are indented."""
    if line_no >= len(lines):
        return ""
    here = _key_column(lines[line_no])
    if here is None:
        return ""
    name, col = here
    for above in range(line_no - 1, -1, -1):
        text = lines[above]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        found = _key_column(text)
        if found is None:
            continue
        key, kcol = found
        if kcol == col:
            break
        return (
            f"; '{name}' starts in column {col + 1} but the key above it, '{key}' "
            f"(line {above + 1}), starts in column {kcol + 1}: keys of one mapping must "
            "line up, so indent it like the key it belongs with"
        )
    return ""


def _colon_hint(lines: list[str], mark: Any) -> str:
    """For "mapping values are not allowed here": an unquoted value holding ``: ``."""
    if mark.line >= len(lines):
        return ""
    line = lines[mark.line]
    head = _key_column(line)
    if head is None:
        return ""
    key, col = head
    value_start = line.index(":", col) + 1
    if value_start >= mark.column:
        return ""
    value = line[value_start:].strip()
    if value[:1] in ("'", '"', "[", "{", "|", ">"):
        return ""
    quoted = value.replace("'", "''")
    return (
        f"; the value of '{key}' holds ': ', which YAML reads as the start of a new key: "
        f"quote the whole value ({key}: '{quoted[:60]}')"
    )


def yaml_error(exc: Exception, display: str, text: str) -> Diagnostic:
    from ruamel.yaml.error import MarkedYAMLError  # lazy: start-up time

    if not isinstance(exc, MarkedYAMLError) or exc.problem_mark is None:
        return Diagnostic(Location(display, 1, 1), f"invalid YAML: {exc}")
    mark = exc.problem_mark
    where = Location(display, mark.line + 1, mark.column + 1)
    problem = (exc.problem or "invalid YAML").strip()
    lines = text.splitlines()
    bad_line = lines[mark.line] if mark.line < len(lines) else ""
    if "\\t" in repr(problem) or (
        mark.column < len(bad_line) and bad_line[mark.column : mark.column + 1] == "\t"
    ):
        return Diagnostic(where, "tab character in indentation; YAML indents with spaces only")
    context = f" {exc.context}" if exc.context else ""
    start = exc.context_mark
    if start is not None and problem == "found unexpected end of stream":
        # An unclosed quote or bracket: the useful position is where it was opened.
        opened = Location(display, start.line + 1, start.column + 1)
        return Diagnostic(opened, f"invalid YAML: this is never closed ({problem}{context})")
    hint = ""
    if problem.startswith("mapping values are not allowed"):
        hint = _colon_hint(lines, mark) or _indent_hint(lines, mark.line)
    elif problem.startswith(("expected <block end>", "did not find expected key")):
        hint = _indent_hint(lines, mark.line)
    return Diagnostic(where, f"invalid YAML: {problem}{context}{hint}")


def shift(diag: Diagnostic, lines: int) -> Diagnostic:
    w = diag.where
    return Diagnostic(Location(w.path, w.line + lines, w.col), diag.message)
