"""The one writer of results: ``results.json``, the lines of ``results.jsonl``, ``-o x.json``."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skilleval.results.codec import encode
from skilleval.results.model import Run
from skilleval.results.records import Record

if TYPE_CHECKING:
    from skilleval.results.matrix import Matrix


def run_json(run: Run) -> dict[str, Any]:
    """The run as plain JSON data, in the key order of ``results.schema.json``."""
    data: dict[str, Any] = encode(run)
    return data


def record_json(record: Record) -> dict[str, Any]:
    """One record as plain JSON data: one line of ``results.jsonl``."""
    data: dict[str, Any] = encode(record)
    return data


def dumps_run(run: Run) -> str:
    """``results.json``'s text: indented, UTF-8 as is, with a final newline."""
    return "".join(iter_run(run))


_RECORDS = '\n  "records": []'
"""The records' place in the indented document written without them."""


def iter_run(run: Run, texts: Sequence[str | None] | None = None) -> Iterator[str]:
    """``results.json``'s text in pieces, the same characters as one ``json.dumps``.

    The document around the records is one piece, then each record is one, so that a run
    of any size is written without ever holding its whole text (or all of its records as
    JSON data) at once. ``texts``, when given, holds per record its text as written here
    already (:func:`record_text`, or that text read back from a part's ``results.json``), or None to encode that record: ``merge`` copies its parts' records so.
    """
    if not run.records:
        yield json.dumps(run_json(run), ensure_ascii=False, indent=2) + "\n"
        return
    frame = json.dumps(run_json(dataclasses.replace(run, records=())), ensure_ascii=False, indent=2)
    at = frame.index(_RECORDS) + len(_RECORDS) - 2
    yield frame[:at] + "[\n"
    last = len(run.records) - 1
    for i, record in enumerate(run.records):
        text = texts[i] if texts is not None else None
        yield (record_text(record) if text is None else text) + (",\n" if i < last else "\n")
    yield "  ]" + frame[at + 2 :] + "\n"


def record_text(record: Record) -> str:
    """One record as ``results.json`` holds it: indented, in the records' list."""
    text = json.dumps(record_json(record), ensure_ascii=False, indent=2)
    return "    " + text.replace("\n", "\n    ")


def record_line(record: Record) -> str:
    """One line of ``results.jsonl``, newline included."""
    return json.dumps(record_json(record), ensure_ascii=False) + "\n"


def dumps_records(run: Run) -> str:
    """Every record of the run, one JSON line each."""
    return "".join(iter_records(run))


def iter_records(run: Run) -> Iterator[str]:
    """Every record of the run, one JSON line at a time."""
    return (record_line(r) for r in run.records)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` so that a reader never sees half of it.

    Raises:
        OSError: The file or its temporary sibling could not be written.
    """
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def matrix_json(matrix: Matrix) -> dict[str, Any]:
    """A side-by-side run as plain JSON data."""
    data: dict[str, Any] = encode(matrix)
    return data


def dumps_matrix(matrix: Matrix) -> str:
    """``matrix.json``'s text, written as ``results.json`` is."""
    return json.dumps(matrix_json(matrix), ensure_ascii=False, indent=2) + "\n"
