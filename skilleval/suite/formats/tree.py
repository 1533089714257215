"""A suite built from another tool's file, each part remembering where it was written.

A reader of a foreign format (skill-creator's ``evals.json``, a Vally spec …) builds plain
data in skilleval's suite shape, wrapping a node in :class:`At` when it comes from a place in
the file. :func:`to_document` unwraps the tree into a :class:`~skilleval.suite.yamlio.Document`
whose position table points into the original file, so every later check of the suite reports
``file:line:col`` in the file the user wrote, JSON or YAML.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skilleval.errors import Location
from skilleval.suite.yamldoc import Document, PathKey
from skilleval.util.frozen import frozen


@frozen
class At:
    """A value and where it was written (the key's position too, for a mapping entry)."""

    value: Any
    where: Location
    key: Location | None = None
    source: str = ""
    """For ``import``: a comment saying where this part came from (empty: none)."""


def to_document(tree: Any, display: str, file: Path | None = None) -> Document:
    """The plain data of ``tree`` with the positions its :class:`At` nodes carry."""
    doc = Document(None, display, file)
    doc.data = _unwrap(tree, (), doc)
    if () not in doc.values:
        doc.values[()] = Location(display, 1, 1)
    return doc


def sources(tree: Any, path: PathKey = ()) -> dict[PathKey, str]:
    """Each path whose node carries a ``source`` comment, with that comment."""
    out: dict[PathKey, str] = {}
    todo: list[tuple[Any, PathKey]] = [(tree, path)]
    while todo:
        node, at = todo.pop()
        if isinstance(node, At):
            if node.source:
                out[at] = node.source
            node = node.value
        if isinstance(node, Mapping):
            todo.extend((v, (*at, k)) for k, v in node.items())
        elif isinstance(node, list):
            todo.extend((v, (*at, i)) for i, v in enumerate(node))
    return out


def _unwrap(node: Any, path: PathKey, doc: Document) -> Any:
    if isinstance(node, At):
        doc.values[path] = node.where
        if node.key is not None:
            doc.keys[path] = node.key
        node = node.value
    if isinstance(node, Mapping):
        return {k: _unwrap(v, (*path, k), doc) for k, v in node.items()}
    if isinstance(node, list):
        return [_unwrap(v, (*path, i), doc) for i, v in enumerate(node)]
    return node


def plain(node: Any) -> Any:
    """``node`` without its positions."""
    if isinstance(node, At):
        node = node.value
    if isinstance(node, Mapping):
        return {k: plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [plain(v) for v in node]
    return node
