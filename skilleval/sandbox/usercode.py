"""Running code a user wrote (plugin checks, ``python`` checks, plugin imports) without letting it
take the run down.

Three guards, each for a way such code has fooled CI:

* :func:`user_output` sends what the code prints to stderr. stdout carries ``--json``
  documents; one stray ``print()`` in a plugin would make them unreadable. The switch is per
  thread (a router stands in for ``sys.stdout`` and asks the thread it is called from), so
  skilleval's own writes from other threads still reach stdout.
* :func:`call_limited` runs a call in a thread of its own, with a wall-clock limit, and
  catches every exception it raises, ``SystemExit`` included: ``sys.exit(0)`` in a check
  must not end the process with exit 0 and no results.
* :func:`raised_at` names the user's file and line an exception came from.

A call past its limit is stopped by raising an exception inside its thread
(``PyThreadState_SetAsyncExc``). That reaches Python code at its next bytecode, so a loop is
stopped; code blocked inside C (a long ``time.sleep``) is abandoned instead, in a daemon thread
that cannot keep the process alive.
"""

from __future__ import annotations

import ctypes
import io
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, TextIO, TypeVar

from skilleval.util.frozen import frozen

T = TypeVar("T")

_PACKAGE = Path(__file__).resolve().parent.parent
"""The skilleval package folder: frames inside it are not the user's."""

_local = threading.local()
_install_lock = threading.Lock()


class _Router(io.TextIOBase):
    """Stands in for ``sys.stdout``: writes go to stderr from a thread running user code."""

    def __init__(self, real: TextIO) -> None:
        super().__init__()
        self.real = real

    def _target(self) -> TextIO:
        return sys.stderr if getattr(_local, "depth", 0) else self.real

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.real.isatty()

    def fileno(self) -> int:
        return self.real.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.real.encoding

    @property
    def buffer(self) -> Any:
        return self._target().buffer


def _install() -> None:
    # Installed again whenever something (a test runner, a CLI harness) replaced sys.stdout.
    with _install_lock:
        if not isinstance(sys.stdout, _Router):
            sys.stdout = _Router(sys.stdout)


@contextmanager
def user_output() -> Iterator[None]:
    """While inside, this thread's writes to ``sys.stdout`` go to stderr."""
    _install()
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        yield
    finally:
        _local.depth -= 1


class _Stopped(BaseException):
    """Raised inside a call that ran past its limit. A BaseException, so that the user's
    ``except Exception`` does not swallow it."""


@frozen
class Called(Generic[T]):
    """How a limited call ended: a value, an exception, or the time limit."""

    value: T | None = None
    raised: BaseException | None = None
    timed_out: bool = False


def call_limited(fn: Callable[[], T], limit: float | None) -> Called[T]:
    """Run ``fn()`` in a thread of its own, printing to stderr, for at most ``limit`` seconds.

    Every exception ``fn`` raises is returned, not raised: ``SystemExit``,
    ``KeyboardInterrupt`` raised by the code itself and ``GeneratorExit`` included. A
    Ctrl-C pressed by the user still reaches the caller, which waits in the main thread.
    """
    box: list[Called[T]] = []

    def run() -> None:
        try:
            with user_output():
                box.append(Called(value=fn()))
        except _Stopped:
            pass
        except BaseException as exc:  # user code may raise anything, SystemExit included
            box.append(Called(raised=exc))

    worker = threading.Thread(target=run, name="skilleval-user-check", daemon=True)
    worker.start()
    worker.join(limit)
    if worker.is_alive():
        _stop(worker)
        return Called(timed_out=True)
    return box[0] if box else Called(timed_out=True)


def _stop(worker: threading.Thread) -> None:
    ident = worker.ident
    if ident is None:
        return
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(_Stopped))
    # A short grace period; a thread blocked in C is left behind as a daemon.
    worker.join(0.5)


@frozen
class Origin:
    """Where in a user's file an exception was raised; printed as ``path:line``."""

    path: str
    """Relative to the working directory when inside it."""
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def raised_at(exc: BaseException, prefer: str | None = None) -> Origin | None:
    """The place in the user's code an exception was raised from, or None.

    Args:
        exc: The exception.
        prefer: A file (the check function's own) whose deepest frame wins when present.

    The deepest frame in ``prefer`` is taken; without one, the deepest frame outside the
    skilleval package and the standard library.
    """
    frames = traceback.extract_tb(exc.__traceback__)
    if prefer is not None:
        mine = [f for f in frames if f.filename == prefer]
        if mine:
            return _shown(mine[-1])
    stdlib = Path(threading.__file__).resolve().parent
    for frame in reversed(frames):
        path = Path(frame.filename)
        if not path.is_absolute() or not path.exists():
            continue
        resolved = path.resolve()
        if resolved.is_relative_to(_PACKAGE) or resolved.is_relative_to(stdlib):
            continue
        return _shown(frame)
    return None


def _shown(frame: traceback.FrameSummary) -> Origin:
    path = Path(frame.filename)
    try:
        text = str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        text = frame.filename
    return Origin(text, frame.lineno or 1)
