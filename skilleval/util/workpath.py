"""Paths inside an agent's workspace: the one rule that keeps them there.

A path inside a workspace is always relative. One that leads out of it, lexically (``../``,
an absolute path) or through a symlink, is refused. The config layer checks the text of
``dest:`` paths with :func:`path_problem` when a suite loads; the workspace copies and every
file check resolve through :func:`resolve_inside` at run time.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from skilleval.errors import PathEscape

__all__ = ["PathEscape", "path_problem", "resolve_inside"]

_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
NAME_MAX = 255
"""The longest file name, in bytes, the common file systems take."""


def path_problem(rel: str) -> str | None:
    """Why ``rel`` can never be a workspace path, judged from its text alone; None if it can."""
    if not rel.strip():
        return "path is empty"
    if "\0" in rel:
        return f"{rel!r} holds a NUL character, which no file name can"
    try:
        encoded = os.fsencode(rel)
    except UnicodeError:
        return f"{rel!r} cannot be written as a file name on this system"
    if any(len(part) > NAME_MAX for part in encoded.split(b"/")):
        return f"{rel!r} has a part longer than {NAME_MAX} bytes, more than a file name may be"
    if rel.startswith(("/", "\\", "~")) or _DRIVE.match(rel):
        return f"{rel!r} is absolute; workspace paths are relative to the workspace"
    depth = 0
    for part in PurePosixPath(rel.replace("\\", "/")).parts:
        depth += -1 if part == ".." else 0 if part == "." else 1
        if depth < 0:
            return f"{rel!r} leads outside the workspace"
    return None


def resolve_inside(root: Path, rel: str) -> Path:
    """The real path of ``rel`` inside the workspace ``root``.

    Symlinks are followed as far as the path exists, so a link that points out of the
    workspace is caught even when the text of ``rel`` looks harmless.

    Raises:
        PathEscape: ``rel`` is absolute, climbs above ``root``, passes through a symlink
            that leads outside it, or is a symlink loop.
    """
    problem = path_problem(rel)
    if problem is not None:
        raise PathEscape(problem)
    real_root = root.resolve()
    try:
        target = (real_root / rel).resolve()
    except (RuntimeError, OSError):
        # Python 3.11 raises RuntimeError for a symlink loop, later versions OSError.
        raise PathEscape(f"{rel!r} cannot be resolved: it is a symlink loop") from None
    except ValueError as exc:
        # A NUL byte in the text.
        raise PathEscape(f"{rel!r} cannot be a path: {exc}") from None
    if target != real_root and real_root not in target.parents:
        raise PathEscape(f"{rel!r} leads outside the workspace through a symlink")
    return target
