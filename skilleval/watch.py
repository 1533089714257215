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

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from skilleval.engine.base import ModelSpec, Provider
from skilleval.engine.cache import CachingProvider, ResponseCache
from skilleval.engine.factory import create_provider
from skilleval.errors import FILE_CODES, Diagnostic, DiagnosticsError, SkillevalError
from skilleval.exitcodes import ExitCode
from skilleval.report import terminal
from skilleval.report.compare import Comparison, compare
from skilleval.report.outputs import builtin_formats, write_output
from skilleval.report.rerun import Reuse, delta_lines, reuse_lines, reuse_of
from skilleval.results.model import Run
from skilleval.runner.run import NoTestsSelected, RunOptions, RunOutcome, run_suite
from skilleval.runner.rundir import home_dir
from skilleval.suite.load import Overrides, load_suite
from skilleval.suite.model import Suite
from skilleval.suite.yamlio import display_path

if TYPE_CHECKING:
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers.api import BaseObserver, ObservedWatch

    from skilleval.engine.cache import ResponseCache

Echo = Callable[[str], None]
OutcomeKind = Literal["ran", "invalid", "deleted", "failed", "no_tests"]

REPORT_NAME = "report.html"
_WATCHED_EVENTS = frozenset({"created", "modified", "moved", "deleted", "closed"})


@dataclass(frozen=True, slots=True)
class WatchOptions:
    """How to load and run the watched suites."""

    overrides: Overrides = field(default_factory=Overrides)
    filters: tuple[str, ...] = ()
    jobs: int = 1
    home: Path | None = None
    """Where runs and the cache go; ``home_dir()`` when None."""
    debounce_s: float = 0.3
    """Quiet time after the last event before re-running: one save fires several events."""
    poll_s: float = 1.0
    """How often the loop re-checks its folders and any deleted file while idle."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one suite did after a change."""

    suite: Path
    kind: OutcomeKind
    changed: tuple[Path, ...]
    run: RunOutcome | None = None
    reuse: Reuse | None = None
    comparison: Comparison | None = None
    """Against the previous good run of the suite in this session; None for the first."""
    diagnostics: tuple[Diagnostic, ...] = ()
    seconds: float = 0.0


@dataclass
class _Entry:
    path: Path
    files: frozenset[Path]
    plugin_dirs: tuple[Path, ...] = ()
    previous: Run | None = None
    broken: str | None = None
    """The diagnostics of the last failed load; None while the suite is valid."""
    awaited: frozenset[str] = frozenset()
    """Files (or globs) the last failed load looked for and could not read."""
    missing: set[Path] = field(default_factory=set)
    pending: set[Path] = field(default_factory=set)
    stamps: dict[Path, tuple[int, int] | None] = field(default_factory=dict)
    """Each file's (mtime_ns, size) when last loaded, to catch edits made before watching."""

    def folders(self) -> set[Path]:
        return {f.parent for f in self.files if f not in self.plugin_dirs}

    def matches(self, path: Path) -> set[Path]:
        """The watched paths an event on ``path`` stands for (empty if it does not matter)."""
        hits = {f for f in self.files if f == path or path in f.parents}
        hits -= set(self.plugin_dirs)
        if _plugin_source(path) and any(d in path.parents for d in self.plugin_dirs):
            hits.add(path)
        if path.parent in self.folders() and any(
            fnmatch.fnmatch(path.name, Path(target).name) for target in self.awaited
        ):
            # A broken suite may be waiting for a file it could not find or read.
            hits.add(path)
        return hits


def _plugin_source(path: Path) -> bool:
    # Editors' lock and backup files (.#x.py, x.py~) and bytecode are not plugin sources.
    return (
        path.suffix == ".py"
        and not path.name.startswith((".", "#"))
        and "__pycache__" not in path.parts
    )


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _stderr(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


class Watcher:
    """Watch suites, re-run the ones a change affects, and print what changed.

    Args:
        suites: The suite files.
        options: Loading and running settings.
        echo: Where human output goes (one call per block of lines); stderr by default.

    Attributes:
        outcomes: Every :class:`Outcome` so far, oldest first (tests poll it).
    """

    def __init__(
        self, suites: Sequence[Path], options: WatchOptions | None = None, echo: Echo = _stderr
    ) -> None:
        self.options = options or WatchOptions()
        self.home = (self.options.home or home_dir()).resolve()
        self.echo = echo
        self.outcomes: list[Outcome] = []
        self._entries = [_Entry(p.resolve(), frozenset({p.resolve()})) for p in suites]
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._last_event = 0.0
        self._cache: ResponseCache | None = None
        self._models: dict[str, Provider] = {}
        self.ready = threading.Event()
        """Set once the observer is watching (tests edit files only after it)."""

    # -- events ------------------------------------------------------------------------------

    def handle(self, paths: Iterable[str | Path]) -> int:
        """Note changed paths; return how many suites they affect. Safe from any thread."""
        touched: set[int] = set()
        with self._lock:
            for raw in paths:
                path = Path(os.path.abspath(raw)).resolve()
                if path == self.home or self.home in path.parents:
                    continue
                for i, entry in enumerate(self._entries):
                    hits = entry.matches(path)
                    if hits:
                        entry.pending |= hits
                        touched.add(i)
            if touched:
                self._last_event = time.monotonic()
                self._wake.set()
        return len(touched)

    def due(self, now: float | None = None) -> bool:
        """True when changes are pending and the debounce period has passed."""
        now = time.monotonic() if now is None else now
        with self._lock:
            pending = any(e.pending for e in self._entries)
            return pending and now - self._last_event >= self.options.debounce_s

    def stop(self) -> None:
        """Make :meth:`serve` return (from any thread)."""
        self._stop.set()
        self._wake.set()

    # -- work --------------------------------------------------------------------------------

    def start(self, *, initial_run: bool = True) -> list[Outcome]:
        """Load every suite, and run each valid one unless ``initial_run`` is False."""
        done = []
        for entry in self._entries:
            done.append(self._process(entry, (), run=initial_run))
            entry.stamps = {f: _stamp(f) for f in entry.files if not f.is_dir()}
        return [o for o in done if o is not None]

    def run_once(self) -> list[Outcome]:
        """Process every pending change now, debounce or not; one outcome per affected suite."""
        done: list[Outcome] = []
        for entry in self._entries:
            with self._lock:
                changed, entry.pending = tuple(sorted(entry.pending)), set()
            if changed:
                outcome = self._process(entry, changed, run=True)
                if outcome is not None:
                    done.append(outcome)
        return done

    def _process(self, entry: _Entry, changed: tuple[Path, ...], *, run: bool) -> Outcome | None:
        started = time.perf_counter()
        name = display_path(entry.path)
        shown = ", ".join(display_path(p) for p in changed[:3])
        more = f" +{len(changed) - 3}" if len(changed) > 3 else ""
        cause = f" ← {shown}{more}" if changed else ""
        self.echo(f"\n{time.strftime('%H:%M:%S')} {name}{cause}")
        gone = [p for p in changed if p in entry.files and not p.exists()]
        with self._lock:
            entry.missing.update(gone)
        for path in gone:
            self.echo(f"  {display_path(path)} was deleted; watching for it to come back")
        if gone and all(p in gone or not p.exists() for p in changed):
            return self._record(Outcome(entry.path, "deleted", changed))
        for path in sorted(p for p in entry.missing if p.exists()):
            self.echo(f"  {display_path(path)} is back")
        try:
            suite, _ = load_suite(entry.path, self.options.overrides)
        except DiagnosticsError as exc:
            return self._invalid(entry, changed, exc)
        self._adopt(entry, suite)
        if not run:
            self.echo(f"  valid: {len(suite.tests)} test(s); waiting for a change")
            return None
        return self._run(entry, suite, changed, started)

    def _invalid(self, entry: _Entry, changed: tuple[Path, ...], exc: DiagnosticsError) -> Outcome:
        text = str(exc)
        n = len(exc.diagnostics)
        errors = f"{n} error{'s' if n != 1 else ''}"
        with self._lock:
            before, entry.broken = entry.broken, text
            entry.awaited = frozenset(
                d.target for d in exc.diagnostics if d.code in FILE_CODES and d.target
            )
        keep = (
            f"; keeping the last good results ({entry.previous.run_id})" if entry.previous else ""
        )
        if before is None:
            self.echo(f"{text}\n  {errors}{keep}; fix and save to re-run")
        elif text == before:
            self.echo(f"  still invalid: the same {errors}{keep}")
        else:
            # Always the diagnostics of this load, never those of an earlier one.
            self.echo(f"{text}\n  still invalid: {errors}{keep}; fix and save to re-run")
        return self._record(
            Outcome(entry.path, "invalid", changed, diagnostics=tuple(exc.diagnostics))
        )

    def _adopt(self, entry: _Entry, suite: Suite) -> None:
        with self._lock:
            entry.files = frozenset(suite.files) | {entry.path}
            entry.plugin_dirs = tuple(p.resolve() for p in suite.plugin_dirs)
            entry.missing &= entry.files
            entry.missing = {p for p in entry.missing if not p.exists()}
            entry.broken = None
            entry.awaited = frozenset()

    def _run(
        self, entry: _Entry, suite: Suite, changed: tuple[Path, ...], started: float
    ) -> Outcome:
        options, transient = self._run_options(suite)
        try:
            outcome = run_suite(suite, options)
        except NoTestsSelected:
            self.echo(f"  no tests match {', '.join(self.options.filters)}")
            return self._record(Outcome(entry.path, "no_tests", changed))
        except SkillevalError as exc:
            self.echo(f"  error: {exc}")
            return self._record(Outcome(entry.path, "failed", changed))
        except Exception:
            # A bug in skilleval: show it in full, but one bad run must not end the watch.
            self.echo(traceback.format_exc().rstrip())
            return self._record(Outcome(entry.path, "failed", changed))
        finally:
            for provider in transient:
                provider.close()
        if outcome.exit_code == ExitCode.INTERRUPTED:
            raise KeyboardInterrupt
        run = outcome.run
        report = outcome.run_dir.root / REPORT_NAME
        write_output(run, report, outcome.run_dir.jsonl_path, builtin_formats())
        reuse = reuse_of(run)
        comparison = compare(entry.previous, run) if entry.previous is not None else None
        seconds = time.perf_counter() - started
        verdict = terminal.render_terminal(run)
        text = reuse_lines(reuse) if changed else []
        if comparison is None:
            text.append(verdict)  # nothing to compare with yet: the full report, as `run` prints
        else:
            text += [*delta_lines(comparison), f"  {verdict.splitlines()[-1]}"]
        text.append(f"  report: {display_path(report)} · {seconds:.2f} s")
        self.echo("\n".join(text))
        if run.status == "complete":
            entry.previous = run
        return self._record(
            Outcome(entry.path, "ran", changed, outcome, reuse, comparison, seconds=seconds)
        )

    def _record(self, outcome: Outcome) -> Outcome:
        with self._lock:
            self.outcomes.append(outcome)
        return outcome

    # -- providers kept between runs ---------------------------------------------------------

    def _run_options(self, suite: Suite) -> tuple[RunOptions, list[Provider]]:
        """Options for one run, and the providers to close after it (all but loaded GGUFs)."""
        if self._cache is None:
            self._cache = ResponseCache(self.home / "cache.db")
        transient: list[Provider] = []
        # A fresh wrapper per run keeps each run's call counts its own; the model stays loaded.
        provider = CachingProvider(self._model(suite.model, transient), self._cache)
        judge = None
        if suite.judge is not None and suite.judge != suite.model:
            judge = CachingProvider(self._model(suite.judge, transient), self._cache)
        options = RunOptions(
            home=self.home,
            filters=self.options.filters,
            jobs=self.options.jobs,
            use_cache=True,
            provider=provider,
            judge_provider=judge,
        )
        return options, transient

    def _model(self, spec: ModelSpec, transient: list[Provider]) -> Provider:
        if spec.kind != "gguf":
            made = create_provider(spec, home=self.home, jobs=self.options.jobs)
            transient.append(made)
            return made
        # Loading a GGUF takes seconds; keep it loaded while its settings stay the same.
        key = json.dumps(spec.to_json(), sort_keys=True)
        if key not in self._models:
            self._models[key] = create_provider(spec, home=self.home, jobs=self.options.jobs)
        return self._models[key]

    def close(self) -> None:
        """Release loaded models and the cache."""
        for provider in self._models.values():
            provider.close()
        self._models.clear()
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    # -- the observer loop -------------------------------------------------------------------

    def folders(self) -> dict[Path, bool]:
        """Folders to watch, each with whether to watch it recursively.

        A folder that does not exist (yet) is replaced by its nearest existing ancestor, so
        its return is seen.
        """
        wanted: dict[Path, bool] = {}
        with self._lock:
            for entry in self._entries:
                for folder in entry.folders():
                    wanted.setdefault(folder, False)
                for folder in entry.plugin_dirs:
                    wanted[folder] = True
        out: dict[Path, bool] = {}
        for folder, recursive in wanted.items():
            target = folder
            while not target.is_dir() and target.parent != target:
                target, recursive = target.parent, False
            out[target] = out.get(target, False) or recursive
        return out

    def watched_files(self) -> int:
        with self._lock:
            return len(set[Path]().union(*(e.files for e in self._entries)))

    def serve(self) -> None:
        """Watch until :meth:`stop` or Ctrl-C (KeyboardInterrupt propagates to the caller)."""
        from watchdog.observers import Observer  # lazy: start-up time

        observer = Observer()
        handler = _forwarder(self)
        scheduled: dict[tuple[Path, bool], ObservedWatch] = {}
        _sync(observer, handler, scheduled, self.folders())
        observer.start()
        self._catch_up()
        n, folders = self.watched_files(), self.folders()
        self.echo(f"\nwatching {n} file(s) in {len(folders)} folder(s); Ctrl-C stops")
        self.ready.set()
        try:
            while not self._stop.is_set():
                self._wake.wait(self._timeout())
                self._wake.clear()
                self._returned()
                if self.due():
                    self.run_once()
                _sync(observer, handler, scheduled, self.folders())
        finally:
            observer.stop()
            observer.join(timeout=5)

    def _timeout(self) -> float:
        with self._lock:
            if not any(e.pending for e in self._entries):
                return self.options.poll_s
            left = self.options.debounce_s - (time.monotonic() - self._last_event)
        return max(0.01, left)

    def _catch_up(self) -> None:
        # Saves made while start() was running happened before any folder was watched.
        with self._lock:
            stale = [f for e in self._entries for f, was in e.stamps.items() if _stamp(f) != was]
        if stale:
            self.handle(stale)

    def _returned(self) -> None:
        # A file can come back inside a folder that was re-created before it was watched again.
        with self._lock:
            back = [p for e in self._entries for p in e.missing - e.pending if p.exists()]
        if back:
            self.handle(back)


def _forwarder(watcher: Watcher) -> FileSystemEventHandler:
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


def _sync(
    observer: BaseObserver,
    handler: FileSystemEventHandler,
    scheduled: dict[tuple[Path, bool], ObservedWatch],
    wanted: dict[Path, bool],
) -> None:
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
