"""Where runs are written: ``<home>/runs/<id>/`` with ``results.jsonl`` streamed as it goes.

One process at a time writes a run directory: it holds an exclusive lock on the folder's
``.lock`` file from the moment it opens the folder until its last record is written (the
kernel drops the lock if the process dies, even by ``kill -9``). A second ``--resume`` of the
same folder is refused instead of running the same tests again beside the first.

A write that fails (the disk is full, the folder went read-only) becomes one
:class:`~skilleval.errors.StorageError` that says how to finish the run once space is freed;
no temporary file is left behind, and the records already written stay resumable.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import json
import os
import re
import secrets
import time
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from skilleval.errors import StorageError, UsageError
from skilleval.results.model import Run
from skilleval.results.records import Record
from skilleval.results.write import iter_run, record_line
from skilleval.util.home import home_dir
from skilleval.util.scrub import without_surrogates

__all__ = ["LOCK_NAME", "RunDir", "home_dir", "new_run_id", "write_atomically"]

LOCK_NAME = ".lock"
"""The file inside a run directory whose lock says a process is writing the run."""
HOLDER_TRIES = 25
"""Reads of the lock file (20 ms apart) before a refusal gives up naming the holder."""


def new_run_id(suite_stem: str) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    slug = re.sub(r"[^a-z0-9]+", "-", suite_stem.lower()).strip("-")[:32] or "suite"
    return f"{stamp}-{slug}-{secrets.token_hex(2)}"


class RunDir:
    """One run's folder, locked while this process writes it.

    Each finished record is appended and flushed at once.

    Args:
        root: The folder; created if missing.

    Raises:
        UsageError: Another process is writing this run directory.
        StorageError: The folder cannot be created.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(_write_failed(exc, self.root, None)) from None
        self._lock_fd = _lock(self.root)
        # Dropped with the object too, so a run that ends by an exception never keeps it.
        self._unlock = weakref.finalize(self, os.close, self._lock_fd)
        self._jsonl: IO[str] | None = None
        self._synced = 0.0

    @classmethod
    def create(cls, home: Path, suite_stem: str) -> RunDir:
        runs = home / "runs"
        try:
            runs.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(_write_failed(exc, runs, None)) from None
        while True:
            root = runs / new_run_id(suite_stem)
            if not root.exists():
                return cls(root)

    @property
    def jsonl_path(self) -> Path:
        return self.root / "results.jsonl"

    @property
    def json_path(self) -> Path:
        return self.root / "results.json"

    def append(self, record: Record) -> None:
        """Add one record to ``results.jsonl``.

        Raises:
            StorageError: It could not be written; the file is closed, and what was written
                before stays for ``--resume`` (a torn last line is skipped then).
        """
        # Text from a plugin or a suite may still hold a lone surrogate, which UTF-8 cannot
        # encode; one in a JSON string can only be a character of a value, never structure.
        line = without_surrogates(record_line(record))
        try:
            if self._jsonl is None:
                self._jsonl = self.jsonl_path.open("a", encoding="utf-8")
            self._jsonl.write(line)
            # Flushed at once, so a killed process loses nothing (the kernel has the bytes);
            # synced to disk at most once a second, since an fsync per record dominates big runs.
            self._jsonl.flush()
            now = time.monotonic()
            if now - self._synced >= 1.0:
                os.fsync(self._jsonl.fileno())
                self._synced = now
        except OSError as exc:
            self._drop_jsonl()
            raise StorageError(_write_failed(exc, self.jsonl_path, self.root)) from None

    def close(self) -> None:
        """Sync and close ``results.jsonl``, and let another process have the folder.

        Never raises: a failure here can only concern bytes that :meth:`append` already
        reported, and the run's own error says what happened.
        """
        if self._jsonl is not None:
            try:
                self._jsonl.flush()
                os.fsync(self._jsonl.fileno())
            except OSError:
                pass
            self._drop_jsonl()
        self._unlock()

    def _drop_jsonl(self) -> None:
        if self._jsonl is None:
            return
        with contextlib.suppress(OSError):
            # Closing flushes what is still buffered, which can fail again; the file is closed
            # either way.
            self._jsonl.close()
        self._jsonl = None

    def write_results(self, run: Run, texts: Sequence[str | None] | None = None) -> Path:
        """Write ``results.json`` atomically; ``texts`` as :func:`iter_run` takes them.

        Raises:
            StorageError: It could not be written (a full disk …); no temporary file is left,
                and ``results.jsonl`` still holds every record, so ``--resume`` finishes it.
        """
        pieces = (without_surrogates(piece) for piece in iter_run(run, texts))
        write_atomically(self.json_path, pieces, self.root)
        return self.json_path

    def write_json(self, name: str, data: Any) -> Path:
        """Write a JSON file atomically, so a reader never sees half of it.

        Raises:
            StorageError: It could not be written; the temporary file is removed.
        """
        target = self.root / name
        text = without_surrogates(json.dumps(data, ensure_ascii=False, indent=2)) + "\n"
        write_atomically(target, text, self.root if name != "run.json" else None)
        return target

    def mark_latest(self) -> None:
        """Point ``runs/latest`` at this run (a relative symlink, replaced atomically).

        Best effort: a pointer that cannot be written (no symlinks, a full disk) is skipped,
        since the run's own folder is complete.
        """
        link = self.root.parent / "latest"
        tmp = self.root.parent / f".latest-{secrets.token_hex(4)}"
        try:
            tmp.symlink_to(self.root.name)
            os.replace(tmp, link)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
                (self.root.parent / "LATEST").write_text(self.root.name + "\n", encoding="utf-8")


def write_atomically(target: Path, text: str | Iterable[str], resumable: Path | None) -> None:
    """Write ``text`` to a temporary file beside ``target``, then rename it over ``target``.

    The temporary name is unique, so two writers never share one.

    Args:
        target: The file to write.
        text: Its new content, whole or in pieces (written one after another).
        resumable: The run directory to name in the message if the write fails, or None
            when the run cannot be resumed (its manifest is what failed).

    Raises:
        StorageError: It could not be written; the temporary file is removed.
    """
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            if isinstance(text, str):
                fh.write(text)
            else:
                fh.writelines(text)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise StorageError(_write_failed(exc, target, resumable)) from None


def _lock(root: Path) -> int:
    """Take the folder's lock without waiting, or say who holds it."""
    path = root / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StorageError(_write_failed(exc, path, None)) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise StorageError(_write_failed(exc, path, None)) from None
        holder = _holder(path)
        by = f" (process {holder})" if holder else ""
        raise UsageError(
            f"{root} is being written by another skilleval run{by}; "
            "wait for it to finish, then resume it if it was interrupted"
        ) from None
    # Who holds it, for the message above; the lock itself is what counts. Written before the
    # old text is cut, so a reader never finds the file empty once this is done.
    with contextlib.suppress(OSError):
        data = f"{os.getpid()}\n".encode()
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    return fd


def _holder(path: Path) -> int | None:
    """The process that holds the lock at ``path``: it writes its id just after taking the
    lock, so a run refused in between waits a moment for it."""
    for _ in range(HOLDER_TRIES):
        pid = _read_pid(path)
        if pid is not None:
            return pid
        time.sleep(0.02)
    return None


def _read_pid(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _write_failed(exc: OSError, path: Path, resumable: Path | None) -> str:
    """One line: what could not be written, why, and how to finish the run."""
    full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
    why = "no space left on the device" if full else exc.strerror or str(exc)
    message = f"cannot write {path}: {why}"
    if resumable is not None and (resumable / "run.json").is_file():
        fix = "free some space" if full else "fix that"
        message += (
            f"; the records in results.jsonl are kept: {fix}, then finish the run with: "
            f"skilleval run --resume {resumable}"
        )
    return message
