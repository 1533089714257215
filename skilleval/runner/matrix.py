"""Run a suite on several models side by side: one whole run per model, then the matrix.

Data flow::

    Suite (models: A, B, …) ──columns──▶ one-model suites
        ──run_suite, one after another──▶ a run directory each (as a one-model run)
        ──Column.of_run──▶ Matrix ──▶ <home>/matrices/<id>/matrix.json, exit code

Models run one after another, not interleaved, so each keeps its own prompt-prefix cache warm
and only one model is in memory at a time. A model that cannot load becomes an ``error``
column; the others still run, and their results are kept.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from skilleval.errors import InstallationError, NoTestsSelected, SkillevalError, StorageError
from skilleval.exitcodes import ExitCode
from skilleval.results.matrix import MATRIX_VERSION, Column, Matrix
from skilleval.results.model import SuiteInfo, Timing
from skilleval.results.write import dumps_matrix, write_atomic
from skilleval.runner.document import skill_info
from skilleval.runner.options import RunOptions, RunOutcome
from skilleval.runner.plan import select
from skilleval.runner.run import run_suite
from skilleval.runner.rundir import new_run_id
from skilleval.suite.model import Suite
from skilleval.version import __version__

# How bad each ending is, for the exit code of the whole matrix: the worst column wins.
_SEVERITY = {
    ExitCode.OK: 0,
    ExitCode.GATE_FAILED: 1,
    ExitCode.RUNTIME: 2,
    ExitCode.INTERRUPTED: 3,
}


@dataclass
class MatrixOutcome:
    """A finished side-by-side run: the matrix, where it is written, and each model's run."""

    matrix: Matrix
    path: Path
    exit_code: ExitCode
    runs: list[RunOutcome | None] = field(default_factory=list)
    """Each column's run, or None for a model that could not run."""


ColumnStarted = Callable[[int, int, str], None]
"""Told (index, count, label) before each model runs."""


def run_matrix(
    suite: Suite, options: RunOptions, started_column: ColumnStarted | None = None
) -> MatrixOutcome:
    """Run every model of ``suite`` in column order and write ``matrix.json``.

    Raises:
        NoTestsSelected: The filters match no test (checked before any model runs).
    """
    if not select(suite.tests, options.filters):
        raise NoTestsSelected(", ".join(options.filters))
    started = dt.datetime.now(dt.UTC)
    t0 = time.perf_counter()
    columns: list[Column] = []
    runs: list[RunOutcome | None] = []
    codes: list[ExitCode] = []
    suites = suite.columns()
    for i, column_suite in enumerate(suites):
        label = column_suite.model.label
        if started_column is not None:
            started_column(i, len(suites), label)
        try:
            outcome = run_suite(column_suite, replace(options, resume=None))
        except (StorageError, InstallationError, KeyboardInterrupt):
            # A full disk, or a llama.cpp that crashes on this CPU: no column can run.
            raise
        except SkillevalError as exc:
            # The model did not load (or its run could not start): an error column.
            columns.append(Column(label=label, model=None, status="error", error=str(exc)))
            runs.append(None)
            codes.append(ExitCode.RUNTIME)
            continue
        runs.append(outcome)
        codes.append(outcome.exit_code)
        columns.append(
            Column.of_run(label, outcome.run, str(outcome.run_dir.root), int(outcome.exit_code))
        )
        if outcome.exit_code == ExitCode.INTERRUPTED:
            break
    code = max(codes, key=lambda c: _SEVERITY.get(c, 2))
    tests = len(select(suite.tests, options.filters))
    matrix = Matrix(
        version=MATRIX_VERSION,
        kind="matrix",
        skilleval=__version__,
        suite=SuiteInfo(
            path=suite.display,
            description=suite.description,
            type=suite.type,
            threshold=suite.threshold,
            trials=suite.trials,
            tests=tests,
        ),
        skill=skill_info(suite),
        arms=suite.arms,
        columns=tuple(columns),
        exit_code=int(code),
        timing=Timing(
            started_at=started.isoformat(timespec="seconds"),
            duration_s=round(time.perf_counter() - t0, 3),
        ),
    )
    path = _write(options.home, suite, matrix)
    return MatrixOutcome(matrix, path, code, runs)


def _write(home: Path, suite: Suite, matrix: Matrix) -> Path:
    """``<home>/matrices/<id>/matrix.json``; the folder is returned."""
    folder = home / "matrices" / new_run_id(suite.path.stem)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / "matrix.json", dumps_matrix(matrix))
    except OSError as exc:
        raise StorageError(
            f"cannot write {folder / 'matrix.json'}: {exc.strerror or exc}"
        ) from None
    return folder
