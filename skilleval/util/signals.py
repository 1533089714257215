"""SIGTERM ends a run the way Ctrl-C does.

Python turns SIGINT into :class:`KeyboardInterrupt`, which unwinds the run: workspaces are
removed, JavaScript workers are killed, what finished is written, and the run ends with exit
130 (INTERRUPTED). SIGTERM's default is to end the process on the spot, writing nothing and
leaving children behind; :func:`sigterm_as_interrupt` gives it Ctrl-C's path instead.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType

__all__ = ["sigterm_as_interrupt"]


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def sigterm_as_interrupt() -> Callable[[], None]:
    """Make SIGTERM raise :class:`KeyboardInterrupt` in the main thread; returns the undo.

    Only the main thread can install a handler; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGTERM, _interrupt)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore
