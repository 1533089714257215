"""The one rule for what skilleval reads back from its home: verify it before use.

Everything kept under the home (the response cache's bodies, the compiled templates, the
prefix store, the JSON memos) is a saving, never a source of truth. Its folder is writable by
anyone who runs skilleval, and disks flip bits, so each stored piece carries a SHA-256 of its
bytes (and of what it is stored under), written with it and checked when it is read back,
before it is parsed, unmarshalled or handed to llama.cpp. A piece that fails the check is
treated as absent: skilleval says so once (:func:`damaged`: one warning per kind of file and
per file, on stderr), computes it again and goes on. It never crashes on it and never
serves it.

A sealed piece is :data:`MAGIC`, the hex digest, a newline, then the payload. The digest
covers an optional context (the key a body is stored under, the tokens a KV state holds)
followed by the payload, so a body moved under another key is refused too.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from skilleval.util.scrub import printable

__all__ = [
    "MAGIC",
    "damaged",
    "digest",
    "is_sealed",
    "read_sealed",
    "seal",
    "set_warning_sink",
    "unseal",
    "write_sealed",
]

MAGIC = b"skilleval-sha256:"
"""How a sealed piece starts; the digest follows."""
_DIGEST_HEX = 64

_lock = threading.Lock()
_warned: set[tuple[str, str]] = set()


def _stderr(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"warning: {printable(message)}\n")
        sys.stderr.flush()


_sink: Callable[[str], None] = _stderr


def set_warning_sink(sink: Callable[[str], None] | None) -> Callable[[str], None]:
    """Send :func:`damaged`'s warnings to ``sink`` (None: stderr); returns the previous sink."""
    global _sink
    previous = _sink
    _sink = sink or _stderr
    return previous


def digest(payload: bytes, context: bytes = b"") -> str:
    """The SHA-256 that seals ``payload`` stored under ``context``."""
    h = hashlib.sha256()
    h.update(len(context).to_bytes(8, "big"))
    h.update(context)
    h.update(payload)
    return h.hexdigest()


def seal(payload: bytes, context: bytes = b"") -> bytes:
    """``payload`` with its digest in front, as it is stored."""
    return MAGIC + digest(payload, context).encode("ascii") + b"\n" + payload


def unseal(data: bytes, context: bytes = b"") -> bytes | None:
    """The payload of a sealed piece, or None when it is not one or its digest does not match."""
    start = len(MAGIC)
    end = start + _DIGEST_HEX
    if not data.startswith(MAGIC) or data[end : end + 1] != b"\n":
        return None
    payload = data[end + 1 :]
    try:
        stored = data[start:end].decode("ascii")
    except UnicodeDecodeError:
        return None
    return payload if stored == digest(payload, context) else None


def is_sealed(data: bytes) -> bool:
    """Whether ``data`` looks like a sealed piece at all (an older, unsealed format does not)."""
    return data.startswith(MAGIC)


def damaged(what: str, where: Path | str, action: str = "it is computed again") -> None:
    """Say once that ``what`` at ``where`` failed its check and is not used.

    Args:
        what: The kind of stored piece (``a compiled template``, ``a response cache entry``).
        where: The file it was read from; one warning per kind and file in a process.
        action: What happens instead.
    """
    key = (what, str(where))
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    _sink(f"{what} in {where} is damaged and was not used; {action}")


def read_sealed(
    path: Path, what: str, context: bytes = b"", *, remove: bool = True
) -> bytes | None:
    """The verified payload of the sealed file ``path``; None when it is missing or damaged.

    A damaged file is reported once through :func:`damaged` and, with ``remove``, deleted, so
    the fresh copy replaces it.
    """
    try:
        data = path.read_bytes()
    except OSError:
        return None
    payload = unseal(data, context)
    if payload is None:
        damaged(what, path)
        if remove:
            with contextlib.suppress(OSError):
                path.unlink()
    return payload


def write_sealed(path: Path, payload: bytes, context: bytes = b"") -> bool:
    """Write ``payload`` sealed to ``path`` atomically; False when it cannot be written (a
    stored piece only saves work, so that is never an error)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(seal(payload, context))
        os.replace(partial, path)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        return False
    return True
