"""``skilleval cases`` end to end: read the run and its suite, collect, check, describe."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skilleval.cases import overlap
from skilleval.cases.collect import TAG, Case, Note, collect
from skilleval.cases.overlap import Flag
from skilleval.cases.paths import Rebase
from skilleval.cases.source import (
    RunSource,
    Warn,
    Written,
    failing_records,
    open_run,
    suite_path,
)
from skilleval.lint.view import from_suite
from skilleval.runner.resume import settings
from skilleval.suite import formats
from skilleval.suite.load import Overrides, load_suite
from skilleval.suite.model import Suite
from skilleval.suite.yamldoc import Document
from skilleval.suite.yamlio import load_yaml

CASES_VERSION = 1
"""Version of the ``--json`` document."""


@dataclass
class Made:
    """What one ``skilleval cases`` found."""

    run: RunSource
    suite_file: Path
    suite: Suite
    doc: Document
    """The suite file as read (for another tool's file, the suite it stands for)."""
    foreign: bool
    """The suite is another tool's eval file (or a skill folder), not a skilleval suite."""
    cases: list[Case]
    notes: list[Note]
    flags: dict[str, list[Flag]]
    changed: list[str]
    """Settings the run used other than the suite's (given on its command line)."""


def make_cases(run: Path, given_suite: Path | None, arms: Sequence[str], warn: Warn) -> Made:
    """The candidate cases and notes of the run at ``run``.

    Raises:
        UsageError: No run there, or its suite is not where the run says (and not given).
        InvalidInputError: A results file that is not one.
        DiagnosticsError: The suite does not load.
    """
    source = open_run(run)
    records = failing_records(source, warn)  # a damaged results file is named first
    path = suite_path(source, given_suite)
    suite, _ = load_suite(path, Overrides())
    if path.is_dir():
        translated = formats.read_folder(path)
        doc, foreign = translated.doc, True
    else:
        doc = load_yaml(path)
        translated_file = formats.read_file(path, doc)
        foreign = translated_file is not None
        if translated_file is not None:
            doc = translated_file.doc
    written = Written(tests=_translated_tests(suite, doc)) if foreign else Written(doc)
    found = collect(records, suite, source.run_id, list(arms) or None, written)
    view = from_suite(suite, doc, sorted(suite.files))
    flags = overlap.check(found.cases, view.tests, suite.skill)
    changed = _changed_settings(source, suite)
    return Made(source, path, suite, doc, foreign, found.cases, found.notes, flags, changed)


def _translated_tests(suite: Suite, doc: Document) -> dict[str, Any]:
    """Each test's node in the suite another tool's file reads as, by test id: those files
    have no ``prompts:`` list, so the suite's tests are the document's, in order."""
    nodes = doc.data.get("tests") if isinstance(doc.data, dict) else None
    if not isinstance(nodes, list) or len(nodes) != len(suite.tests):
        return {}
    return {test.id: node for test, node in zip(suite.tests, nodes, strict=True)}


def _changed_settings(source: RunSource, suite: Suite) -> list[str]:
    """The settings the run used that the suite does not write (``--model`` …)."""
    if source.settings is None:
        return []
    now = settings(suite)
    return [k for k in ("model", "judge", "decoding", "trials") if source.settings.get(k) != now[k]]


def header(made: Made) -> str:
    """The comment above the cases."""
    n = len(made.cases)
    return (
        f"{n} case{'s' if n != 1 else ''} from the failures of run {made.run.run_id} of "
        f"{made.suite.display}, written by `skilleval cases`.\n"
        f"Each is tagged `{TAG}` in its metadata, with the record it came from; its id is "
        "TEST/ARM/TRIAL.\nReview each before keeping it: a failure shows where the "
        "skill or the model falls short, not always a good test."
    ) + (
        f"\nThe run's {', '.join(made.changed)} differed from what the suite writes (set on "
        "the command line): give the same again to see its failures."
        if made.changed
        else ""
    )


def to_json(made: Made, output: Path | None, written: int | None) -> dict[str, Any]:
    """The ``--json`` document; each case's paths as the file it is written to reads them
    (``output``, or the suite's folder when the cases are only printed)."""
    if output is not None:
        folder = output.parent
    else:
        folder = made.suite_file if made.suite_file.is_dir() else made.suite_file.parent
    return {
        "version": CASES_VERSION,
        "run_id": made.run.run_id,
        "run": str(made.run.root),
        "suite": made.suite.display,
        "cases": [
            {
                "id": c.id,
                "kinds": list(c.kinds),
                "source": {**c.origin.to_json(), "where": str(c.source_at)},
                "also": [o.to_json() for o in c.also],
                "why": c.why,
                "flags": [f.to_json() for f in made.flags.get(c.id, ())],
                "test": _jsonable(Rebase(c.base_dir, folder).walk(copy.deepcopy(c.test))),
            }
            for c in made.cases
        ],
        "notes": [n.to_json() for n in made.notes],
        "changed_settings": made.changed,
        "output": None if output is None else {"path": str(output), "tests": written},
    }


def _jsonable(value: Any) -> Any:
    """``value`` with what JSON has no type for (a YAML date) written as text."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
