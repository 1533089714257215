"""``$ref`` inside a suite file: promptfoo's ``assertionTemplates`` and their uses.

A mapping ``{$ref: "#/assertionTemplates/NAME"}`` stands for the node that JSON Pointer names
in the same file; keys written beside ``$ref`` override the target's. Each use is replaced by
a copy before the schema check, and is recorded as an alias of its target, so that a mistake
inside a template is reported where the template is written. References to other files and
cycles are refused.
"""

from __future__ import annotations

import copy
from typing import Any

from skilleval.errors import Diagnostic, DiagnosticsError
from skilleval.suite.yamlio import Document, PathKey

_MAX_HOPS = 32
"""How many references may lead to one another before it counts as a cycle."""
MAX_NODES = 250_000
"""The most nodes the copies made for references may hold together (as YAML aliases)."""


def dereference(doc: Document) -> tuple[list[Diagnostic], list[PathKey]]:
    """Replace every ``$ref`` in ``doc.data`` in place.

    Raises:
        DiagnosticsError: The copies would pass :data:`MAX_NODES`; the load stops there.

    Returns:
        The problems, positioned, and the paths of the references left unresolved (the
        schema will find them wrong too; that says nothing more).
    """
    problems: list[Diagnostic] = []
    failed: list[PathKey] = []
    if "$ref" not in doc.text or not _has_ref(doc.data):
        return problems, failed
    # Each path to visit, with the templates whose copies it lies inside: a reference to one
    # of those is a template used inside itself, which would expand forever.
    todo: list[tuple[PathKey, frozenset[PathKey]]] = [((), frozenset())]
    budget = MAX_NODES
    while todo:
        path, inside = todo.pop()
        node = _get(doc.data, path)
        if isinstance(node, dict) and "$ref" in node and path:
            resolved = _resolve(doc, path, node, problems, 0)
            if resolved is not None and resolved[0] in inside:
                ref = node["$ref"]
                problems.append(
                    Diagnostic(doc.at([*path, "$ref"]), f"$ref '{ref}' is used inside itself")
                )
                resolved = None
            if resolved is None:
                failed.append(path)
                continue
            target, value = resolved
            budget -= _size(value)
            if budget < 0:
                # Nothing after this is worth checking: the load stops here, at once.
                raise DiagnosticsError(
                    [
                        *problems,
                        Diagnostic(
                            doc.at([*path, "$ref"]),
                            f"the copies `$ref` makes pass {MAX_NODES:,} nodes (templates that"
                            " use each other many times over); use fewer references",
                        ),
                    ]
                )
            doc.aliases[path] = target
            _set(doc, path, value)
            node = value
            inside = inside | {target}
        if isinstance(node, dict):
            todo.extend(
                ((*path, k), inside) for k in node if not (path == () and k == "assertionTemplates")
            )
        elif isinstance(node, list):
            todo.extend(((*path, i), inside) for i in range(len(node)))
    return problems, failed


def _resolve(
    doc: Document, path: PathKey, node: dict[str, Any], problems: list[Diagnostic], hops: int
) -> tuple[PathKey, Any] | None:
    ref = node["$ref"]
    if not isinstance(ref, str) or not ref.startswith("#/"):
        problems.append(
            Diagnostic(
                doc.at([*path, "$ref"]),
                "only references inside this file are supported"
                " (`$ref: '#/assertionTemplates/NAME'`); copy the other file's content here",
            )
        )
        return None
    found, target = _lookup(doc.data, tuple(_unescape(part) for part in ref[2:].split("/")))
    if found is _MISSING:
        templates = doc.data.get("assertionTemplates") if isinstance(doc.data, dict) else None
        names = ", ".join(sorted(templates)) if isinstance(templates, dict) else ""
        known = f"; assertionTemplates has {names}" if names else ""
        where = doc.at([*path, "$ref"])
        problems.append(Diagnostic(where, f"$ref '{ref}' names nothing in this file{known}"))
        return None
    if hops >= _MAX_HOPS or target == path[: len(target)]:
        problems.append(Diagnostic(doc.at([*path, "$ref"]), f"$ref '{ref}' refers back to itself"))
        return None
    value = copy.deepcopy(found)
    if isinstance(value, dict) and "$ref" in value:
        inner = _resolve(doc, target, value, problems, hops + 1)
        if inner is None:
            return None
        target, value = inner
    extra = {k: v for k, v in node.items() if k != "$ref"}
    if extra:
        if not isinstance(value, dict):
            what = type(value).__name__
            problems.append(
                Diagnostic(
                    doc.at([*path, "$ref"]), f"$ref '{ref}' names a {what}: nothing to add keys to"
                )
            )
            return None
        value = {**value, **copy.deepcopy(extra)}
    return target, value


_MISSING = object()


def _lookup(data: Any, path: tuple[str, ...]) -> tuple[Any, PathKey]:
    """The node a pointer names and its path as a Document keys it (list indexes as ints)."""
    node, real = data, list[str | int]()
    for part in path:
        if isinstance(node, dict) and part in node:
            node = node[part]
            real.append(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
            real.append(int(part))
        else:
            return _MISSING, ()
    return node, tuple(real)


def _get(data: Any, path: PathKey) -> Any:
    node = data
    for part in path:
        node = node[part]
    return node


def _set(doc: Document, path: PathKey, value: Any) -> None:
    parent = _get(doc.data, path[:-1])
    parent[path[-1]] = value


def _unescape(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def _size(data: Any) -> int:
    """How many nodes ``data`` holds."""
    count, todo = 0, [data]
    while todo:
        node = todo.pop()
        count += 1
        if isinstance(node, dict):
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return count


def _has_ref(data: Any) -> bool:
    todo = [data]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if "$ref" in node:
                return True
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return False
