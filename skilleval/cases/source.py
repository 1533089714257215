"""What ``skilleval cases`` reads: a run's records, streamed, and the suite the run came from.

A run directory streams every record to ``results.jsonl``; that file is read a line at a time
and only the records that say something went wrong are kept, so a run of any size costs
memory in proportion to its failures. A results file given on its own (no run directory
around it) is read whole by the results loader.

The suite is the one the run's manifest (``run.json``) names, by absolute path; when it has
moved, ``--suite`` gives it, and the message says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from skilleval.errors import Location, SkillevalError, UsageError
from skilleval.results.codec import decode
from skilleval.results.load import JSONL_NAME, load_run, resolve_run
from skilleval.results.records import Record
from skilleval.suite.yamldoc import Document, PathKey
from skilleval.suite.yamlio import load_yaml
from skilleval.util.frozen import frozen

Warn = Callable[[str], None]

MANIFEST = "run.json"


@frozen
class RunSource:
    """One run to read."""

    root: Path
    """The run directory (the folder of a results file given on its own)."""
    run_id: str
    results: Path
    """``results.jsonl`` when there is one, else the ``results.json`` given."""
    suite: Path | None
    """The suite the run recorded; None when it recorded none."""
    settings: Mapping[str, Any] | None = None
    """The settings that shaped the run's answers (model, judge, decoding …), from its
    manifest; None when it has none."""


def open_run(path: Path) -> RunSource:
    """The run at ``path`` (anything ``report`` accepts) and the suite it recorded.

    Raises:
        UsageError: Nothing readable is there.
    """
    found = resolve_run(path)
    root = found.parent
    stream = root / JSONL_NAME
    results = stream if stream.is_file() else found
    run_id = found.resolve().parent.name  # runs/latest is a link: name the run itself
    saved = _manifest(root)
    settings = saved.get("settings") if saved is not None else None
    return RunSource(
        root,
        run_id,
        results,
        _recorded_suite(saved, found),
        settings if isinstance(settings, dict) else None,
    )


def _manifest(root: Path) -> dict[str, Any] | None:
    manifest = root / MANIFEST
    if not manifest.is_file():
        return None
    try:
        saved = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return saved if isinstance(saved, dict) else None


def _recorded_suite(saved: Mapping[str, Any] | None, found: Path) -> Path | None:
    if saved is not None and isinstance(saved.get("suite"), str):
        return Path(saved["suite"])
    if found.name.endswith(".json"):
        try:
            data = json.loads(found.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return None
        suite = data.get("suite") if isinstance(data, dict) else None
        path = suite.get("path") if isinstance(suite, dict) else None
        if isinstance(path, str) and path:
            return Path(path)
    return None


def suite_path(source: RunSource, given: Path | None) -> Path:
    """The suite to read: ``given`` (``--suite``), else the one the run recorded.

    Raises:
        UsageError: The run names no suite, or the one it names is not there any more.
    """
    if given is not None:
        return given
    if source.suite is None:
        raise UsageError(
            f"{source.root} does not say which suite it ran (no {MANIFEST}): "
            "give the suite with --suite FILE"
        )
    if not source.suite.exists():
        raise UsageError(
            f"the suite run {source.run_id} came from, {source.suite}, is not there (moved or "
            "deleted?): give it with --suite FILE"
        )
    return source.suite


def wanted(record: Record) -> bool:
    """Whether a record says something went wrong: a misroute, a failure or an error."""
    if record.status != "pass":
        return True
    trigger = record.trigger
    return trigger is not None and (trigger.correct is False or trigger.error is not None)


def _wanted_json(data: Mapping[str, Any]) -> bool:
    """:func:`wanted` on a record still in JSON, so that passing records are never decoded."""
    if data.get("status") != "pass":
        return True
    trigger = data.get("trigger")
    return isinstance(trigger, dict) and (
        trigger.get("correct") is False or trigger.get("error") is not None
    )


def failing_records(source: RunSource, warn: Warn) -> list[Record]:
    """Every record of the run that went wrong, in the order the run wrote them.

    A record written twice (a resumed run) counts as its last copy.

    Raises:
        UsageError: The file cannot be read.
        InvalidInputError: A results.json that is not one.
    """
    if source.results.name != JSONL_NAME:
        return [r for r in load_run(source.results, on_warning=warn).records if wanted(r)]
    kept: dict[tuple[Any, Any, Any], Record | None] = {}
    for key, record in _stream(source.results, warn):
        if record is not None:
            kept.pop(key, None)  # a later copy moves to the end, as it was written
            kept[key] = record
        elif key in kept:
            kept[key] = None
    return [r for r in kept.values() if r is not None]


def _stream(path: Path, warn: Warn) -> Iterator[tuple[tuple[Any, Any, Any], Record | None]]:
    """Each line's key, and its record when it went wrong (None for a passing one, which is
    only read as JSON: decoding every record of a large run would cost most of the time)."""
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if not isinstance(data, dict):
                    raise ValueError("not a JSON object")
                key = (data.get("test_id"), data.get("arm"), data.get("trial"))
                yield key, decode(Record, data) if _wanted_json(data) else None
            except (ValueError, RecursionError) as exc:
                text = str(exc) or type(exc).__name__
                warn(f"{path}:{number}: skipped a corrupt line ({text[:80]})")


class Written:
    """The suite's files as written: the node at a position, for copying it as it is."""

    def __init__(self, *known: Document, tests: Mapping[str, Any] | None = None) -> None:
        self._files: dict[str, tuple[Document, dict[tuple[int, int], PathKey]] | None] = {}
        for doc in known:  # already read: the suite itself
            self._files[doc.display] = (doc, _positions(doc))
        self.tests = tests
        """For another tool's eval file: each test's node in the suite it reads as, by test
        id. Its own file is never read back: its nodes are in that tool's terms."""

    def test_node(self, test_id: str, where: Location) -> Any:
        """The test as written, or None when it cannot be found."""
        if self.tests is not None:
            return self.tests.get(test_id)
        found = self.node_at(where)
        return found[0] if found is not None else None

    def assert_node(self, test_id: str, index: int | None, where: Location) -> Any:
        """The test's own assertion ``index`` (None: one from ``defaultTest``), as written."""
        if self.tests is not None:
            node = self.tests.get(test_id)
            asserts = node.get("assert") if isinstance(node, Mapping) else None
            if index is None or not isinstance(asserts, list) or index >= len(asserts):
                return None
            return asserts[index]
        found = self.node_at(where)
        return found[0] if found is not None else None

    def node_at(self, where: Location) -> tuple[Any, Document] | None:
        """The value written at ``where`` and its document; None when it cannot be found
        (a CSV or JSONL tests file, a file that changed)."""
        index = self._index(where.path)
        if index is None:
            return None
        doc, positions = index
        path = positions.get((where.line, where.col))
        if path is None:
            return None
        node: Any = doc.data
        for step in path:
            try:
                node = node[step]
            except (KeyError, IndexError, TypeError):
                return None
        return node, doc

    def _index(self, shown: str) -> tuple[Document, dict[tuple[int, int], PathKey]] | None:
        if shown not in self._files:
            entry = None
            file = Path(shown)
            if file.suffix.lower() in (".yaml", ".yml", ".json") and file.is_file():
                try:
                    doc = load_yaml(file)
                except SkillevalError:
                    doc = None
                if doc is not None:
                    entry = (doc, _positions(doc))
            self._files[shown] = entry
        return self._files[shown]


def _positions(doc: Document) -> dict[tuple[int, int], PathKey]:
    """Each node's path by where it is written (the outermost node at a position)."""
    positions: dict[tuple[int, int], PathKey] = {}
    for key, loc in doc.values.items():
        positions.setdefault((loc.line, loc.col), key)
    return positions
