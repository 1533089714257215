"""Evaluated prompt prefixes kept on disk from run to run.

Evaluating a prompt is a large share of an in-process run: a skill, a rubric and a chat
template's opening come before every test's own words. Within a run each shared prefix is
evaluated once and copied; this store keeps those prefixes' KV cells between runs, so a
re-run after a skill edit evaluates the skill only from the edit on, and a rubric not at all.

An entry is one sequence's state as llama.cpp serializes it (``llama_state_seq_get_data``),
under the tokens it holds. A state restored into a sequence holds exactly the bytes the
evaluation wrote, so the model's replies do not change (tests compare them). The folder is
per model file, runtime version and KV layout (:func:`store_folder`). Nothing read back is
trusted (:mod:`skilleval.util.homefile`): an entry's SHA-256 covers its token list and its
bytes together, its file name must be the digest of its tokens, the tokens must be token ids,
and the state must hold one cell per token (:func:`state_cells`), all checked before llama.cpp
sees the bytes. An entry that fails is a miss, is removed, and is reported once. The least
recently used entries go when the folder passes :data:`LIMIT_BYTES`.

Several runs may share a folder: entries are written to a temporary name and renamed, and an
entry that vanishes or fails to read is a miss. Within a run, lanes (``engine/llama_lanes.py``)
share one store from several threads; its methods take its lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from skilleval.util.homefile import damaged, digest

__all__ = [
    "LIMIT_BYTES",
    "MIN_TOKENS",
    "PrefixStore",
    "StoredPrefix",
    "kept_prefixes",
    "prefix_name",
    "remove_kept_prefixes",
    "shared_length",
    "state_cells",
    "store_folder",
    "with_streams",
]

LIMIT_BYTES = 256 * 1024 * 1024
"""The most one folder keeps; the least recently used entries go first."""
MIN_TOKENS = 32
"""Shorter prefixes are not worth a file: evaluating them costs about as much as reading."""
FORMAT = 2
"""2: the digest covers the tokens and the bytes together."""
MAX_TOKEN = 2**31 - 1
"""Token ids are llama.cpp's int32."""
MAX_META_BYTES = 16 * 1024 * 1024
"""A token list larger than this is not one the store wrote."""
STATE_MAGIC = 0xAF143CD8
"""What llama.cpp's sequence state starts with (``llama_state_seq_get_data``)."""
WHAT = "a stored prompt prefix"


def store_folder(home: Path, *parts: str) -> Path:
    """The folder for one model and runtime: ``parts`` are everything that shapes the bytes."""
    digest = hashlib.sha256("\n".join((str(FORMAT), *parts)).encode("utf-8")).hexdigest()
    return home / "kv" / digest[:24]


@dataclass(frozen=True, slots=True)
class StoredPrefix:
    """One entry: the tokens whose cells it holds, and where."""

    name: str
    tokens: tuple[int, ...]
    sha256: str


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _locked(
    method: Callable[Concatenate[PrefixStore, _P], _R],
) -> Callable[Concatenate[PrefixStore, _P], _R]:
    """``method`` run under the store's lock."""

    @wraps(method)
    def run(self: PrefixStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._lock:
            return method(self, *args, **kwargs)

    return run


class PrefixStore:
    """The prefixes kept in ``folder`` (created on the first write).

    Args:
        folder: From :func:`store_folder`.
        limit: Bytes kept at most.
    """

    def __init__(self, folder: Path, limit: int = LIMIT_BYTES) -> None:
        self.folder = folder
        self.limit = limit
        self._entries: dict[tuple[int, ...], StoredPrefix] | None = None
        self.loaded = 0
        """Entries restored by this instance."""
        self.saved = 0
        self._lock = threading.RLock()

    @_locked
    def best(self, tokens: Sequence[int]) -> tuple[StoredPrefix | None, int]:
        """The entry sharing the longest start with ``tokens``, and how many tokens it shares."""
        best: StoredPrefix | None = None
        length = 0
        target = tuple(tokens)
        for entry in self._index().values():
            n = shared_length(entry.tokens, target)
            if n > length:
                best, length = entry, n
        return best, length

    @_locked
    def has(self, tokens: Sequence[int]) -> bool:
        return tuple(tokens) in self._index()

    @_locked
    def read(self, entry: StoredPrefix) -> bytes | None:
        """The entry's bytes, or None when they are gone or damaged (a damaged entry is
        removed, and reported once): they must match the digest over the tokens and the
        bytes, and hold one cell per token."""
        path = self.folder / f"{entry.name}.kv"
        try:
            data = path.read_bytes()
        except OSError:
            self._forget(entry)
            return None
        if _digest(entry.tokens, data) != entry.sha256 or state_cells(data) != len(entry.tokens):
            damaged(WHAT, self.folder, "the prompt is evaluated again")
            self.remove(entry)
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # most recently used
        self.loaded += 1
        return data

    @_locked
    def write(self, tokens: Sequence[int], data: bytes) -> None:
        """Keep ``data`` as the cells of ``tokens``; a failure to write is ignored (the store
        only saves time)."""
        key = tuple(tokens)
        if state_cells(data) != len(key):
            return  # a state that is not one cell per token (a sliding window) is not kept
        entry = StoredPrefix(prefix_name(key), key, _digest(key, data))
        name = entry.name
        meta = json.dumps({"tokens": list(key), "sha256": entry.sha256})
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            for suffix, body in ((".kv", data), (".json", meta.encode("ascii"))):
                tmp = self.folder / f".{name}{suffix}.{os.getpid()}"
                tmp.write_bytes(body)
                os.replace(tmp, self.folder / f"{name}{suffix}")
        except OSError:
            return
        self._index()[key] = entry
        self.saved += 1
        self._trim()

    @_locked
    def remove(self, entry: StoredPrefix) -> None:
        for suffix in (".kv", ".json"):
            with contextlib.suppress(OSError):
                (self.folder / f"{entry.name}{suffix}").unlink()
        self._forget(entry)

    def _forget(self, entry: StoredPrefix) -> None:
        if self._entries is not None:
            self._entries.pop(entry.tokens, None)

    def _index(self) -> dict[tuple[int, ...], StoredPrefix]:
        if self._entries is None:
            entries: dict[tuple[int, ...], StoredPrefix] = {}
            for meta in sorted(self.folder.glob("*.json")):
                try:
                    if meta.stat().st_size > MAX_META_BYTES:
                        raise ValueError("too large")
                    entry = _entry(meta.stem, json.loads(meta.read_text("ascii")))
                except OSError:
                    continue  # removed by another run meanwhile
                except (ValueError, KeyError, TypeError, RecursionError):
                    damaged(WHAT, self.folder, "the prompt is evaluated again")
                    self.remove(StoredPrefix(meta.stem, (), ""))
                    continue
                entries[entry.tokens] = entry
            self._entries = entries
        return self._entries

    def _trim(self) -> None:
        """Remove the least recently used entries until the folder fits the limit."""
        sized: list[tuple[float, int, StoredPrefix]] = []
        for entry in self._index().values():
            try:
                stat = (self.folder / f"{entry.name}.kv").stat()
            except OSError:
                continue
            sized.append((stat.st_mtime, stat.st_size, entry))
        total = sum(size for _, size, _ in sized)
        for _, size, entry in sorted(sized, key=lambda s: s[0]):
            if total <= self.limit:
                break
            self.remove(entry)
            total -= size


def prefix_name(tokens: tuple[int, ...]) -> str:
    """The file name an entry for ``tokens`` is stored under: a hash of the tokens."""
    return hashlib.sha256(json.dumps(tokens).encode("ascii")).hexdigest()[:32]


def _digest(tokens: tuple[int, ...], data: bytes) -> str:
    """The SHA-256 over an entry's tokens and its bytes together."""
    return digest(data, json.dumps(tokens).encode("ascii"))


def _entry(name: str, raw: object) -> StoredPrefix:
    """The entry a token-list file describes.

    Raises:
        ValueError: It is not a list of token ids under a digest, or its name is not the
            digest of its tokens (the list was edited).
    """
    if not isinstance(raw, dict) or not isinstance(raw.get("tokens"), list):
        raise ValueError("not an entry")
    tokens = raw["tokens"]
    if not all(type(t) is int and 0 <= t <= MAX_TOKEN for t in tokens):
        raise ValueError("not token ids")
    sha = raw.get("sha256")
    key = tuple(tokens)
    if not isinstance(sha, str) or len(sha) != 64 or prefix_name(key) != name:
        raise ValueError("not the entry its name says")
    return StoredPrefix(name, key, sha)


_HEADER = struct.Struct("<IiI")
"""A serialized sequence state's magic, sequence id and stream count."""


def _layout(data: bytes) -> tuple[int, int, int] | None:
    """``data``'s stream count, the index of the one stream holding cells (the stream count
    when none does) and the offset of that stream's cell count; None when ``data`` is not laid
    out as llama.cpp writes a sequence (magic, sequence id, stream count, then each stream's
    cell count with that stream's cells after it)."""
    if len(data) < _HEADER.size + 4:
        return None
    magic, _seq, streams = _HEADER.unpack_from(data)
    if magic != STATE_MAGIC or not 0 < streams <= 4096:
        return None
    offset = _HEADER.size
    for index in range(streams):
        if offset + 4 > len(data):
            return None
        if struct.unpack_from("<I", data, offset)[0]:
            return streams, index, offset  # the only stream a sequence fills
        offset += 4
    return streams, streams, offset


def state_cells(data: bytes) -> int | None:
    """How many KV cells llama.cpp's serialized sequence state ``data`` holds; None when it
    is not laid out as one (only one stream may hold cells)."""
    layout = _layout(data)
    if layout is None:
        return None
    streams, index, offset = layout
    return 0 if index == streams else int(struct.unpack_from("<I", data, offset)[0])


def with_streams(data: bytes, streams: int) -> bytes | None:
    """A serialized sequence state laid out for a context of ``streams`` KV streams, so that a
    state saved in a context of one width loads into a context of another (llama.cpp refuses
    a state written for another stream count, though the cells are the same bytes): the
    stream holding the cells first, then empty ones. ``data`` itself when it fits; None when
    it is not laid out as :func:`state_cells` expects."""
    layout = _layout(data)
    if layout is None or not 0 < streams <= 4096:
        return None
    count, index, offset = layout
    if count == streams:
        return data
    body = bytes(4)  # an empty stream, when none holds cells
    if index < count:
        end = len(data) - 4 * (count - index - 1)  # the later streams' empty counts
        if end < offset + 4 or any(data[end:]):
            return None
        body = data[offset:end]
    magic, seq, _ = _HEADER.unpack_from(data)
    return _HEADER.pack(magic, seq, streams) + body + bytes(4 * (streams - 1))


def shared_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def kept_prefixes(home: Path) -> tuple[int, int]:
    """How many prefixes ``home`` keeps, over every model, and their bytes."""
    count = size = 0
    for kv in (home / "kv").glob("*/*.kv"):
        with contextlib.suppress(OSError):
            size += kv.stat().st_size
            count += 1
    return count, size


def remove_kept_prefixes(home: Path) -> int:
    """Delete every prefix ``home`` keeps; return how many there were."""
    count, _ = kept_prefixes(home)
    shutil.rmtree(home / "kv", ignore_errors=True)
    return count
