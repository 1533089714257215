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
from skilleval.runner.rundir import RunDir, write_atomically
from skilleval.suite.model import Suite
from skilleval.util.scrub import without_surrogates

MANIFEST_VERSION = 1


_SETTING_NAMES = {
    "model": ("model", "two models", "--model"),
    "judge": ("judge", "two judges", "--judge-model"),
    "decoding": ("decoding", "two decodings", "--seed"),
    "trials": ("trials", "two trial counts", "--trials"),
    "arms": ("arms", "two sets of arms", None),
}
"""Each setting a resumed run must share: its name, what mixing would mean, its option."""


def settings(suite: Suite) -> dict[str, Any]:
    """The settings that shape a run's jobs and answers, as plain JSON."""
    shaped = {
        "model": suite.model.to_json(),
        "judge": suite.judge.to_json() if suite.judge else None,
        "decoding": suite.decoding.to_json(),
        "trials": suite.trials,
        "arms": list(suite.arms),
    }
    # Through JSON, so a saved manifest and a fresh one compare equal.
    loaded: dict[str, Any] = json.loads(json.dumps(shaped, sort_keys=True, default=str))
    return loaded


def fingerprint(suite: Suite) -> str:
    """A digest of every file the suite reads plus the settings that shape its jobs."""
    digest = hashlib.sha256()
    for path in sorted(suite.files):
        if path.is_file():
            digest.update(str(path).encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    digest.update(json.dumps(settings(suite), sort_keys=True, default=str).encode())
    return digest.hexdigest()


def manifest(suite: Suite, filters: Sequence[str]) -> dict[str, Any]:
    return {
        "version": MANIFEST_VERSION,
        "suite": str(suite.path.resolve()),
        "fingerprint": fingerprint(suite),
        "filters": list(filters),
        "settings": settings(suite),
    }


MANIFEST_MAX_BYTES = 16 * 1024 * 1024
"""A run manifest larger than this is not one skilleval wrote."""


def read_manifest(root: Path) -> dict[str, Any]:
    """A run directory's ``run.json``, checked: a mapping naming its suite.

    Raises:
        UsageError: It is missing, unreadable, damaged (not JSON, nested past any sense,
            too large) or not a run manifest; one line saying the run cannot be resumed.
    """
    path = root / "run.json"
    if not path.is_file():
        raise UsageError(f"{root} is not a skilleval run directory (no run.json)")
    try:
        if path.stat().st_size > MANIFEST_MAX_BYTES:
            raise ValueError("larger than any run manifest")
        saved = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constants)
    except (OSError, ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        reason = " ".join(reason.split())[:200]
        raise UsageError(f"{path} cannot be read, so the run cannot be resumed: {reason}") from None
    if not isinstance(saved, dict) or not isinstance(saved.get("suite"), str):
        raise UsageError(f"{path} is not a run manifest, so the run cannot be resumed")
    return saved


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def check_manifest(run_dir: RunDir, current: dict[str, Any], *, force: bool) -> None:
    """Refuse to resume a run of another suite, or of this suite after it changed, or one
    whose manifest is damaged."""
    saved = read_manifest(run_dir.root)
    if force:
        return
    if saved.get("suite") != current["suite"]:
        raise UsageError(
            f"{run_dir.root} is a run of {saved.get('suite')}, not {current['suite']}; "
            "pass --force to resume it anyway"
        )
    changed = _changed_setting(saved.get("settings"), current["settings"])
    if changed is not None:
        raise UsageError(f"{run_dir.root.name} {changed}")
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


def _changed_setting(saved: Any, current: dict[str, Any]) -> str | None:
    """The first setting that differs, said in words, or None (a manifest without settings
    predates them; its fingerprint still catches the change)."""
    if not isinstance(saved, dict):
        return None
    for key, (name, mixed, option) in _SETTING_NAMES.items():
        if saved.get(key) != current.get(key):
            how = f"resume with the same {option}" if option else "resume the same suite"
            return (
                f"ran with {name} {_shown(saved.get(key))}, not {_shown(current.get(key))}; "
                f"resuming would mix results of {mixed} ({how}, or pass --force)"
            )
    return None


def _shown(value: Any) -> str:
    if isinstance(value, dict) and "provider" in value:
        provider, label = str(value["provider"]), value.get("label")
        return f"{provider} {label}" if label and label != provider else provider
    return json.dumps(value, sort_keys=True)


def finished_records(
    run_dir: RunDir, warn: Callable[[str], None] | None = None
) -> dict[tuple[str, str, int], Record]:
    """The results already written; a corrupt line is skipped with a warning naming it."""
    out: dict[tuple[str, str, int], Record] = {}
    path: Path = run_dir.jsonl_path
    if not path.exists():
        return out
    # A line torn by a crash or a full disk may end inside a UTF-8 character: replaced, the
    # line fails to parse below and is skipped like any other torn line.
    text = path.read_text(encoding="utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), 1):
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
    text = "".join(record_line(r) for r in records.values())
    write_atomically(path, without_surrogates(text), path.parent)
