"""Small JSON memos under skilleval's home: what was measured once and can be read back.

A memo is one JSON object mapping keys to entries (``model-hashes.json``,
``judge-fitness.json``). Reading a missing or damaged memo gives an empty one, and a memo
that cannot be written is simply not written: a memo only ever saves work, so neither may
stop a run. Writes merge one entry and replace the file atomically, so a reader never sees
half a file; of two processes racing, the loser's entry may be dropped, which costs one
measurement later.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any


def read_memo(memo: Path) -> dict[str, Any]:
    """The memo's entries; empty when it is missing or does not read as a JSON object."""
    try:
        data = json.loads(memo.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remember(memo: Path, key: str, entry: Any) -> None:
    """Store ``entry`` under ``key``, replacing the memo file atomically; never raises OSError."""
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        data = read_memo(memo)
        data[key] = entry
        import tempfile  # lazy: start-up time (most runs read memos and write none)

        fd, tmp = tempfile.mkstemp(prefix=f".{memo.stem}.", suffix=".tmp", dir=memo.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=1, sort_keys=True)
            os.replace(tmp, memo)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        return
