"""Small JSON memos under skilleval's home: what was measured once and can be read back.

A memo is one JSON object mapping keys to entries (``model-hashes.json``,
``judge-fitness.json``), kept as ``{"sha256": ..., "entries": {...}}``: the digest covers the
entries, written canonically. Reading a missing memo gives an empty one; so does a damaged one
(not JSON, nested past any sense, holding ``NaN``, or not matching its digest), after one
warning (:func:`skilleval.util.homefile.damaged`), and a memo written before memos carried a
digest, silently. A memo that cannot be written is simply not written: a memo only ever saves
work, so neither may stop a run. Writes merge one entry and replace the file atomically, so a
reader never sees half a file; of two processes racing, the loser's entry may be dropped,
which costs one measurement later.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from skilleval.util.homefile import damaged, digest

MAX_BYTES = 16 * 1024 * 1024
"""A memo larger than this is not one skilleval wrote."""


def _canonical(entries: dict[str, Any]) -> bytes:
    return json.dumps(
        entries, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_memo(memo: Path) -> dict[str, Any]:
    """The memo's entries; empty when it is missing, damaged (said once) or of an older kind."""
    try:
        if memo.stat().st_size > MAX_BYTES:
            damaged("a memo", memo, "it is measured again")
            return {}
        text = memo.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        if memo.exists():
            damaged("a memo", memo, "it is measured again")
        return {}
    try:
        data = json.loads(text, parse_constant=_no_constants)
        entries = data.get("entries") if isinstance(data, dict) else None
        if isinstance(data, dict) and "sha256" not in data and entries is None:
            return {}  # written before memos carried a digest: measured again, silently
        if not isinstance(entries, dict) or data.get("sha256") != digest(_canonical(entries)):
            raise ValueError("does not match its digest")
    except (ValueError, RecursionError, TypeError):
        damaged("a memo", memo, "it is measured again")
        return {}
    return entries


def remember(memo: Path, key: str, entry: Any) -> None:
    """Store ``entry`` under ``key``, replacing the memo file atomically; never raises OSError.

    An entry that is not plain JSON (a NaN, an object) is not stored.
    """
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        data = read_memo(memo)
        data[key] = entry
        try:
            sealed = {"sha256": digest(_canonical(data)), "entries": data}
        except (ValueError, TypeError):
            return
        import tempfile  # lazy: start-up time (most runs read memos and write none)

        fd, tmp = tempfile.mkstemp(prefix=f".{memo.stem}.", suffix=".tmp", dir=memo.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(sealed, fh, indent=1, sort_keys=True, ensure_ascii=False)
            os.replace(tmp, memo)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        return


def _entry_digest(key: str, entry: dict[str, Any]) -> str:
    body = {k: v for k, v in entry.items() if k != "digest"}
    text = json.dumps({"key": key, "entry": body}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def remember_sealed(memo: Path, key: str, entry: dict[str, Any]) -> None:
    """:func:`remember` an entry sealed with a digest of ``key`` and itself, so that an entry
    edited by hand or moved under another key reads back as none (:func:`recall_sealed`)."""
    remember(memo, key, {**entry, "digest": _entry_digest(key, entry)})


def recall_sealed(memo: Path, key: str) -> dict[str, Any] | None:
    """The entry :func:`remember_sealed` kept under ``key``; None when there is none or its
    seal does not match (the caller still checks the entry's shape)."""
    entry = read_memo(memo).get(key)
    if not isinstance(entry, dict) or entry.get("digest") != _entry_digest(key, entry):
        return None
    return entry
