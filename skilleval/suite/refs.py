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

from skilleval.errors import Diagnostic
from skilleval.suite.yamlio import Document, PathKey

_MAX_HOPS = 32
"""How many references may lead to one another before it counts as a cycle."""


def dereference(doc: Document) -> tuple[list[Diagnostic], list[PathKey]]:
    """Replace every ``$ref`` in ``doc.data`` in place.

    Returns:
        The problems, positioned, and the paths of the references left unresolved (the
        schema will find them wrong too; that says nothing more).
    """
    problems: list[Diagnostic] = []
    failed: list[PathKey] = []
    if "$ref" not in doc.text or not _has_ref(doc.data):
        return problems, failed
    todo: list[PathKey] = [()]
    while todo:
        path = todo.pop()
        node = _get(doc.data, path)
        if isinstance(node, dict) and "$ref" in node and path:
            resolved = _resolve(doc, path, node, problems, 0)
            if resolved is None:
                failed.append(path)
                continue
            target, value = resolved
            doc.aliases[path] = target
            _set(doc, path, value)
            node = value
        if isinstance(node, dict):
            todo.extend((*path, k) for k in node if not (path == () and k == "assertionTemplates"))
        elif isinstance(node, list):
            todo.extend((*path, i) for i in range(len(node)))
    return problems, failed


def _resolve(
    doc: Document, path: PathKey, node: dict[str, Any], problems: list[Diagnostic], hops: int
) -> tuple[PathKey, Any] | None:
    ref = node["$ref"]
    where = doc.at([*path, "$ref"])
    if not isinstance(ref, str) or not ref.startswith("#/"):
        problems.append(
            Diagnostic(
                where,
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
        problems.append(Diagnostic(where, f"$ref '{ref}' names nothing in this file{known}"))
        return None
    if hops >= _MAX_HOPS or target == path[: len(target)]:
        problems.append(Diagnostic(where, f"$ref '{ref}' refers back to itself"))
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
            problems.append(
                Diagnostic(
                    where, f"$ref '{ref}' names a {type(value).__name__}: nothing to add keys to"
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
