"""Where an output file goes: checked before a run starts, written atomically after it.

Every way a path can be unwritable (a folder, a file where a folder should be, a read-only or
virtual file system, a full disk) becomes one :class:`~skilleval.errors.UsageError` naming the
path and the reason, never a traceback.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from skilleval.errors import UsageError


def check_target(path: Path) -> None:
    """Refuse a path that can never be written, before any work is done.

    Raises:
        UsageError: ``path`` is a folder, one of its parents is a file, or its nearest
            existing folder does not take new files (read-only, or a read-only file system).
    """
    if path.is_dir():
        raise UsageError(f"cannot write {path}: it is a folder; give a file name")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"cannot write {path}: {parent} is a file, not a folder")
            probe_folder(path, parent)
            break


def probe_folder(path: Path, folder: Path) -> None:
    """Create and remove a file in ``folder``, the nearest existing folder of ``path``: a
    read-only folder or file system is found before the run, not after it."""
    probe = folder / f".skilleval-probe-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return  # another check of ours, at this moment: the folder takes files
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        probe.unlink()


def write_target(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, creating its folders.

    Raises:
        UsageError: The file could not be written (the message says why).
    """
    check_target(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
