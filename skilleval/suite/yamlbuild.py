"""Plain values built from libyaml's events, each node's position taken from its event's mark.

Building from events is where hostile input is refused: nesting deeper than
:data:`~skilleval.suite.yamldoc.MAX_DEPTH` or more than
:data:`~skilleval.suite.yamldoc.MAX_NODES` nodes once aliases are expanded raises
:class:`~skilleval.errors.SuiteError` with that one positioned diagnostic
(after the problems found so far); mistakes that leave the rest readable
(a duplicate key, an unknown tag, a bad merge key) are collected in the document's problems.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from skilleval.errors import Diagnostic, Location, SuiteError
from skilleval.suite.yamldoc import MAX_DEPTH, MAX_NODES, Document, PathKey
from skilleval.suite.yamlscalars import (
    KNOWN_TAGS,
    SPECIAL_FIRST,
    TAG,
    implicit_tag,
    to_float,
    to_int,
    to_timestamp,
)

__all__ = ["build"]


class _Stop(Exception):
    """A limit was hit: building stops with this one diagnostic."""

    def __init__(self, diag: Diagnostic) -> None:
        super().__init__(diag.message)
        self.diag = diag


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
                    if key in top.value or (not event.style and implicit_tag(key) != "str"):
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
                            if first and first not in SPECIAL_FIRST
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
        if tag and tag != "!" and tag != f"{TAG}{kind}":
            shown = tag.replace(TAG, "!!")
            self.problem(
                where,
                f"unsupported YAML tag '{shown}': suites use plain YAML values; remove the tag",
            )

    def scalar(self, event: Any, where: Location) -> Any:
        text: str = event.value
        tag = event.tag
        if tag and tag not in KNOWN_TAGS:
            self.check_tag(tag, "str", where)
            return text
        if tag == "!" or (not tag and not event.implicit[0]):
            return text
        name = tag.removeprefix(TAG) if tag else implicit_tag(text)
        try:
            if name == "str":
                return text
            if name == "null":
                return None
            if name == "bool":
                return text.lower() == "true"
            if name == "int":
                return to_int(text)
            if name == "float":
                return to_float(text)
            if name == "timestamp":
                return to_timestamp(text)
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


def build(text: str, display: str, doc: Document, line_offset: int, get_event: Any) -> Any:
    """The plain value of the one document in ``get_event``'s events; its positions go in ``doc``.

    Raises:
        SuiteError: A limit was hit (the problems found so far, then the limit).
    """
    try:
        return _Builder(text, display, doc, line_offset).run(get_event)
    except _Stop as stop:
        raise SuiteError([*doc.problems, stop.diag]) from None
