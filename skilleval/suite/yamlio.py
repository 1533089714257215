"""Read YAML, JSON and JSONL files into plain data that remembers where each node was.

The YAML is parsed by libyaml (the C parser that ships with ruamel.yaml) into a stream of
events, and plain Python values are built from those events here, so that every node's line
and column come from its event's mark. The positions live in a side table keyed by the
node's path (a tuple of keys and indexes), so that any later check can point at
``file:line:col`` without carrying parser types around.

Building from events is also where hostile input is refused: nesting deeper than
:data:`MAX_DEPTH`, more than :data:`MAX_NODES` nodes once aliases are expanded (a "billion
laughs"), a document over :data:`MAX_YAML_BYTES`, and tags or merge keys that make no
sense each give one positioned diagnostic. Mistakes that leave the rest readable (a
duplicate key, a control character, an unknown tag, an integer too long to convert) are
collected in :attr:`Document.problems` and the parse goes on, so that one ``validate``
reports them all.

This module is the entry point; the parts live in :mod:`~skilleval.suite.yamldoc` (the
document and its limits), :mod:`~skilleval.suite.yamlbuild` (the event-driven builder),
:mod:`~skilleval.suite.yamlscalars` (the core schema's scalars) and
:mod:`~skilleval.suite.yamlsyntax` (control characters and syntax errors in plain words).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from skilleval.errors import Diagnostic, Location, SuiteError
from skilleval.suite.yamlbuild import build
from skilleval.suite.yamldoc import MAX_DEPTH, MAX_NODES, MAX_YAML_BYTES, Document, PathKey
from skilleval.suite.yamlsyntax import control_characters, control_pattern, shift, yaml_error
from skilleval.userfile import display_path, read_text, size_text

__all__ = [
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_YAML_BYTES",
    "Document",
    "PathKey",
    "display_path",
    "load_jsonl",
    "load_yaml",
    "parse_yaml",
    "read_text",
]

_PURE_REPARSE_CHARS = 4 * 1024 * 1024
"""Up to this size, what libyaml refuses is read again by ruamel's Python parser."""


# --- entry points -----------------------------------------------------------------------------


def parse_yaml(
    text: str,
    display: str,
    file: Path | None = None,
    *,
    line_offset: int = 0,
    strict: bool = True,
) -> Document:
    """Parse YAML (or JSON, a subset) text into a :class:`Document`.

    With ``strict`` (the default) any problem raises; otherwise problems that leave the rest
    readable are returned in :attr:`Document.problems` for the caller to report with its own.

    Raises:
        SuiteError: A syntax error or a limit, or (when ``strict``) any problem.
    """
    from _ruamel_yaml import CParser  # type: ignore[import-not-found]  # libyaml, no stubs  # lazy: start-up time

    doc = Document(None, display, file, text)
    if len(text) > MAX_YAML_BYTES:
        raise SuiteError(
            [
                Diagnostic(
                    Location(display, 1 + line_offset, 1),
                    f"document too large ({size_text(len(text))}); YAML and JSON documents "
                    f"are limited to {size_text(MAX_YAML_BYTES)}",
                )
            ]
        )
    controls = control_characters(text, display, line_offset)
    clean = control_pattern(text).sub(" ", text) if controls else text
    doc.problems.extend(controls)
    parser = CParser(clean)
    try:
        try:
            doc.data = build(clean, display, doc, line_offset, parser.get_event)
        except SuiteError:
            raise
        except Exception as fast_error:  # libyaml raises several unrelated classes
            if len(clean) > _PURE_REPARSE_CHARS:
                raise SuiteError(
                    [*doc.problems, shift(yaml_error(fast_error, display, clean), line_offset)]
                ) from None
            # libyaml reads YAML 1.1, which refuses a few things 1.2 allows (a `:` inside a
            # plain scalar in a flow collection: `{x: file://a.txt}`); ruamel's Python
            # parser reads 1.2, and words real syntax errors as users have seen them.
            from ruamel.yaml import YAML  # lazy: start-up time

            doc = Document(None, display, file, text, problems=list(controls))
            events = YAML(typ="rt", pure=True).parse(clean)
            doc.data = build(clean, display, doc, line_offset, events.__next__)
    except SuiteError:
        raise
    except Exception as exc:  # ruamel raises many unrelated classes for bad input
        diag = shift(yaml_error(exc, display, clean), line_offset)
        raise SuiteError([*doc.problems, diag]) from None
    finally:
        parser.dispose()
    if strict and doc.problems:
        raise SuiteError(doc.problems)
    return doc


def yaml_data(text: str) -> Any:
    """The data of YAML text written inside a suite (an assertion's value), not a file.

    Raises:
        SuiteError: As :func:`parse_yaml`.
    """
    return parse_yaml(text, "<value>").data


def load_yaml(path: Path, *, where: Location | None = None, strict: bool = True) -> Document:
    """Read and parse one YAML or JSON file (see :func:`parse_yaml` for ``strict``)."""
    display = display_path(path)
    return parse_yaml(read_text(path, display, where=where), display, path, strict=strict)


def _depth(data: Any) -> int:
    """How deeply lists and mappings nest in ``data`` (iteratively: no recursion)."""
    deepest, todo = 0, [(data, 1)]
    while todo:
        node, depth = todo.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            deepest = max(deepest, depth)
            if depth > MAX_DEPTH:
                return depth
            todo.extend((item, depth + 1) for item in node)
    return deepest


def load_jsonl(path: Path, *, where: Location | None = None) -> Iterator[Document]:
    """Yield one document per non-blank line of a JSONL file."""
    display = display_path(path)
    text = read_text(path, display, where=where)
    for number, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):
            # Not plain JSON: let the YAML parser find the problem and say where it is.
            yield parse_yaml(line, display, path, line_offset=number)
            continue
        if _depth(data) > MAX_DEPTH:
            yield parse_yaml(line, display, path, line_offset=number)
            continue
        yield _json_document(data, display, path, line, number + 1)


def _json_document(data: Any, display: str, file: Path, text: str, line: int) -> Document:
    """A JSONL line parsed by the fast JSON parser; every node is placed at the line's start."""
    doc = Document(data, display, file, text)
    doc.values[()] = Location(display, line, 1)
    return doc
