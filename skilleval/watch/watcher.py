"""The :class:`Watcher`: pending changes per suite, debounced re-runs, providers kept loaded."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from skilleval.engine.base import ModelSpec, Provider
from skilleval.engine.cache import CachingProvider, ResponseCache
from skilleval.engine.factory import create_provider
from skilleval.errors import FILE_CODES, DiagnosticsError, SkillevalError
from skilleval.exitcodes import ExitCode
from skilleval.report import terminal
from skilleval.report.compare import compare
from skilleval.report.outputs import builtin_formats, write_output
from skilleval.report.rerun import delta_lines, reuse_lines, reuse_of
from skilleval.runner.run import NoTestsSelected, RunOptions, run_suite
from skilleval.runner.rundir import home_dir
from skilleval.suite.load import load_suite
from skilleval.suite.model import Suite
from skilleval.suite.yamlio import display_path
from skilleval.watch.observe import event_forwarder, sync_watches
from skilleval.watch.state import Echo, Outcome, WatchedSuite, WatchOptions, file_stamp

if TYPE_CHECKING:
    from watchdog.observers.api import ObservedWatch

REPORT_NAME = "report.html"


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
        self._entries = [WatchedSuite(p.resolve(), frozenset({p.resolve()})) for p in suites]
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
            entry.stamps = {f: file_stamp(f) for f in entry.files if not f.is_dir()}
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

    def _process(
        self, entry: WatchedSuite, changed: tuple[Path, ...], *, run: bool
    ) -> Outcome | None:
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

    def _invalid(
        self, entry: WatchedSuite, changed: tuple[Path, ...], exc: DiagnosticsError
    ) -> Outcome:
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

    def _adopt(self, entry: WatchedSuite, suite: Suite) -> None:
        with self._lock:
            entry.files = frozenset(suite.files) | {entry.path}
            entry.plugin_dirs = tuple(p.resolve() for p in suite.plugin_dirs)
            entry.missing &= entry.files
            entry.missing = {p for p in entry.missing if not p.exists()}
            entry.broken = None
            entry.awaited = frozenset()

    def _run(
        self, entry: WatchedSuite, suite: Suite, changed: tuple[Path, ...], started: float
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
            judge_check=self.options.judge_check,
            notice=lambda message: self.echo(f"  {message}"),
        )
        return options, transient

    def _model(self, spec: ModelSpec, transient: list[Provider]) -> Provider:
        if not spec.provider.capabilities.keep_loaded:
            made = create_provider(spec, home=self.home, jobs=self.options.jobs)
            transient.append(made)
            return made
        # Loading one takes seconds (a GGUF); keep it loaded while its settings stay the same.
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
        handler = event_forwarder(self)
        scheduled: dict[tuple[Path, bool], ObservedWatch] = {}
        sync_watches(observer, handler, scheduled, self.folders())
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
                sync_watches(observer, handler, scheduled, self.folders())
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
            stale = [
                f for e in self._entries for f, was in e.stamps.items() if file_stamp(f) != was
            ]
        if stale:
            self.handle(stale)

    def _returned(self) -> None:
        # A file can come back inside a folder that was re-created before it was watched again.
        with self._lock:
            back = [p for e in self._entries for p in e.missing - e.pending if p.exists()]
        if back:
            self.handle(back)
