"""Read a file a user named, safely: regular files only, with a size cap, errors positioned.

Every reader of users' files (suites, ``file://`` values, tests files, skills, plugins,
python checks and tools, environment sources) goes through :func:`check_path`,
:func:`read_bytes` or :func:`read_text`, so that a FIFO, ``/dev/zero``, ``/dev/stdin``, a
huge file or a name longer than the system allows becomes one diagnostic at the place that
named it, never a hang, a ``MemoryError`` or a traceback.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from skilleval.errors import Diagnostic, Location, SuiteError, missing_file, unreadable_file

MAX_FILE_BYTES = 64 * 1024 * 1024
"""The largest user file read: 64 MiB."""

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def display_path(path: Path) -> str:
    """A path as users want to read it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError, RuntimeError):
        return str(path)


def size_text(size: int) -> str:
    """A byte count in the unit people use for file sizes."""
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):.1f} MiB"
    if size >= 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size} bytes"


def _os_problem(exc: OSError, shown: str) -> str:
    if exc.errno == errno.ENOENT:
        return f"file not found: {shown}"
    if exc.errno == errno.ENAMETOOLONG:
        longest = max((len(p.encode()) for p in Path(shown).parts), default=0)
        return (
            f"path is too long for the system ({len(shown.encode())} bytes, "
            f"longest name {longest} bytes; names are limited to 255 bytes): {shown[:80]}…"
        )
    if exc.errno == errno.ELOOP:
        return f"too many levels of symbolic links: {shown}"
    return f"cannot read {shown}: {exc.strerror or exc}"


def _os_diagnostic(where: Location, exc: OSError, shown: str, path: Path) -> Diagnostic:
    message = _os_problem(exc, shown)
    if exc.errno == errno.ENOENT:
        return missing_file(where, message, str(path))
    if exc.errno in (errno.ENAMETOOLONG, errno.ELOOP):
        return Diagnostic(where, message)
    return unreadable_file(where, message, str(path))


def _kind(mode: int) -> str | None:
    for test, name in _KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def lookup_problem(path: Path) -> str | None:
    """Why ``path`` cannot even be looked up (too long, a symlink loop …); None otherwise.

    A path that merely does not exist is not a problem here: callers say "not found".
    """
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return _os_problem(exc, str(path))
    return None


def exists(path: Path, where: Location) -> bool:
    """Whether ``path`` exists; a path the system cannot even look up is a diagnostic.

    Raises:
        SuiteError: The path is too long, loops through symlinks or cannot be looked up.
    """
    try:
        path.stat()
    except FileNotFoundError:
        return False
    except NotADirectoryError:
        return False
    except OSError as exc:
        raise SuiteError([_os_diagnostic(where, exc, str(path), path)]) from None
    return True


def check_path(path: Path, where: Location, *, directory: bool = False) -> None:
    """Refuse anything but an existing regular file (or folder, when ``directory``).

    Raises:
        SuiteError: The path does not exist, cannot be looked up, or is of the wrong kind.
    """
    shown = display_path(path) if len(str(path)) < 4096 else str(path)
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise SuiteError([_os_diagnostic(where, exc, shown, path)]) from None
    if directory:
        if not stat.S_ISDIR(mode):
            raise SuiteError([Diagnostic(where, f"expected a folder: {shown}")])
        return
    kind = _kind(mode)
    if kind == "a directory":
        raise SuiteError(
            [unreadable_file(where, f"expected a file, found a directory: {shown}", str(path))]
        )
    if kind is not None:
        raise SuiteError(
            [Diagnostic(where, f"expected a regular file, but {shown} is {kind}; not read")]
        )


def read_bytes(
    path: Path,
    where: Location | None = None,
    *,
    display: str | None = None,
    limit: int = MAX_FILE_BYTES,
) -> bytes:
    """The bytes of a regular file no larger than ``limit``.

    Raises:
        SuiteError: The file is missing, not a regular file, too large or unreadable.
    """
    shown = display or display_path(path)
    at = where or Location(shown)
    check_path(path, at)
    try:
        # O_NONBLOCK: a file swapped for a FIFO after the check must not block the open.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise SuiteError([_os_diagnostic(at, exc, shown, path)]) from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        kind = _kind(info.st_mode)
        if kind is not None:
            raise SuiteError(
                [Diagnostic(at, f"expected a regular file, but {shown} is {kind}; not read")]
            )
        if info.st_size > limit:
            raise SuiteError([Diagnostic(at, _too_big(shown, info.st_size, limit))])
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise SuiteError([Diagnostic(at, _too_big(shown, len(data), limit))])
    return data


def _too_big(shown: str, size: int, limit: int) -> str:
    return (
        f"{shown} is too large ({size_text(size)}); skilleval reads files of up to "
        f"{size_text(limit)}"
    )


def read_text(
    path: Path,
    display: str | None = None,
    *,
    where: Location | None = None,
    limit: int = MAX_FILE_BYTES,
) -> str:
    """A UTF-8 file's text (without a byte-order mark); every failure is a diagnostic.

    Raises:
        SuiteError: As :func:`read_bytes`, or the file is not valid UTF-8 (at its position).
    """
    shown = display or display_path(path)
    raw = read_bytes(path, where, display=shown, limit=limit)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        bad = raw[exc.start : exc.start + 1].hex()
        raise SuiteError(
            [
                Diagnostic(
                    Location(shown, line, col),
                    f"file is not valid UTF-8 (byte 0x{bad}); save it as UTF-8",
                )
            ]
        ) from None
    return text.removeprefix("\ufeff")


def position(text: str, index: int) -> tuple[int, int]:
    """The 1-based line and column of a character offset in ``text``."""
    index = max(0, min(index, len(text)))
    line = text.count("\n", 0, index) + 1
    col = index - (text.rfind("\n", 0, index) + 1) + 1
    return line, col
