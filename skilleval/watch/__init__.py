"""``skilleval watch``: re-run a suite when a file it read changes, and say what changed.

How a save becomes a report::

    watchdog event ──handle()──▶ pending paths per suite (debounced)
                   ──run_once()──▶ re-validate ──▶ run_suite (cache on)
                                 ──▶ reuse counts, delta against the last run, report.html

A suite is watched through the folders of every file it read (``Suite.files``), plus its plugin
folders recursively. Only events on those files, or on ``*.py`` files inside a plugin folder,
count; the run's own output and the cache never trigger another run. The response cache makes
the re-run incremental: requests whose messages did not change are answered from it.

:class:`Watcher` holds the state and does the work; :meth:`Watcher.serve` is the real observer
loop around it. Tests drive ``handle()`` and ``run_once()`` directly, or ``serve()`` in a thread.
"""

from skilleval.watch.state import Echo, Outcome, OutcomeKind, WatchOptions
from skilleval.watch.watcher import REPORT_NAME, Watcher

__all__ = [
    "REPORT_NAME",
    "Echo",
    "Outcome",
    "OutcomeKind",
    "WatchOptions",
    "Watcher",
]
