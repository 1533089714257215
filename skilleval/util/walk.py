"""A ``file://`` glob that always ends: bounded, and blind to symlink loops.

:func:`glob.glob` with ``recursive=True`` follows symlinks to folders under ``**``, so a
folder holding two links to ``.`` makes its walk grow without end, and ``file:///**`` walks
the whole disk. :func:`bounded_glob` matches the same patterns (``*``, ``?``, ``[...]`` in any
part, ``**`` for any depth; names starting with ``.`` only when the pattern part does) with
two differences: ``**`` never descends into a symlinked folder (as :mod:`pathlib`'s ``**``
does not), and the walk stops with :class:`GlobTooLarge` once it has looked at
:data:`MAX_SCANNED` entries or found :data:`MAX_MATCHES` matches.
"""

from __future__ import annotations

import fnmatch
import glob
import os

from skilleval.errors import SkillevalError

__all__ = ["MAX_MATCHES", "MAX_SCANNED", "GlobTooLarge", "bounded_glob"]

MAX_SCANNED = 100_000
"""Folder entries one glob may look at."""
MAX_MATCHES = 10_000
"""Files one glob may name."""


class GlobTooLarge(SkillevalError):
    """The glob looked at too many entries, or matched too many; the message says which."""


def bounded_glob(pattern: str) -> list[str]:
    """The paths ``pattern`` matches, in no particular order.

    Raises:
        GlobTooLarge: It looked at more than :data:`MAX_SCANNED` entries or matched more than
            :data:`MAX_MATCHES` paths.
    """
    head, parts = _split(pattern)
    found: list[str] = []
    seen: set[str] = set()
    scanned = 0
    todo: list[tuple[str, int]] = [(head, 0)]
    visited: set[tuple[str, int]] = set()
    while todo:
        folder, index = todo.pop()
        if (folder, index) in visited:
            continue
        visited.add((folder, index))
        if index == len(parts):
            if folder not in seen and os.path.lexists(folder or "."):
                seen.add(folder)
                found.append(folder)
                if len(found) > MAX_MATCHES:
                    raise GlobTooLarge(f"it matches more than {MAX_MATCHES:,} paths")
            continue
        part = parts[index]
        if not glob.has_magic(part):
            path = os.path.join(folder, part)
            if index == len(parts) - 1 or os.path.isdir(path):
                todo.append((path, index + 1))
            continue
        try:
            with os.scandir(folder or ".") as entries:
                listed = list(entries)
        except OSError:
            continue
        scanned += len(listed)
        if scanned > MAX_SCANNED:
            raise GlobTooLarge(f"it looks at more than {MAX_SCANNED:,} files and folders")
        last = index == len(parts) - 1
        if part == "**":
            # Zero folders deep, then one more for each real (not symlinked) folder.
            todo.append((folder, index + 1))
            for entry in listed:
                if entry.name.startswith("."):
                    continue
                if _is_real_dir(entry):
                    todo.append((os.path.join(folder, entry.name), index))
                elif last:
                    todo.append((os.path.join(folder, entry.name), index + 1))
            continue
        for entry in listed:
            if entry.name.startswith(".") and not part.startswith("."):
                continue
            if not fnmatch.fnmatchcase(entry.name, part):
                continue
            if last or _is_dir(entry):
                todo.append((os.path.join(folder, entry.name), index + 1))
    return found


def _split(pattern: str) -> tuple[str, list[str]]:
    """The leading parts without wildcards (a path), and the parts from the first one on."""
    parts = pattern.split(os.sep)
    head_parts: list[str] = []
    while parts and not glob.has_magic(parts[0]):
        head_parts.append(parts.pop(0))
    head = os.sep.join(head_parts)
    if pattern.startswith(os.sep) and not head:
        head = os.sep
    # Repeated `**` parts match what one does.
    rest: list[str] = []
    for part in parts:
        if part == "" or (part == "**" and rest[-1:] == ["**"]):
            continue
        rest.append(part)
    return head, rest


def _is_real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False
