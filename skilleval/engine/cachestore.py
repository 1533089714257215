"""The response cache's store: completions in one SQLite file, shared safely between runs.

The file is in WAL mode with a busy timeout, so two runs may read and write it at once. A
file that is damaged, or that cannot be written, is a :class:`~skilleval.errors.CacheError`
saying which, and what to do.

Each body is sealed (:mod:`skilleval.util.homefile`): a SHA-256 over its key and its bytes is
stored in front of it and checked on every read, so a body with a flipped bit, or one moved
under another key, is a miss with one warning and is never served. Bodies written before
sealing are misses too (silently), and the fresh reply replaces them.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skilleval.engine.base import Completion
from skilleval.errors import CacheError
from skilleval.util.homefile import damaged, is_sealed, seal, unseal
from skilleval.util.scrub import without_surrogates

__all__ = ["BUSY_TIMEOUT_MS", "CacheInfo", "ResponseCache", "open_cache"]

BUSY_TIMEOUT_MS = 30_000
"""How long a writer waits for another process's write lock before giving up."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key     TEXT PRIMARY KEY,
    model   TEXT NOT NULL,
    body    TEXT NOT NULL,
    created REAL NOT NULL
)
"""


@dataclass(frozen=True, slots=True)
class CacheInfo:
    """What ``skilleval cache info`` shows."""

    path: Path
    entries: int
    size_bytes: int
    """The database plus its WAL and shared-memory files."""

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "entries": self.entries, "size_bytes": self.size_bytes}


def _encode(completion: Completion) -> str:
    body = {
        "text": completion.text,
        "finish_reason": completion.finish_reason,
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "latency_ms": completion.latency_ms,
        "choice_scores": dict(completion.choice_scores)
        if completion.choice_scores is not None
        else None,
        "tokens_evaluated": completion.tokens_evaluated,
    }
    if completion.replaced:
        body["replaced"] = completion.replaced
    if completion.token_logprobs is not None:
        body["token_logprobs"] = list(completion.token_logprobs)
    # A provider's reply is scrubbed of lone surrogates already; this guards a plugin's.
    return without_surrogates(json.dumps(body, ensure_ascii=False, sort_keys=True))


def _sealed(key: str, body: str) -> str:
    """``body`` as it is stored under ``key``: with the digest that :meth:`_payload` checks."""
    return seal(body.encode("utf-8"), key.encode("utf-8")).decode("utf-8")


def _decode(body: str) -> Completion:
    data = json.loads(body)
    scores = data.get("choice_scores")
    return Completion(
        text=data["text"],
        finish_reason=data.get("finish_reason", "stop"),
        prompt_tokens=int(data.get("prompt_tokens", 0)),
        completion_tokens=int(data.get("completion_tokens", 0)),
        latency_ms=float(data.get("latency_ms", 0.0)),
        cached=True,
        choice_scores={str(k): float(v) for k, v in scores.items()} if scores else None,
        # Nothing was evaluated to answer from the cache.
        tokens_evaluated=0,
        replaced=int(data.get("replaced", 0)),
        token_logprobs=(
            tuple(float(v) for v in data["token_logprobs"])
            if isinstance(data.get("token_logprobs"), list)
            else None
        ),
    )


class ResponseCache:
    """A SQLite file of completions keyed by :func:`cache_key`.

    One connection per instance, shared by threads under a lock; other processes coordinate
    through SQLite's own locking (WAL mode, busy timeout).

    Args:
        path: The database file (conventionally ``<home>/cache.db``); its folder is created.

    Raises:
        CacheError: The file is not a sound SQLite database (``damaged``), or it cannot be
            written (a read-only file or folder, a full disk), found by a write that is rolled
            back. Either way the message says what to do.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                self.path,
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            self._db.text_factory = bytes
        except (OSError, sqlite3.Error) as exc:
            raise CacheError(
                f"cannot open the response cache {self.path}: {_reason(exc)}", damaged=False
            ) from None
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                self._open()
                break
            except sqlite3.Error as exc:
                # Two runs opening a new cache at once can race for the WAL switch, and SQLite
                # reports that as "locked" without waiting on the busy handler: try again.
                if _code(exc) in _BUSY and time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                self._db.close()
                raise self._error(exc) from None

    def _open(self) -> None:
        # The busy timeout must be set before switching to WAL: the switch takes a lock.
        self._db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        # Damage inside the pages (flipped bytes) otherwise surfaces one query at a time, or
        # never; quick_check reads every page once (about 3 ms per MB of cache, measured).
        problems = [
            bytes(row[0]).decode(errors="replace")
            for row in self._db.execute("PRAGMA quick_check(3)")
        ]
        if problems != ["ok"]:
            raise sqlite3.DatabaseError("; ".join(problems))
        # A read-only file or folder opens without complaint and refuses the first write.
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, model, body, created) VALUES (?, ?, ?, ?)",
                ("", "", "", 0.0),
            )
        finally:
            self._db.execute("ROLLBACK")

    def _error(self, exc: BaseException) -> CacheError:
        """What a SQLite failure means to a user: a damaged file, or one that cannot be written."""
        if isinstance(exc, sqlite3.Error) and _code(exc) in _UNWRITABLE:
            return CacheError(
                f"the response cache {self.path} cannot be written ({_reason(exc)})",
                damaged=False,
            )
        return CacheError(
            f"the response cache {self.path} is unusable ({_reason(exc)}); "
            "delete it to start afresh",
            damaged=True,
        )

    def get(self, key: str) -> Completion | None:
        """The stored completion for ``key`` (with ``cached=True``), or None.

        Raises:
            CacheError: The database failed (it is damaged, or it went away).
        """
        with self._lock:
            row = self._one("SELECT body FROM responses WHERE key = ?", (key,))
        if row is None:
            return None
        payload = self._payload(key, row[0])
        if payload is None:
            return None
        try:
            return _decode(payload)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            # Sealed but not a completion (a plugin's odd body): a miss, overwritten.
            return None

    def _payload(self, key: str, raw: object) -> str | None:
        """The verified text of a stored body; None (a miss) when it fails its digest, with
        one warning, or when it predates sealing."""
        data = bytes(raw) if isinstance(raw, bytes | bytearray | memoryview) else b""
        payload = unseal(data, key.encode("utf-8"))
        if payload is None:
            if is_sealed(data) or not data.startswith(b"{"):
                damaged("a response cache entry", self.path, "the reply is computed again")
            return None
        try:
            return payload.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def put(
        self, key: str, completion: Completion, model: str = "", *, allow_truncated: bool = False
    ) -> bool:
        """Store ``completion`` under ``key`` unless it is truncated (and that is not allowed).

        Args:
            key: From :func:`cache_key`.
            completion: A finished reply.
            model: The model identity key, kept beside the entry for inspection.
            allow_truncated: Store a reply cut at ``max_tokens`` too (free-text generation).

        Returns:
            Whether it was stored (False for a reply cut at ``max_tokens``).

        Raises:
            CacheError: It could not be written (a full disk, a damaged file).
        """
        if completion.truncated and not allow_truncated:
            return False
        with self._lock:
            self._run(
                "INSERT OR REPLACE INTO responses (key, model, body, created) VALUES (?, ?, ?, ?)",
                (key, without_surrogates(model), _sealed(key, _encode(completion)), time.time()),
            )
        return True

    def get_vector(self, key: str) -> list[float] | None:
        """The stored embedding for ``key`` (from :func:`embedding_key`), or None.

        Raises:
            CacheError: The database failed.
        """
        with self._lock:
            row = self._one("SELECT body FROM responses WHERE key = ?", (key,))
        if row is None:
            return None
        payload = self._payload(key, row[0])
        if payload is None:
            return None
        try:
            vector = json.loads(payload)["embedding"]
            return [float(x) for x in vector]
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return None

    def put_vector(self, key: str, vector: list[float], model: str = "") -> None:
        """Store an embedding under ``key``.

        Raises:
            CacheError: It could not be written.
        """
        body = json.dumps({"embedding": vector}, allow_nan=False, separators=(",", ":"))
        with self._lock:
            self._run(
                "INSERT OR REPLACE INTO responses (key, model, body, created) VALUES (?, ?, ?, ?)",
                (key, without_surrogates(model), _sealed(key, body), time.time()),
            )

    def info(self) -> CacheInfo:
        """Entry count and size on disk."""
        with self._lock:
            (entries,) = self._one("SELECT COUNT(*) FROM responses") or (0,)
        size = 0
        for suffix in ("", "-wal", "-shm"):
            part = self.path.with_name(self.path.name + suffix)
            if part.exists():
                size += part.stat().st_size
        return CacheInfo(path=self.path, entries=int(entries), size_bytes=size)

    def clear(self) -> int:
        """Delete every entry and give the space back.

        Returns:
            How many entries were deleted.
        """
        with self._lock:
            removed = self._run("DELETE FROM responses").rowcount
            self._run("PRAGMA wal_checkpoint(TRUNCATE)")
            self._run("VACUUM")
        return max(int(removed), 0)

    def close(self) -> None:
        """Close the connection; the instance is unusable afterwards."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        try:
            return self._db.execute(sql, params)
        except sqlite3.Error as exc:
            raise self._error(exc) from None

    def _one(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        """The first row; a damaged page can fail while the row is fetched, not only run."""
        try:
            return self._db.execute(sql, params).fetchone()
        except sqlite3.Error as exc:
            raise self._error(exc) from None


_BUSY = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
_UNWRITABLE = {
    sqlite3.SQLITE_READONLY,
    sqlite3.SQLITE_FULL,
    sqlite3.SQLITE_CANTOPEN,
    sqlite3.SQLITE_PERM,
    sqlite3.SQLITE_IOERR,
}


def _code(exc: sqlite3.Error) -> int | None:
    """SQLite's primary result code (the extended code's low byte)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return " ".join(str(exc).split()) or type(exc).__name__


def open_cache(path: Path, warn: Callable[[str], None] | None = None) -> ResponseCache | None:
    """The response cache for a run, or None when it cannot be written (said through ``warn``).

    Raises:
        CacheError: The file is damaged; the message says to delete it.
    """
    try:
        return ResponseCache(path)
    except CacheError as exc:
        if exc.damaged:
            raise
        if warn is not None:
            warn(f"{exc}; the run goes on without the cache")
        return None
