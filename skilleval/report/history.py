"""The past runs of one suite, read from the runs folder: pass rates, lift and saturation.

A run belongs to a suite when its ``suite.path`` is the suite's display path, as ``power``
finds a suite's last run. Runs are listed oldest first. A folder that is not a run, or whose
results cannot be read, is skipped with a one-line note; a run that did not finish (no
``results.json``) is skipped too, since its figures cover only part of the suite.

A test is **saturated** when the suite is a capability suite and the test's pass^k on the
primary arm was 1 (every trial passed) in each of the last :data:`SATURATION_RUNS` runs that
ran it: it no longer measures progress, and belongs in a regression suite.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from skilleval.errors import SkillevalError
from skilleval.report import view
from skilleval.results.load import JSON_NAME, JSONL_NAME, parse_run
from skilleval.results.model import Run
from skilleval.runner.rundir import new_run_id
from skilleval.util.frozen import frozen
from skilleval.util.scrub import printable

SATURATION_RUNS = 3
"""Consecutive runs with pass^k = 1 after which a capability test counts as saturated."""

SHOWN_IN_REPORT = 20
"""Runs the HTML report's history reads and charts: the newest ones."""

_RUN_NAME = re.compile(r"^\d{8}-\d{6}-(?P<slug>[a-z0-9-]*)-[0-9a-f]{4}$")
_IGNORED = {"latest", "LATEST"}

Note = Callable[[str], None]


@frozen
class RunPoint:
    """One past run of the suite, reduced to what its history shows."""

    run_id: str
    started_at: str | None
    status: str
    type: str | None
    verdict: str
    """The report's verdict: PASSED, FAILED, REPORTED, INTERRUPTED."""
    model: str
    trials: int
    primary_arm: str
    pass_rates: Mapping[str, float | None]
    """Pass rate per arm, in the run's arm order."""
    lift: float | None
    lift_ci95: tuple[float, float] | None
    lift_verdict: str | None
    trigger_recall: float | None
    passed_all: frozenset[str]
    """Tests whose every trial passed on the primary arm (pass^k = 1)."""
    ran: frozenset[str]
    """Tests with a result on the primary arm."""

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "started_at": self.started_at,
            "status": self.status,
            "type": self.type,
            "verdict": self.verdict,
            "model": self.model,
            "trials": self.trials,
            "primary_arm": self.primary_arm,
            "pass_rates": dict(self.pass_rates),
            "lift": None
            if self.lift_verdict is None
            else {
                "lift": self.lift,
                "ci95": list(self.lift_ci95) if self.lift_ci95 else None,
                "verdict": self.lift_verdict,
            },
            "trigger_recall": self.trigger_recall,
        }


@frozen
class Saturated:
    """A capability test that passed every trial in each of its last runs."""

    test_id: str
    arm: str
    runs: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"test_id": self.test_id, "arm": self.arm, "runs": list(self.runs)}


@frozen
class Skipped:
    """A folder in the runs folder that could not be read as a run."""

    name: str
    reason: str

    @property
    def text(self) -> str:
        return f"skipped {self.name}: {self.reason}"


@frozen
class History:
    """A suite's runs, oldest first, and the tests that saturated."""

    suite: str
    runs: tuple[RunPoint, ...]
    saturated: tuple[Saturated, ...]
    skipped: tuple[Skipped, ...]

    @property
    def arms(self) -> list[str]:
        """Every arm any run had, in first-seen order."""
        return list(dict.fromkeys(arm for p in self.runs for arm in p.pass_rates))

    def to_json(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "runs": [p.to_json() for p in self.runs],
            "saturated": [s.to_json() for s in self.saturated],
            "saturation_runs": SATURATION_RUNS,
            "skipped": [{"run": s.name, "reason": s.reason} for s in self.skipped],
        }


def point(run: Run) -> RunPoint:
    """What the history keeps of one run."""
    primary = run.primary_arm
    rows = [r for r in run.summary.tests if r.arm == primary]
    model = run.environment.model if run.environment is not None else None
    lift = run.lift
    return RunPoint(
        run_id=run.run_id,
        started_at=run.timing.started_at,
        status=run.status,
        type=run.suite.type,
        verdict=view.verdict(run).label,
        model=view.model_label(model),
        trials=view.trials_of(run),
        primary_arm=primary,
        pass_rates={arm: s.pass_rate for arm, s in run.summary.arms.items()},
        lift=lift.lift if lift else None,
        lift_ci95=lift.ci95 if lift else None,
        lift_verdict=lift.verdict if lift else None,
        trigger_recall=run.trigger.recall if run.trigger else None,
        passed_all=frozenset(
            r.test_id for r in rows if r.trials and r.passed == r.trials and not r.errors
        ),
        ran=frozenset(r.test_id for r in rows),
    )


def saturated(runs: Sequence[RunPoint], window: int = SATURATION_RUNS) -> list[Saturated]:
    """Capability tests of the newest run whose last ``window`` runs all had pass^k = 1.

    Only complete runs count, and only when the newest of them is a capability suite: a
    regression suite's tests are already where a saturated test would move to.
    """
    done = [p for p in runs if p.status == "complete"]
    if not done or done[-1].type != "capability":
        return []
    newest = done[-1]
    found = []
    for test_id in sorted(newest.ran):
        last = [p for p in done if test_id in p.ran][-window:]
        if len(last) == window and all(test_id in p.passed_all for p in last):
            found.append(Saturated(test_id, newest.primary_arm, tuple(p.run_id for p in last)))
    return found


def _slug(suite_display: str) -> str | None:
    """The suite part of run folder names (``<stamp>-<slug>-<hex>``) for this suite."""
    found = _RUN_NAME.match(new_run_id(Path(suite_display).stem))
    return found.group("slug") if found else None


def _read(folder: Path, suite: str) -> Run | Skipped | None:
    """The run in ``folder`` if it is one of ``suite``; None if it is another suite's."""
    results = folder / JSON_NAME
    if not results.is_file():
        if (folder / JSONL_NAME).is_file():
            return Skipped(folder.name, "the run did not finish (no results.json)")
        return Skipped(folder.name, "not a run directory (no results.json or results.jsonl)")
    try:
        data = json.loads(results.read_text(encoding="utf-8"))
    except OSError as exc:
        return Skipped(folder.name, f"cannot read {JSON_NAME}: {exc.strerror or exc}")
    except (ValueError, RecursionError):
        return Skipped(folder.name, f"{JSON_NAME} is not valid JSON")
    recorded = data.get("suite") if isinstance(data, dict) else None
    if isinstance(recorded, dict) and recorded.get("path") != suite:
        return None
    if isinstance(data, dict) and isinstance(data.get("records"), list):
        # The history reads the aggregates only. Checking every record against the schema
        # is most of the cost of reading a run, and a report of this run checks them anyway.
        data["records"] = []
    try:
        return parse_run(data, f"{folder.name}/{JSON_NAME}")
    except SkillevalError as exc:
        return Skipped(folder.name, str(exc).splitlines()[0])


Order = tuple[str, float, str]


def _order(run: Run, folder: Path) -> Order:
    """Start time, then when results.json was written (start times are whole seconds)."""
    try:
        written = (folder / JSON_NAME).stat().st_mtime
    except OSError:
        written = float("inf")
    return (run.timing.started_at or "", written, run.run_id)


def collect(
    runs_dir: Path, suite: str, *, upto: Run | None = None, limit: int | None = None
) -> History:
    """The history of ``suite`` (a display path, as results record it) in ``runs_dir``.

    Args:
        runs_dir: The runs folder (``.skilleval/runs``).
        suite: The suite's display path.
        upto: A run to end the history with: later runs are left out and this one is used
            as given (the HTML report of a run shows the runs up to it).
        limit: Read only the newest ``limit`` runs (``upto`` included). Folders are read
            newest first by name, which starts with the run's UTC start time.
    """
    slug = _slug(suite)
    found: list[tuple[Order, Run]] = []
    skipped: list[Skipped] = []
    if upto is not None:
        found.append((_order(upto, runs_dir / upto.run_id), upto))
    for folder in reversed(_folders(runs_dir)):
        if limit is not None and len(found) >= limit:
            break
        named = _RUN_NAME.match(folder.name)
        if named and slug is not None and named.group("slug") != slug:
            continue  # another suite's run, by its folder name: not worth opening
        if upto is not None and named and folder.name[:15] > upto.run_id[:15]:
            continue  # started after the run the history ends with
        if upto is not None and folder.name == upto.run_id:
            continue
        got = _read(folder, suite)
        if isinstance(got, Skipped):
            skipped.append(got)
        elif got is not None and got.suite.path == suite:
            found.append((_order(got, folder), got))
    if upto is not None:
        last = found[0][0]
        found = [(key, run) for key, run in found if key <= last]
    found.sort(key=lambda pair: pair[0])
    points = [point(run) for _, run in found]
    skipped.reverse()
    return History(suite, tuple(points), tuple(saturated(points)), tuple(skipped))


def _folders(runs_dir: Path) -> list[Path]:
    try:
        entries = sorted(runs_dir.iterdir())
    except OSError:
        return []
    return [p for p in entries if p.name not in _IGNORED and p.is_dir() and not p.is_symlink()]


# --------------------------------------------------------------------------- text


def _date(started_at: str | None) -> str:
    return "—" if not started_at else started_at.replace("T", " ")[:16]


def render_text(history: History) -> str:
    """The history as a table, oldest first, then the saturated tests."""
    if not history.runs:
        return f"{history.suite}: no finished runs recorded"
    arms = history.arms
    headers = ["run", "date (UTC)", "verdict", *[f"[{a}]" for a in arms], "lift", "lift verdict"]
    recall = any(p.trigger_recall is not None for p in history.runs)
    if recall:
        headers.append("recall")
    rows = []
    for p in history.runs:
        cells = [p.run_id, _date(p.started_at), p.verdict]
        cells += [view.pct(p.pass_rates[a]) if a in p.pass_rates else "" for a in arms]
        cells += [view.signed_pct(p.lift, 0) if p.lift_verdict else "", p.lift_verdict or ""]
        if recall:
            cells.append("" if p.trigger_recall is None else f"{p.trigger_recall:.2f}")
        rows.append(cells)
    from tabulate import tabulate  # lazy: start-up time

    n = len(history.runs)
    out = [
        f"{history.suite}: {n} run{'s' if n != 1 else ''}, oldest first",
        tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True),
    ]
    out += saturated_lines(history)
    return printable("\n".join(out))


def saturated_lines(history: History) -> list[str]:
    if not history.saturated:
        return []
    lines = [
        f"saturated: pass^k = 1 in each of the last {SATURATION_RUNS} runs; "
        "ready to move into a regression suite:"
    ]
    lines += [f"  {s.test_id} [{s.arm}]" for s in history.saturated]
    return lines
