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
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skilleval.errors import Diagnostic, Location, SuiteError
from skilleval.userfile import display_path, position, read_text, size_text

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

PathKey = tuple[str | int, ...]

MAX_DEPTH = 100
"""The deepest nesting of mappings and lists accepted in a YAML or JSON document."""
MAX_NODES = 1_000_000
"""The most nodes a document may hold once every alias is expanded."""
MAX_YAML_BYTES = 16 * 1024 * 1024
"""The largest YAML or JSON document parsed."""
_PURE_REPARSE_CHARS = 4 * 1024 * 1024
"""Up to this size, what libyaml refuses is read again by ruamel's Python parser."""


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
    problems: list[Diagnostic] = field(default_factory=list)
    """Mistakes found while reading that did not stop it (duplicate keys, bad tags …)."""
    aliases: dict[PathKey, PathKey] = field(default_factory=dict)
    """Each alias (``*name``) by its path, to the path of its anchor (``&name``)."""

    def at(self, path: Sequence[str | int] = ()) -> Location:
        """The position of the node at ``path``, or of its nearest known ancestor.

        Inside an alias the anchor's own nodes answer, as they are where the text is.
        """
        return self._at(self.base + tuple(path), 0)

    def _at(self, full: PathKey, hops: int) -> Location:
        for end in range(len(full), -1, -1):
            loc = self.values.get(full[:end])
            if loc is None:
                continue
            anchor = self.aliases.get(full[:end]) if end < len(full) else None
            if anchor is not None and hops < MAX_DEPTH:
                return self._at(anchor + full[end:], hops + 1)
            return loc
        return Location(self.display, 1, 1)

    def key_at(self, path: Sequence[str | int]) -> Location:
        """The position of the key that holds ``path`` (its value's position otherwise)."""
        full = self.base + tuple(path)
        found = self.keys.get(full)
        for end in range(len(full) - 1, -1, -1):
            if found is not None:
                break
            anchor = self.aliases.get(full[:end])
            if anchor is not None:
                found = self.keys.get(anchor + full[end:])
                break
        return found or self.at(path)

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
            aliases=self.aliases,
        )


class _Stop(Exception):
    """A limit was hit: building stops with this one diagnostic."""

    def __init__(self, diag: Diagnostic) -> None:
        super().__init__(diag.message)
        self.diag = diag


# --- scalars (the YAML 1.2 core schema, as ruamel's round-trip loader reads it) ---------------

_TAG = "tag:yaml.org,2002:"
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)"
    r"|[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)"
    r"|\.(?:nan|NaN|NAN))$"
)
_TIMESTAMP = re.compile(
    r"^(?:[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?"
    r"(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)$"
)
_KNOWN_TAGS = {
    f"{_TAG}{name}" for name in ("str", "int", "float", "bool", "null", "timestamp", "map", "seq")
} | {"!"}


_SPECIAL_FIRST = frozenset("-+0123456789.~nNtTfF")
"""The first characters of plain scalars that may be something other than a string."""


def _implicit_tag(value: str) -> str:
    first = value[:1]
    if first in "-+0123456789.":
        if _INT.match(value):
            return "int"
        if _FLOAT.match(value):
            return "float"
        if first.isdigit() and _TIMESTAMP.match(value):
            return "timestamp"
        return "str"
    if first in "~nN" and _NULL.match(value):
        return "null"
    if first in "tTfF" and _BOOL.match(value):
        return "bool"
    if value == "":
        return "null"
    return "str"


def _to_int(text: str) -> int:
    value = text.replace("_", "")
    sign = -1 if value.startswith("-") else 1
    value = value.lstrip("+-")
    for prefix, base in (("0b", 2), ("0x", 16), ("0o", 8)):
        if value.startswith(prefix):
            return sign * int(value[2:], base)
    return sign * int(value)


def _to_float(text: str) -> float:
    value = text.replace("_", "").lower()
    if value.lstrip("+-") == ".inf":
        return float("-inf") if value.startswith("-") else float("inf")
    if value == ".nan":
        return float("nan")
    return float(value)


def _to_timestamp(text: str) -> str:
    from ruamel.yaml.constructor import SafeConstructor  # lazy: start-up time
    from ruamel.yaml.nodes import ScalarNode

    stamp = SafeConstructor().construct_yaml_timestamp(ScalarNode(f"{_TAG}timestamp", text))
    return stamp.isoformat() if isinstance(stamp, (dt.date, dt.datetime)) else str(stamp)


# --- building plain values from libyaml's events ---------------------------------------------


@dataclass(slots=True)
class _Frame:
    is_map: bool
    value: Any
    path: PathKey
    where: Location
    anchor: str | None
    size: int = 1
    key: Any = None
    """In a mapping: the key waiting for its value (``_NO_KEY`` when none)."""
    key_at: Location | None = None
    merges: list[tuple[Any, Location]] = field(default_factory=list)


_NO_KEY = object()
_MERGE = object()
_DROP = object()
_HIDDEN = "\0"
"""The path step of nodes outside the data (keys, merge sources, duplicates' values)."""


class _Builder:
    def __init__(self, text: str, display: str, doc: Document, line_offset: int) -> None:
        self.text = text
        self.display = display
        self.doc = doc
        self.line_offset = line_offset
        self.anchors: dict[str, tuple[Any, int, PathKey]] = {}
        self.stack: list[_Frame] = []
        self.nodes = 0
        self.root: Any = None
        self.documents = 0
        self.hidden = False

    def loc(self, mark: Any) -> Location:
        return Location(self.display, mark.line + 1 + self.line_offset, mark.column + 1)

    def problem(self, where: Location, message: str) -> None:
        self.doc.problems.append(Diagnostic(where, message))

    def count(self, n: int, where: Location) -> None:
        self.nodes += n
        if self.nodes > MAX_NODES:
            raise _Stop(
                Diagnostic(
                    where,
                    f"document too large: more than {MAX_NODES:,} nodes once aliases are "
                    "expanded (the node limit; nested aliases, an alias bomb?)",
                )
            )

    def child_path(self) -> PathKey:
        if not self.stack:
            return ()
        top = self.stack[-1]
        if not top.is_map:
            return (*top.path, len(top.value))
        if top.key is _NO_KEY or top.key is _MERGE or top.key is _DROP:
            # A key itself, a merge's source or a duplicate's value: not a node of the data.
            self.hidden = True
            return (*top.path, _HIDDEN)
        return (*top.path, top.key)

    def finish(self) -> None:
        """Forget the positions recorded under paths that are not in the data."""
        if self.hidden:
            doc = self.doc
            doc.values = {k: v for k, v in doc.values.items() if _HIDDEN not in k}
            doc.keys = {k: v for k, v in doc.keys.items() if _HIDDEN not in k}

    def run(self, get_event: Any) -> Any:
        """Build the document from libyaml's events (the hot loop: common cases inlined)."""
        from ruamel.yaml import events as ev  # lazy: start-up time

        scalar_event, alias_event = ev.ScalarEvent, ev.AliasEvent
        map_start, seq_start = ev.MappingStartEvent, ev.SequenceStartEvent
        map_end, seq_end = ev.MappingEndEvent, ev.SequenceEndEvent
        stream_end, doc_start = ev.StreamEndEvent, ev.DocumentStartEvent
        values = self.doc.values
        display, offset = self.display, self.line_offset + 1
        stack = self.stack
        while True:
            event = get_event()
            kind = type(event)
            if kind is scalar_event:
                mark = event.start_mark
                where = Location(display, mark.line + offset, mark.column + 1)
                self.nodes += 1
                if self.nodes > MAX_NODES:
                    self.count(0, where)
                top = stack[-1] if stack else None
                if (
                    top is not None
                    and top.is_map
                    and top.key is _NO_KEY
                    and not event.tag
                    and event.anchor is None
                    and event.value != "<<"
                ):
                    # The common case: a string key in a mapping.
                    key = event.value
                    if key in top.value or (not event.style and _implicit_tag(key) != "str"):
                        self.add(
                            self.scalar(event, where), where, 1, self.child_path(), merge=False
                        )
                        continue
                    top.size += 1
                    top.key, top.key_at = key, where
                    self.doc.keys[(*top.path, key)] = where
                    continue
                if top is not None and not event.tag and event.anchor is None:
                    # The common case: a value in a mapping or a list.
                    text = event.value
                    if event.style:
                        value: Any = text
                    else:
                        first = text[:1]
                        value = (
                            text
                            if first and first not in _SPECIAL_FIRST
                            else self.scalar(event, where)
                        )
                    if not top.is_map:
                        values[(*top.path, len(top.value))] = where
                        top.value.append(value)
                        top.size += 1
                        continue
                    key = top.key
                    if isinstance(key, str):
                        top.key = _NO_KEY
                        top.size += 1
                        path = (*top.path, key)
                        top.value[key] = value
                        values[path] = where
                        continue
                    path = self.child_path()
                    values[path] = where
                    self.add(value, where, 1, path, merge=self.is_merge_key(event))
                    continue
                value = self.scalar(event, where)
                path = self.child_path()
                values[path] = where
                if event.anchor:
                    self.anchors[event.anchor] = (value, 1, path)
                self.add(value, where, 1, path, merge=self.is_merge_key(event))
            elif kind is map_end or kind is seq_end:
                frame = stack.pop()
                if frame.merges:
                    self.apply_merges(frame)
                if frame.anchor:
                    self.anchors[frame.anchor] = (frame.value, frame.size, frame.path)
                self.add(frame.value, frame.where, frame.size, frame.path, merge=False)
            elif kind is map_start or kind is seq_start:
                mark = event.start_mark
                where = Location(display, mark.line + offset, mark.column + 1)
                if len(stack) >= MAX_DEPTH:
                    raise _Stop(
                        Diagnostic(
                            where,
                            f"nesting too deep: more than {MAX_DEPTH} levels of mappings and lists",
                        )
                    )
                self.count(1, where)
                is_map = kind is map_start
                if event.tag:
                    self.check_tag(event.tag, "map" if is_map else "seq", where)
                path = self.child_path()
                values[path] = where
                frame = _Frame(is_map, {} if is_map else [], path, where, event.anchor)
                frame.key = _NO_KEY
                stack.append(frame)
            elif kind is alias_event:
                where = self.loc(event.start_mark)
                found = self.anchors.get(event.anchor)
                if found is None:
                    self.problem(
                        where,
                        f"unknown alias '*{event.anchor}': define the anchor "
                        f"'&{event.anchor}' before it is used",
                    )
                    value, size = None, 1
                else:
                    value, size, anchor_path = found
                    self.doc.aliases[self.child_path()] = anchor_path
                self.count(size, where)
                path = self.child_path()
                values[path] = where
                self.add(value, where, size, path, merge=False, alias=event.anchor)
            elif kind is doc_start:
                self.documents += 1
                if self.documents > 1:
                    raise _Stop(
                        Diagnostic(
                            self.loc(event.start_mark),
                            "a second YAML document (after a `---` line): a file holds one",
                        )
                    )
            elif kind is stream_end:
                self.finish()
                return self.root

    def is_merge_key(self, event: Any) -> bool:
        top = self.stack[-1] if self.stack else None
        return (
            top is not None
            and top.is_map
            and top.key is _NO_KEY
            and event.value == "<<"
            and event.implicit[0]
            and not event.tag
        )

    def check_tag(self, tag: str | None, kind: str, where: Location) -> None:
        if tag and tag != "!" and tag != f"{_TAG}{kind}":
            shown = tag.replace(_TAG, "!!")
            self.problem(
                where,
                f"unsupported YAML tag '{shown}': suites use plain YAML values; remove the tag",
            )

    def scalar(self, event: Any, where: Location) -> Any:
        text: str = event.value
        tag = event.tag
        if tag and tag not in _KNOWN_TAGS:
            self.check_tag(tag, "str", where)
            return text
        if tag == "!" or (not tag and not event.implicit[0]):
            return text
        name = tag.removeprefix(_TAG) if tag else _implicit_tag(text)
        try:
            if name == "str":
                return text
            if name == "null":
                return None
            if name == "bool":
                return text.lower() == "true"
            if name == "int":
                return _to_int(text)
            if name == "float":
                return _to_float(text)
            if name == "timestamp":
                return _to_timestamp(text)
        except ValueError as exc:
            if "digits" in str(exc):
                self.problem(
                    where,
                    f"integer too long ({len(text)} digits; Python converts up to 4300): "
                    "quote it to keep it as text",
                )
            else:
                self.problem(where, f"'{text[:40]}' is not a valid !!{name}")
            return text
        self.check_tag(tag, "str", where)
        return text

    def add(
        self,
        value: Any,
        where: Location,
        size: int,
        path: PathKey,
        *,
        merge: bool,
        alias: str | None = None,
    ) -> None:
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        top.size += size
        if not top.is_map:
            top.value.append(value)
            return
        if top.key is _NO_KEY:
            if merge:
                top.key, top.key_at = _MERGE, where
                return
            key = value if isinstance(value, str) else str(value)
            if key in top.value:
                first = self.doc.keys.get((*top.path, key))
                line = f" (first defined at line {first.line})" if first else ""
                self.problem(where, f"duplicate key '{key}'{line}")
                top.key, top.key_at = _DROP, where
                return
            top.key, top.key_at = key, where
            self.doc.keys[(*top.path, key)] = where
            return
        key = top.key
        top.key = _NO_KEY
        if key is _DROP:
            return
        if key is _MERGE:
            sources = value if isinstance(value, list) and alias is None else [value]
            for source in sources:
                if source is None:
                    continue  # an unknown alias, already reported (or an empty `<<:`)
                if isinstance(source, dict):
                    top.merges.append((source, where))
                else:
                    self.problem(
                        where,
                        "a merge key `<<` takes a mapping or a list of mappings "
                        "(such as `<<: *base`)",
                    )
            return
        top.value[key] = value
        self.doc.values[(*top.path, key)] = where

    def apply_merges(self, frame: _Frame) -> None:
        out: dict[str, Any] = frame.value
        for source, where in frame.merges:
            for key, value in source.items():
                if key not in out:
                    out[key] = value
                    self.doc.keys[(*frame.path, key)] = where
                    self.doc.values[(*frame.path, key)] = where


# --- syntax errors ----------------------------------------------------------------------------

_CONTROL = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


_MAX_CONTROL_REPORTS = 20


def _control_characters(text: str, display: str, line_offset: int) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for found in _CONTROL.finditer(text):
        if len(out) == _MAX_CONTROL_REPORTS:
            rest = len(_CONTROL.findall(text, found.start()))
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


def _yaml_error(exc: Exception, display: str, text: str) -> Diagnostic:
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


def _shift(diag: Diagnostic, lines: int) -> Diagnostic:
    w = diag.where
    return Diagnostic(Location(w.path, w.line + lines, w.col), diag.message)


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
    controls = _control_characters(text, display, line_offset)
    clean = _CONTROL.sub(" ", text) if controls else text
    doc.problems.extend(controls)
    parser = CParser(clean)
    try:
        try:
            doc.data = _Builder(clean, display, doc, line_offset).run(parser.get_event)
        except _Stop:
            raise
        except Exception as fast_error:  # libyaml raises several unrelated classes
            if len(clean) > _PURE_REPARSE_CHARS:
                raise SuiteError(
                    [*doc.problems, _shift(_yaml_error(fast_error, display, clean), line_offset)]
                ) from None
            # libyaml reads YAML 1.1, which refuses a few things 1.2 allows (a `:` inside a
            # plain scalar in a flow collection: `{x: file://a.txt}`); ruamel's Python
            # parser reads 1.2, and words real syntax errors as users have seen them.
            from ruamel.yaml import YAML  # lazy: start-up time

            doc = Document(None, display, file, text, problems=list(controls))
            events = YAML(typ="rt", pure=True).parse(clean)
            doc.data = _Builder(clean, display, doc, line_offset).run(events.__next__)
    except _Stop as stop:
        raise SuiteError([*doc.problems, stop.diag]) from None
    except SuiteError:
        raise
    except Exception as exc:  # ruamel raises many unrelated classes for bad input
        diag = _shift(_yaml_error(exc, display, clean), line_offset)
        raise SuiteError([*doc.problems, diag]) from None
    finally:
        parser.dispose()
    if strict and doc.problems:
        raise SuiteError(doc.problems)
    return doc


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
