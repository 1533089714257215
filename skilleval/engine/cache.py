"""Content-addressed response cache: the same request to the same model bytes is answered once.

The key is a SHA-256 over everything that can change a reply (see :func:`cache_key`). Entries
live in one SQLite file in WAL mode with a busy timeout, so two runs may read and write the
same cache at once. Only usable replies are stored: errors are raised before anything is
written, and a constrained reply (JSON Schema or choice) cut at ``max_tokens`` is never stored,
because it is an error. A free-text reply that reached ``max_tokens`` is a normal, reproducible
outcome of the budget, so it is stored like any other.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skilleval.engine.base import (
    Checked,
    Completion,
    ModelIdentity,
    Provider,
    Request,
    clean_reply,
)
from skilleval.errors import CacheError
from skilleval.util.scrub import without_surrogates

KEY_FORMAT = 1
"""Bumped whenever the key's contents change, so old entries are simply never hit."""

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


def _plain(value: Any) -> Any:
    """JSON fallback for the mapping and sequence types a YAML loader hands us."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    raise TypeError(f"cannot put a {type(value).__name__} into a cache key")


def cache_key(identity: ModelIdentity, request: Request, salt: str) -> str:
    """Hash everything that can change a reply into a hex SHA-256.

    The canonical JSON holds: the model identity key, the decoding settings (temperature,
    top_p, max_tokens), the seed, the trial index, every message, the JSON schema or choices,
    and the provider's salt. ``test_id`` and ``purpose`` are left out: they do not reach the
    model (a provider that answers by test puts the test in its salt instead).

    Args:
        identity: The model that would answer.
        request: The request.
        salt: :meth:`Provider.cache_salt` for this request.

    Returns:
        64 lowercase hex digits.
    """
    payload = {
        "format": KEY_FORMAT,
        "model": identity.key(),
        "decoding": {
            "temperature": float(request.temperature),
            "top_p": float(request.top_p),
            "max_tokens": int(request.max_tokens),
        },
        "seed": int(request.seed),
        "trial": int(request.trial),
        "messages": [m.to_json() for m in request.messages],
        "json_schema": request.json_schema,
        "choices": list(request.choices) if request.choices is not None else None,
        "salt": salt,
    }
    text = json.dumps(
        payload,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        default=_plain,
    )
    # surrogatepass: a lone surrogate in a prompt (a YAML "\\ud800") still hashes, and uniquely.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


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
    # A provider's reply is scrubbed of lone surrogates already; this guards a plugin's.
    return without_surrogates(json.dumps(body, ensure_ascii=False, sort_keys=True))


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
        try:
            # Read as bytes (text_factory), so a flipped byte is a decode error here.
            return _decode(bytes(row[0]).decode("utf-8"))
        except (ValueError, KeyError, TypeError, AttributeError):
            # A damaged row is a miss; the fresh answer overwrites it.
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
                (key, without_surrogates(model), _encode(completion), time.time()),
            )
        return True

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


class CachingProvider:
    """A provider wrapped with a response cache and call counters.

    A cache that fails during the run (the disk fills up, the file is damaged) is warned
    about once and set aside; the run goes on uncached, since every reply is still right.

    Args:
        inner: The provider that really answers.
        cache: The cache, or None for ``--no-cache`` (every request reaches ``inner``).
        warn: Where to say that the cache was set aside.

    Attributes:
        calls: Requests that reached the inner provider (including ones that failed).
        hits: Requests answered from the cache.
        prompt_tokens: Prompt tokens of the inner provider's replies.
        completion_tokens: Completion tokens of the inner provider's replies.
        tokens_evaluated: Prompt tokens the inner provider actually evaluated.
    """

    def __init__(
        self,
        inner: Provider,
        cache: ResponseCache | None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.inner = inner
        self.cache = cache
        self.warn = warn
        self.max_concurrency = inner.max_concurrency
        self.calls = 0
        self.hits = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.tokens_evaluated = 0
        self._identity: ModelIdentity | None = None
        self._lock = threading.Lock()

    def identity(self) -> ModelIdentity:
        """The inner provider's identity, computed once."""
        if self._identity is None:
            self._identity = self.inner.identity()
        return self._identity

    def cache_salt(self, request: Request) -> str:
        return self.inner.cache_salt(request)

    def check(self) -> None:
        """The inner provider's check, when it has one (see :class:`Checked`)."""
        if isinstance(self.inner, Checked):
            self.inner.check()

    def key(self, request: Request) -> str:
        """The cache key ``request`` has with this provider."""
        return cache_key(self.identity(), request, self.inner.cache_salt(request))

    def complete(self, request: Request) -> Completion:
        """Answer from the cache, or ask the inner provider and store a complete reply.

        Raises:
            ProviderError: From the inner provider; nothing is stored then.
        """
        key = None
        cache = self.cache
        if cache is not None:
            key = self.key(request)
            try:
                hit = cache.get(key)
            except CacheError as exc:
                self._set_aside(cache, exc)
                hit = None
            if hit is not None:
                with self._lock:
                    self.hits += 1
                return hit
        with self._lock:
            self.calls += 1
        # The built-in providers clean their replies; a plugin's is cleaned here.
        completion = clean_reply(self.inner.complete(request))
        with self._lock:
            self.prompt_tokens += completion.prompt_tokens
            self.completion_tokens += completion.completion_tokens
            self.tokens_evaluated += completion.tokens_evaluated
        cache = self.cache
        if cache is not None and key is not None:
            free_text = request.json_schema is None and request.choices is None
            try:
                cache.put(key, completion, model=self.identity().key(), allow_truncated=free_text)
            except CacheError as exc:
                self._set_aside(cache, exc)
        return completion

    def _set_aside(self, cache: ResponseCache, exc: CacheError) -> None:
        """Stop using ``cache`` for this run, and say so once."""
        with self._lock:
            if self.cache is not cache:
                return  # another thread got there first
            self.cache = None
        if self.warn is not None:
            self.warn(f"{exc}; the run goes on without the cache")

    def stats(self) -> dict[str, int]:
        """The counters, for reports."""
        with self._lock:
            return {
                "calls": self.calls,
                "hits": self.hits,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "tokens_evaluated": self.tokens_evaluated,
            }

    def close(self) -> None:
        """Close the inner provider. The cache belongs to the caller and stays open."""
        self.inner.close()
