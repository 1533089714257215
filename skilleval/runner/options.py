"""How to run, from the command line, and what a finished run hands back."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skilleval.api import Capabilities
from skilleval.engine.base import Provider
from skilleval.exitcodes import ExitCode
from skilleval.results.model import Run
from skilleval.results.records import Record
from skilleval.runner.rundir import RunDir
from skilleval.runner.shard import Shard

Progress = Callable[[Record, int, int], None]


@dataclass
class RunOptions:
    """How to run, from the command line."""

    home: Path
    filters: tuple[str, ...] = ()
    jobs: int = 1
    use_cache: bool = True
    progress: Progress | None = None
    provider: Provider | None = None
    """Use this provider instead of building one (tests and watch mode)."""
    capabilities: Capabilities | None = None
    """What ``provider`` declares about its calls; None: what the suite model's provider
    registration declares."""
    judge_provider: Provider | None = None
    """Use this provider as the judge instead of building one."""
    resume: Path | None = None
    """Finish this interrupted run directory instead of starting a new one."""
    force: bool = False
    """Resume even when the suite changed since the run started."""
    warn: Callable[[str], None] | None = None
    """Where to send warnings (a skipped corrupt line …)."""
    judge_check: bool = True
    """Measure the judge's fitness the first time a judge model grades a run (then cached)."""
    notice: Callable[[str], None] | None = None
    """Where to say what a long step is doing (the judge-fitness measurement)."""
    shard: Shard | None = None
    """Run only this part of the tests (``--shard K/N``)."""
    shard_costs: Mapping[str, float] | None = None
    """Each test's recorded duration from an earlier run, to balance the shards by."""
    overrides: Mapping[str, Any] = field(default_factory=dict)
    """The command-line settings the suite was loaded with, recorded for ``merge``."""


@dataclass
class RunOutcome:
    """A finished (or interrupted) run."""

    run: Run
    run_dir: RunDir
    exit_code: ExitCode
    records: list[Record] = field(default_factory=list)
