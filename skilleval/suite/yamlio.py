"""Read YAML, JSON, JSONL and text files into plain data that remembers where each node was.

ruamel's round-trip loader records a line and column for every key and item. We convert
its tree into plain Python values and keep the positions in a side table keyed by the
node's path (a tuple of keys and indexes), so that any later check can point at
``file:line:col`` without carrying ruamel types around.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skilleval.errors import Diagnostic, Location, SuiteError

PathKey = tuple[str | int, ...]


@dataclass(slots=True)
class Document:
    """Plain data from one file, with the position of every node."""

    data: Any
    display: str
    """The file name as shown in messages."""
    file: Path | None = None
    text: str = ""
    values: dict[PathKey, Location] = field(default_factory=dict)
    keys: dict[PathKey, Location] = field(default_factory=dict)
    base: PathKey = ()
    """Where ``data`` sits inside the file (a JSONL line, a list item …)."""

    def at(self, path: Sequence[str | int] = ()) -> Location:
        """The position of the node at ``path``, or of its nearest known ancestor."""
        full = self.base + tuple(path)
        for end in range(len(full), -1, -1):
            loc = self.values.get(full[:end])
            if loc is not None:
                return loc
        return Location(self.display, 1, 1)

    def key_at(self, path: Sequence[str | int]) -> Location:
        """The position of the key that holds ``path`` (its value's position otherwise)."""
        full = self.base + tuple(path)
        return self.keys.get(full) or self.at(path)

    def sub(self, path: Sequence[str | int]) -> Document:
        """A view of the node at ``path`` that shares this file's positions."""
        node = self.data
        for part in path:
            node = node[part]
        return Document(
            node,
            self.display,
            self.file,
            self.text,
            self.values,
            self.keys,
            self.base + tuple(path),
        )


def display_path(path: Path) -> str:
    """A path as users want to read it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def read_text(path: Path, display: str | None = None, *, where: Location | None = None) -> str:
    """Read a UTF-8 file, turning every failure into a positioned diagnostic."""
    shown = display or display_path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SuiteError(
            [Diagnostic(where or Location(shown), f"file not found: {shown}")]
        ) from None
    except IsADirectoryError:
        raise SuiteError(
            [Diagnostic(where or Location(shown), f"expected a file, found a directory: {shown}")]
        ) from None
    except OSError as exc:
        raise SuiteError(
            [Diagnostic(where or Location(shown), f"cannot read {shown}: {exc.strerror}")]
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        bad = raw[exc.start : exc.start + 1].hex()
        raise SuiteError(
            [
                Diagnostic(
                    Location(shown, line, col),
                    f"file is not valid UTF-8 (byte 0x{bad}); save it as UTF-8",
                )
            ]
        ) from None
    return text.removeprefix("\ufeff")


def _yaml_error(exc: Exception, display: str, text: str) -> Diagnostic:
    from ruamel.yaml.error import MarkedYAMLError

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
    if problem.startswith("found duplicate key"):
        key = problem.split('"')[1] if '"' in problem else "?"
        first = exc.context_mark
        first_at = f" (first defined at line {first.line + 1})" if first is not None else ""
        return Diagnostic(where, f"duplicate key '{key}'{first_at}")
    context = f" {exc.context}" if exc.context else ""
    start = exc.context_mark
    if start is not None and problem == "found unexpected end of stream":
        # An unclosed quote or bracket: the useful position is where it was opened.
        opened = Location(display, start.line + 1, start.column + 1)
        return Diagnostic(opened, f"invalid YAML: this is never closed ({problem}{context})")
    return Diagnostic(where, f"invalid YAML: {problem}{context}")


def _plain(node: Any, path: PathKey, doc: Document) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(node, CommentedMap):
        out: dict[str, Any] = {}
        doc.values.setdefault(path, Location(doc.display, node.lc.line + 1, node.lc.col + 1))
        for key in node:
            kline, kcol = node.lc.key(key)
            vline, vcol = node.lc.value(key)
            skey = key if isinstance(key, str) else str(_scalar(key))
            doc.keys[(*path, skey)] = Location(doc.display, kline + 1, kcol + 1)
            doc.values[(*path, skey)] = Location(doc.display, vline + 1, vcol + 1)
            out[skey] = _plain(node[key], (*path, skey), doc)
        return out
    if isinstance(node, CommentedSeq):
        doc.values.setdefault(path, Location(doc.display, node.lc.line + 1, node.lc.col + 1))
        items = []
        for i, item in enumerate(node):
            line, col = node.lc.item(i)
            doc.values[(*path, i)] = Location(doc.display, line + 1, col + 1)
            items.append(_plain(item, (*path, i), doc))
        return items
    return _scalar(node)


def _scalar(node: Any) -> Any:
    if node is None or isinstance(node, bool):
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    if isinstance(node, (dt.date, dt.datetime)):
        return node.isoformat()
    return node


def parse_yaml(
    text: str, display: str, file: Path | None = None, *, line_offset: int = 0
) -> Document:
    """Parse YAML (or JSON, a subset) text; duplicate keys and syntax errors are diagnostics."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    doc = Document(None, display, file, text)
    try:
        node = yaml.load(text)
    except Exception as exc:  # ruamel raises many unrelated classes for bad input
        diag = _yaml_error(exc, display, text)
        if line_offset:
            w = diag.where
            diag = Diagnostic(Location(w.path, w.line + line_offset, w.col), diag.message)
        raise SuiteError([diag]) from None
    doc.data = _plain(node, (), doc)
    if line_offset:
        doc.values = {
            k: Location(v.path, v.line + line_offset, v.col) for k, v in doc.values.items()
        }
        doc.keys = {k: Location(v.path, v.line + line_offset, v.col) for k, v in doc.keys.items()}
    return doc


def load_yaml(path: Path, *, where: Location | None = None) -> Document:
    """Read and parse one YAML or JSON file."""
    display = display_path(path)
    return parse_yaml(read_text(path, display, where=where), display, path)


def load_jsonl(path: Path, *, where: Location | None = None) -> Iterator[Document]:
    """Yield one document per non-blank line of a JSONL file."""
    display = display_path(path)
    text = read_text(path, display, where=where)
    for number, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            # Not plain JSON: let the YAML parser find the problem and say where it is.
            yield parse_yaml(line, display, path, line_offset=number)
            continue
        yield _json_document(data, display, path, line, number + 1)


def _json_document(data: Any, display: str, file: Path, text: str, line: int) -> Document:
    """A JSONL line parsed by the fast JSON parser; every node is placed at the line's start."""
    doc = Document(data, display, file, text)
    doc.values[()] = Location(display, line, 1)
    return doc
