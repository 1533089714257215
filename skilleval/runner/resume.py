"""Finishing an interrupted run: what it already did, and whether it is still the same suite.

A run writes ``run.json`` (its manifest) before the first call and appends each finished
result to ``results.jsonl``, flushed and synced. After a crash — even ``kill -9`` — the
finished lines are intact except perhaps a half-written last one, which is skipped with a
warning, and ``--resume`` runs only the jobs that have no line yet.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from skilleval.errors import UsageError
from skilleval.results.load import parse_record
from skilleval.results.records import Record
from skilleval.results.write import record_line
from skilleval.runner.rundir import RunDir
from skilleval.suite.model import Suite

MANIFEST_VERSION = 1


def fingerprint(suite: Suite) -> str:
    """A digest of every file the suite reads plus the settings that shape its jobs."""
    digest = hashlib.sha256()
    for path in sorted(suite.files):
        if path.is_file():
            digest.update(str(path).encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    settings = {
        "model": suite.model.to_json(),
        "judge": suite.judge.to_json() if suite.judge else None,
        "decoding": suite.decoding.to_json(),
        "trials": suite.trials,
        "arms": list(suite.arms),
    }
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def manifest(suite: Suite, filters: Sequence[str]) -> dict[str, Any]:
    return {
        "version": MANIFEST_VERSION,
        "suite": str(suite.path.resolve()),
        "fingerprint": fingerprint(suite),
        "filters": list(filters),
    }


def check_manifest(run_dir: RunDir, current: dict[str, Any], *, force: bool) -> None:
    """Refuse to resume a run of another suite, or of this suite after it changed."""
    path = run_dir.root / "run.json"
    if not path.is_file():
        raise UsageError(f"{run_dir.root} is not a skilleval run directory (no run.json)")
    saved = json.loads(path.read_text(encoding="utf-8"))
    if force:
        return
    if saved.get("suite") != current["suite"]:
        raise UsageError(
            f"{run_dir.root} is a run of {saved.get('suite')}, not {current['suite']}; "
            "pass --force to resume it anyway"
        )
    if saved.get("fingerprint") != current["fingerprint"]:
        raise UsageError(
            f"the suite or a file it reads changed since {run_dir.root.name} started; "
            "resuming would mix results of two versions (pass --force to do it anyway)"
        )
    if saved.get("filters") != current["filters"]:
        raise UsageError(
            f"{run_dir.root.name} ran with filters {saved.get('filters')}, "
            f"not {current['filters']}; pass the same -k options, or --force"
        )


def finished_records(
    run_dir: RunDir, warn: Callable[[str], None] | None = None
) -> dict[tuple[str, str, int], Record]:
    """The results already written; a corrupt line is skipped with a warning naming it."""
    out: dict[tuple[str, str, int], Record] = {}
    path: Path = run_dir.jsonl_path
    if not path.exists():
        return out
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = parse_record(line)
        except (ValueError, RecursionError) as exc:
            if warn is not None:
                warn(f"{path}:{number}: skipping a corrupt line ({type(exc).__name__})")
            continue
        out[record.key] = record
    _rewrite(path, out)
    return out


def _rewrite(path: Path, records: dict[tuple[str, str, int], Record]) -> None:
    # Drop the torn tail, so the lines appended next start on a line of their own.
    tmp = path.with_suffix(".jsonl.tmp")
    tmp.write_text(
        "".join(record_line(r) for r in records.values()),
        encoding="utf-8",
    )
    tmp.replace(path)
