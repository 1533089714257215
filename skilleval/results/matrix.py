"""The typed results of a side-by-side run: one column per model, each a whole run.

Each model's run is written as usual (its own run directory, ``results.json`` and report);
the matrix holds what is compared across them: each column's summary, lift, trigger block and
gate, and a pointer to its run directory. ``matrix.json`` is written by
:func:`skilleval.results.write.dumps_matrix` through the same codec as ``results.json``.
"""

from __future__ import annotations

from dataclasses import field
from typing import Literal

from skilleval.results.blocks import Lift, Summary, Trigger
from skilleval.results.codec import OMIT_EMPTY, meta
from skilleval.results.model import Gate, ModelError, ModelInfo, Run, SkillInfo, SuiteInfo, Timing
from skilleval.util.frozen import frozen

MATRIX_VERSION = 1

ColumnStatus = Literal["complete", "interrupted", "incomplete", "error"]


@frozen
class Column:
    """One model's run, as the matrix compares it."""

    label: str = field(metadata=meta("How the model is named in the suite (its column head)."))
    model: ModelInfo | ModelError | None
    status: ColumnStatus = field(
        metadata=meta("The run's status, or `error` when the model could not run at all.")
    )
    error: str | None = field(default=None, metadata=meta(omit=OMIT_EMPTY))
    run_id: str | None = None
    run_dir: str | None = field(default=None, metadata=meta("Where the whole run is written."))
    primary_arm: str | None = None
    summary: Summary | None = None
    lift: Lift | None = None
    trigger: Trigger | None = None
    gate: Gate | None = None
    exit_code: int = field(default=0, metadata=meta(minimum=0))

    @classmethod
    def of_run(cls, label: str, run: Run, run_dir: str, exit_code: int) -> Column:
        model = run.environment.model if run.environment is not None else None
        return cls(
            label=label,
            model=model,
            status=run.status,
            run_id=run.run_id,
            run_dir=run_dir,
            primary_arm=run.primary_arm,
            summary=run.summary,
            lift=run.lift,
            trigger=run.trigger,
            gate=run.gate,
            exit_code=exit_code,
        )


@frozen
class Matrix:
    """Every model of a side-by-side run, in the suite's column order."""

    version: int = field(metadata=meta("The matrix format's version.", minimum=1))
    kind: Literal["matrix"]
    skilleval: str
    suite: SuiteInfo
    skill: SkillInfo | None
    arms: tuple[str, ...]
    columns: tuple[Column, ...] = field(metadata=meta(minItems=1))
    exit_code: int = field(metadata=meta("The exit code of the whole run.", minimum=0))
    timing: Timing

    def test_ids(self) -> tuple[str, ...]:
        """Every test id, in the first column's order, then any only later columns have."""
        seen: dict[str, None] = {}
        for column in self.columns:
            for row in column.summary.tests if column.summary else ():
                seen.setdefault(row.test_id, None)
        return tuple(seen)
