"""Relative paths rewritten for another folder: the cases' and the copied settings'.

A path written in a suite is relative to the folder of the file that writes it. When cases
are written elsewhere (``-o`` in another folder, a case from a tests file in a subfolder),
each ``file://`` reference, and each plain string where the suite format takes a path and a
file or folder is there, is rewritten to mean the same file from the new folder.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Any

from skilleval.util.fileref import PREFIX, is_ref, parse

TOP_PATHS = frozenset({"skill", "skills", "plugins", "prompts"})
"""Top-level keys whose strings (or list items) may be paths."""
MODEL_KEYS = frozenset({"model", "judge"})
MODEL_LISTS = frozenset({"models", "providers", "targets"})


def path_slot(at: tuple[str | int, ...]) -> bool:
    """Whether a plain string at ``at`` may be a path relative to the suite's folder (it is
    rewritten only when a file or folder is there). ``file://`` strings are paths anywhere."""
    if not at:
        return False
    head, rest = at[0], at[1:]
    if head in TOP_PATHS:
        return len(rest) <= 1
    if head in MODEL_KEYS:
        return rest in ((), ("path",))
    if head in MODEL_LISTS:
        return len(rest) == 1 or (len(rest) == 2 and rest[1] in ("path", "id"))
    return len(at) >= 4 and at[-4] == "environment" and at[-3] == "files" and at[-1] == "src"


class Rebase:
    """Relative paths written from folder ``old``, rewritten to be read from folder ``new``."""

    def __init__(self, old: Path, new: Path) -> None:
        self.old, self.new = old.resolve(), new.resolve()
        self.same = self.old == self.new

    def path(self, written: str) -> str:
        """``written`` for the new folder: relative, or absolute when the two folders share
        nothing but the root (a path climbing to ``/`` and down again says nothing)."""
        if self.same or not written or Path(written).is_absolute():
            return written
        if Path(os.path.commonpath([self.old, self.new])) == Path(self.old.anchor):
            return Path(os.path.normpath(self.old / written)).as_posix()
        return Path(os.path.relpath(self.old / written, self.new)).as_posix()

    def ref(self, written: str) -> str:
        """A ``file://`` reference, its ``:function`` kept."""
        found = parse(written)
        moved = self.path(found.path)
        return f"{PREFIX}{moved}" + (f":{found.function}" if found.function else "")

    def maybe(self, written: str) -> str:
        """A plain string that is a path when a file or folder is there (``llama:`` kept)."""
        if self.same or "\n" in written or "://" in written or len(written) > 1024:
            return written
        head, sep, rest = written.partition(":")
        prefix, target = (f"{head}:", rest) if sep and head == "llama" else ("", written)
        if not target or Path(target).is_absolute():
            return written
        exists = (self.old / target).exists()
        if not exists and any(c in target for c in "*?["):
            exists = bool(glob.glob(glob.escape(str(self.old)) + "/" + target, recursive=True))
        return prefix + self.path(target) if exists else written

    def walk(self, node: Any, at: tuple[str | int, ...] = ()) -> Any:
        """``node`` (found at ``at`` in the suite) with its paths rewritten, in place for
        ruamel's containers."""
        if isinstance(node, dict):
            for k in list(node):
                node[k] = self.walk(node[k], (*at, str(k)))
            return node
        if isinstance(node, list):
            for i, value in enumerate(node):
                node[i] = self.walk(value, (*at, i))
            return node
        if not isinstance(node, str):
            return node
        if is_ref(node):
            moved = self.ref(node)
        elif path_slot(at):
            moved = self.maybe(node)
        else:
            return node
        if moved == node:
            return node
        # A quoted scalar keeps its quotes: ruamel's string classes take the new text.
        return moved if type(node) is str else type(node)(moved)
