"""The watch session's data: its options, one suite's outcome, and each watched suite's state."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from skilleval.errors import Diagnostic
from skilleval.report.compare import Comparison
from skilleval.report.rerun import Reuse
from skilleval.results.model import Run
from skilleval.runner.run import RunOutcome
from skilleval.suite.load import Overrides
from skilleval.util.frozen import frozen

Echo = Callable[[str], None]
OutcomeKind = Literal["ran", "invalid", "deleted", "failed", "no_tests"]


@frozen
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
    judge_check: bool = True
    """Measure a judge model's fitness the first time it grades (then cached)."""


@frozen
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
class WatchedSuite:
    """One suite under watch: the files it read, its last good run, and the changes pending."""

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


def file_stamp(path: Path) -> tuple[int, int] | None:
    """The file's (mtime_ns, size), or None when it cannot be read."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)
