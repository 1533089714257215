"""The watchdog side of ``skilleval watch``: forward file events, keep folder watches in step."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers.api import BaseObserver, ObservedWatch

    from skilleval.watch.watcher import Watcher

_WATCHED_EVENTS = frozenset({"created", "modified", "moved", "deleted", "closed"})


def event_forwarder(watcher: Watcher) -> FileSystemEventHandler:
    """A watchdog handler that passes each event that may change a file to ``watcher.handle``."""
    from watchdog.events import FileSystemEvent, FileSystemEventHandler  # lazy: start-up time

    class Forward(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            # Reads fire opened/closed_no_write: loading a suite must not trigger a run.
            if event.event_type not in _WATCHED_EVENTS:
                return
            if event.is_directory and event.event_type in ("modified", "closed"):
                return
            paths = [os.fsdecode(event.src_path)]
            if event.dest_path:
                paths.append(os.fsdecode(event.dest_path))
            watcher.handle(paths)

    return Forward()


def sync_watches(
    observer: BaseObserver,
    handler: FileSystemEventHandler,
    scheduled: dict[tuple[Path, bool], ObservedWatch],
    wanted: dict[Path, bool],
) -> None:
    """Make ``observer``'s watches those in ``wanted`` (folder: recursive), keeping
    ``scheduled`` in step: stale or vanished folders are unwatched, new ones watched."""
    for key in [k for k in scheduled if wanted.get(k[0]) != k[1] or not k[0].is_dir()]:
        # A folder that went away may have taken its watch with it.
        with contextlib.suppress(KeyError, OSError):
            observer.unschedule(scheduled.pop(key))
    for folder, recursive in wanted.items():
        if (folder, recursive) in scheduled:
            continue
        # Gone between the check and the call: the next pass watches its parent instead.
        with contextlib.suppress(OSError):
            scheduled[(folder, recursive)] = observer.schedule(
                handler, str(folder), recursive=recursive
            )
