"""The :class:`Document` a YAML, JSON or JSONL file is read into, and the limits on it.

A document is plain data plus a side table of positions keyed by each node's path (a tuple
of keys and indexes), so that any later check can point at ``file:line:col``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skilleval.errors import Diagnostic, Location

__all__ = ["MAX_DEPTH", "MAX_NODES", "MAX_YAML_BYTES", "Document", "PathKey"]

PathKey = tuple[str | int, ...]

MAX_DEPTH = 100
"""The deepest nesting of mappings and lists accepted in a YAML or JSON document."""
MAX_NODES = 1_000_000
"""The most nodes a document may hold once every alias is expanded."""
MAX_YAML_BYTES = 16 * 1024 * 1024
"""The largest YAML or JSON document parsed."""


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
