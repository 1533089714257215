"""The records of ``merge``'s parts: read and checked once, written out again from the parts'
own bytes without holding their text.

Each line of a part's ``results.jsonl`` is decoded into a record (the statistics need every
record) and otherwise remembered only by where it lies in its file and a fingerprint of its
bytes. A record's text in the part's ``results.json`` is remembered the same way, and only
when it holds the same data as the record's line. Writing the merged run reads each piece
back and uses it only while its fingerprint still matches; a piece that changed since it was
checked is encoded again from its record, as a whole run writes it.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, overload

from skilleval.errors import StorageError, UsageError
from skilleval.results.codec import decode
from skilleval.results.records import Record
from skilleval.results.write import record_line
from skilleval.util.scrub import without_surrogates

Key = tuple[str, str, int]
"""A record's test id, arm and trial."""

Piece = tuple[int, int, int, int]
"""Where a checked piece of a part's file lies: the file's number in :class:`PartFiles`, its
offset and length in bytes, and the hash of its bytes when it was checked."""


class PartFiles:
    """The parts' files, kept open to read checked pieces back."""

    def __init__(self) -> None:
        self._files: list[IO[bytes]] = []

    def __enter__(self) -> PartFiles:
        return self

    def __exit__(self, *_: object) -> None:
        for fh in self._files:
            with contextlib.suppress(OSError):
                fh.close()
        self._files.clear()

    def add(self, path: Path) -> int:
        """Open ``path``; its number for :data:`Piece` s."""
        self._files.append(path.open("rb"))
        return len(self._files) - 1

    def read(self, piece: Piece) -> bytes | None:
        """The piece's bytes, or None when they are no longer the bytes that were checked."""
        source, offset, length, fingerprint = piece
        try:
            fh = self._files[source]
            fh.seek(offset)
            got = fh.read(length)
        except OSError:
            return None
        return got if len(got) == length and hash(got) == fingerprint else None


def read_part_records(
    root: Path,
    label: str,
    own: set[str],
    same_version: bool,
    files: PartFiles,
    records: dict[Key, Record],
    lines: dict[Key, Piece],
    texts: dict[Key, Piece],
) -> int:
    """Decode a part's records into ``records``, remember their lines in ``lines`` and, where
    the part's ``results.json`` holds the same data, their texts there in ``texts``; how many
    records it held. ``same_version``: the part was written by this skilleval, so its
    ``results.json`` is laid out as this one writes it.

    Raises:
        UsageError: A line is not a record, or its test is not one of the part's.
    """
    path = root / "results.jsonl"
    if not path.is_file():
        return 0
    own_texts = _PartTexts(root / "results.json" if same_version else None)
    text_source = files.add(root / "results.json") if own_texts.spans else -1
    line_source = files.add(path)
    found = 0
    offset = 0
    with path.open("rb") as source:
        for number, raw in enumerate(source, 1):
            at = offset
            offset += len(raw)
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
                if not isinstance(data, dict):
                    raise ValueError("not a JSON object")
                record = decode(Record, data)
            except Exception as exc:
                raise UsageError(f"{path}:{number}: not a result line ({exc})") from None
            if record.test_id not in own:
                raise UsageError(
                    f"{path}:{number}: test {record.test_id!r} is not one of shard {label}'s"
                )
            key = record.key
            span = own_texts.match(key, data)
            if span is not None:
                text = own_texts.whole[span[0] : span[1]]
                texts[key] = (text_source, span[0], len(text), hash(text))
            else:
                texts.pop(key, None)
            if key not in records:
                found += 1
            records[key] = record
            lines[key] = (line_source, at, len(raw), hash(raw))
    return found


class _PartTexts:
    """A part's ``results.json`` cut into its records' texts, each matched to a line only
    when it holds the same data. The texts are in the order of the lines when the part ran
    one job at a time, so each is first tried against the next line; once out of step, they
    are found by their key."""

    def __init__(self, path: Path | None) -> None:
        self.whole, self.spans = (b"", []) if path is None else _record_spans(path)
        self._next = 0
        self._by_key: dict[Key, tuple[int, int]] | None = None

    def match(self, key: Key, data: object) -> tuple[int, int] | None:
        """Where the text of the record with ``key`` and ``data`` lies, or None."""
        if self._by_key is None and self._next < len(self.spans):
            span = self.spans[self._next]
            if _same_data(self.whole[span[0] : span[1]], data):
                self._next += 1
                return span
            self._by_key = self._index()
        if self._by_key is None:
            return None
        found = self._by_key.get(key)
        if found is None or not _same_data(self.whole[found[0] : found[1]], data):
            return None
        return found

    def _index(self) -> dict[Key, tuple[int, int]]:
        out: dict[Key, tuple[int, int]] = {}
        for span in self.spans:
            key = _key_at(self.whole, span[0])
            if key is None:
                return {}
            out[key] = span
        return out


def _same_data(text: bytes, data: object) -> bool:
    try:
        return bool(json.loads(text) == data)
    except (ValueError, RecursionError):
        return False


_OPEN = b'\n  "records": [\n'
_FIRST = b"    {\n"
_BETWEEN = b"\n    },\n    {\n"
_CLOSE = b"\n    }"
_LAST = b"\n    }\n  ]"
"""How :func:`~skilleval.results.write.iter_run` lays out the records: a line ``    },``
occurs nowhere else, since a record's own lines are indented further."""


def _record_spans(path: Path) -> tuple[bytes, list[tuple[int, int]]]:
    """A part's ``results.json`` and where each record's text lies in it, in order; none when
    it cannot be read or is not laid out as this skilleval writes it."""
    try:
        whole = path.read_bytes()
    except OSError:
        return b"", []
    start = whole.find(_OPEN + _FIRST)
    end = whole.find(_LAST, max(start, 0))
    if start < 0 or end < 0:
        return b"", []
    at, end = start + len(_OPEN), end + len(_CLOSE)
    spans: list[tuple[int, int]] = []
    while True:
        cut = whole.find(_BETWEEN, at, end)
        if cut < 0:
            spans.append((at, end))
            return whole, spans
        spans.append((at, cut + len(_CLOSE)))
        at = cut + len(_CLOSE) + 2


def _key_at(whole: bytes, at: int) -> Key | None:
    """The key of the record whose text starts at ``at``: its first three lines are its
    test id, arm and trial."""
    stop = at
    for _ in range(4):
        stop = whole.find(b"\n", stop + 1)
        if stop < 0:
            return None
    head = whole[at:stop].split(b"\n")[1:4]
    try:
        key = json.loads(b"{" + b",".join(h.strip().rstrip(b",") for h in head) + b"}")
        return (str(key["test_id"]), str(key["arm"]), int(key["trial"]))
    except (ValueError, KeyError, TypeError):
        return None


def write_lines(
    path: Path,
    order: Sequence[Key],
    lines: dict[Key, Piece],
    records: dict[Key, Record],
    files: PartFiles,
) -> None:
    """``results.jsonl`` in ``order``, from the parts' own lines, synced to disk.

    Raises:
        StorageError: It could not be written.
    """
    try:
        with path.open("wb") as out:
            for key in order:
                raw = files.read(lines[key])
                if raw is None:
                    raw = without_surrogates(record_line(records[key])).encode("utf-8")
                out.write(raw if raw.endswith(b"\n") else raw + b"\n")
            out.flush()
            os.fsync(out.fileno())
    except OSError as exc:
        raise StorageError(f"{path} could not be written: {exc.strerror or exc}") from None


class CheckedTexts(Sequence[str | None]):
    """The records' texts for ``results.json`` in ``order``, each read back from its part
    when it is needed (None: encode that record)."""

    def __init__(self, order: Sequence[Key], texts: dict[Key, Piece], files: PartFiles) -> None:
        self._order = order
        self._texts = texts
        self._files = files

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, index: int) -> str | None: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str | None]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str | None] | None:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        piece = self._texts.get(self._order[index])
        raw = None if piece is None else self._files.read(piece)
        try:
            return None if raw is None else raw.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def __iter__(self) -> Iterator[str | None]:
        return (self[i] for i in range(len(self)))
