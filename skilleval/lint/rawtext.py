"""Checks on the files as written, which need no loaded suite.

Two mistakes disappear once YAML is parsed, so they can only be found in the text:

* a rubric written as a plain scalar stops at the first `` #``, which YAML reads as the
  start of a comment; the judge then grades a rubric cut short and nothing warns anyone;
* a ``file://`` reference to a file that does not exist. The loader stops at the first
  unreadable part of a suite, so lint scans every reference itself and reports them all.
"""

from __future__ import annotations

import glob
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from skilleval.errors import Location, SkillevalError
from skilleval.lint.checks import MISSING_FILE, RUBRIC_CUT_BY_COMMENT
from skilleval.lint.finding import Finding
from skilleval.lint.view import MODEL_TYPES, LintView
from skilleval.plugins.markers import lint_check
from skilleval.suite.yamlio import Document, PathKey, display_path, load_yaml
from skilleval.userfile import lookup_problem
from skilleval.util import fileref
from skilleval.util.fileref import PREFIX, is_ref
from skilleval.util.walk import GlobTooLarge, bounded_glob

RUBRIC_KEYS = frozenset({"rubric", "rubricPrompt"})
"""Keys whose string values are rubric text wherever they appear."""

_COMMENT = re.compile(r"\s#")


def rubric_cuts(doc: Document) -> Iterator[Finding]:
    """Rubric strings that an unquoted `` #`` cut short (SE402)."""
    lines = doc.text.splitlines()
    for value, where in _rubric_strings(doc):
        found = _comment_after(lines, where, value)
        if found is None:
            continue
        line, col, dropped = found
        kept = " ".join(value.split())
        yield Finding(
            RUBRIC_CUT_BY_COMMENT,
            Location(where.path, line, col),
            f"the judge only sees {_clip(kept)!r}: YAML reads ' #{_clip(dropped)}' as a "
            "comment; quote the whole rubric, or move the comment to a line of its own",
        )


def _clip(text: str, size: int = 60) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


def _rubric_strings(doc: Document) -> Iterator[tuple[str, Location]]:
    def walk(node: Any, path: PathKey) -> Iterator[tuple[str, Location]]:
        if isinstance(node, dict):
            kind = node.get("type")
            judged = isinstance(kind, str) and kind.removeprefix("not-") in MODEL_TYPES
            for key, child in node.items():
                at = (*path, key)
                if (judged and key == "value") or key in RUBRIC_KEYS:
                    yield from _strings(child, at)
                else:
                    yield from walk(child, at)
        elif isinstance(node, list):
            for i, child in enumerate(node):
                yield from walk(child, (*path, i))

    def _strings(node: Any, path: PathKey) -> Iterator[tuple[str, Location]]:
        if isinstance(node, str):
            loc = doc.values.get(path)
            if loc is not None:
                yield node, loc
        elif isinstance(node, list):
            for i, child in enumerate(node):
                yield from _strings(child, (*path, i))

    yield from walk(doc.data, ())


def _comment_after(lines: list[str], where: Location, value: str) -> tuple[int, int, str] | None:
    """The line, column and text of a comment that ended the plain scalar at ``where``."""
    if where.line < 1 or where.line > len(lines):
        return None
    first = lines[where.line - 1]
    start = where.col - 1
    if start >= len(first) or first[start] in "\"'|>[{":
        # Quoted, block and flow scalars keep their `#`: it is not a comment there.
        return None
    covered = 0
    target = len(" ".join(value.split()))
    row, segment = where.line, first[start:]
    while True:
        match = _COMMENT.search(segment)
        if match is not None:
            col = (start if row == where.line else len(lines[row - 1]) - len(segment)) + 1
            return row, col + match.start() + 1, segment[match.end() :].rstrip()
        covered += len(segment.strip()) + 1
        # A plain scalar may continue on more-indented lines; stop once the value is covered.
        if covered > target or row >= len(lines):
            return None
        row += 1
        raw = lines[row - 1]
        if raw.lstrip().startswith("#"):
            return None
        segment = raw.lstrip()


@lint_check(MISSING_FILE, RUBRIC_CUT_BY_COMMENT, name="files")
def check(view: LintView) -> Iterator[Finding]:
    """SE401 and SE402 in the suite file as written, and SE402 in the YAML test files it reads."""
    if view.doc is None:
        return
    yield from missing_files(view.doc, view.base or view.path.parent)
    yield from rubric_cuts(view.doc)
    for file in view.yaml_files:
        if file.resolve() != view.path.resolve():
            yield from _cuts_in(file)


def _cuts_in(file: Path) -> Iterator[Finding]:
    try:
        doc = load_yaml(file)
    except SkillevalError:
        return
    yield from rubric_cuts(doc)


def missing_files(doc: Document, base: Path) -> Iterator[Finding]:
    """Every ``file://`` reference, ``skill:`` and ``plugins:`` entry that names nothing (SE401)."""
    data = doc.data if isinstance(doc.data, dict) else {}
    for key in ("skill", "skills", "plugins"):
        raw = data.get(key)
        entries: list[tuple[str, tuple[str | int, ...]]] = (
            [(raw, (key,))] if isinstance(raw, str) else []
        )
        if isinstance(raw, list):
            entries = [(v, (key, i)) for i, v in enumerate(raw) if isinstance(v, str)]
        for value, at in entries:
            target = base / value
            problem = lookup_problem(target)
            if problem is not None:
                yield Finding(MISSING_FILE, doc.at(at), problem)
                continue
            if key != "plugins" and target.is_dir():
                target = target / "SKILL.md"
            if not target.exists():
                what = "plugin folder" if key == "plugins" else "skill"
                yield Finding(
                    MISSING_FILE,
                    doc.at(at),
                    f"{what} not found: {value} (looked for {display_path(target)})",
                )
    for value, where in _refs(doc):
        raw = fileref.parse(value).path
        target = fileref.resolve(raw, base)
        problem = lookup_problem(target)
        if problem is not None:
            yield Finding(MISSING_FILE, where, problem)
        elif glob.has_magic(raw):
            try:
                matched = bool(bounded_glob(str(target)))
            except GlobTooLarge:
                matched = True  # too wide a glob is the loader's error to give
            if not matched:
                yield Finding(MISSING_FILE, where, f"no file matches {value}")
        elif not target.exists():
            yield Finding(
                MISSING_FILE,
                where,
                f"file not found: {value} (looked for {display_path(target)})",
            )


def _refs(doc: Document) -> Iterator[tuple[str, Location]]:
    def walk(node: Any, path: PathKey) -> Iterator[tuple[str, Location]]:
        if isinstance(node, dict):
            for key, child in node.items():
                yield from walk(child, (*path, key))
        elif isinstance(node, list):
            for i, child in enumerate(node):
                yield from walk(child, (*path, i))
        elif is_ref(node) and len(node) > len(PREFIX):
            yield node, doc.values.get(path) or doc.at(path)

    yield from walk(doc.data, ())
