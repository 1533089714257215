"""The one loader of results: a run directory, ``results.json`` or ``results.jsonl`` → :class:`Run`.

``results.json`` is the run's own document and is used whenever it exists. It is checked
against ``results.schema.json`` before anything reads it, so a damaged file is refused with
the places it departs from the format. When it is missing, because the process was killed
before the end, the run is rebuilt from the records that ``results.jsonl`` streamed: a corrupt
or half-written line is skipped with a warning naming it, the figures are recomputed, and the
run is marked ``incomplete`` with a note, since neither the environment nor the gate was
recorded.
"""

from __future__ import annotations

import datetime as dt
import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from skilleval.errors import DecodeError, InvalidInputError, UsageError
from skilleval.results.codec import decode
from skilleval.results.model import RESULTS_VERSION, Calls, Run, SuiteInfo, Timing
from skilleval.results.records import ARMS, Record
from skilleval.results.summary import summarize
from skilleval.suite.schema import is_valid, load_schema, validator_for
from skilleval.version import __version__

JSON_NAME = "results.json"
JSONL_NAME = "results.jsonl"
SCHEMA_NAME = "results.schema.json"
SHOWN_PROBLEMS = 5

Warn = Callable[[str], None]


class ReportWarning(UserWarning):
    """A results file could be read only in part."""


def _default_warn(message: str) -> None:
    warnings.warn(message, ReportWarning, stacklevel=3)


def resolve_run(path: Path | str) -> Path:
    """The results file to read for ``path``: a run directory, ``runs/latest`` or a file.

    Args:
        path: A run directory, the runs folder (its latest run is used), ``runs/latest``, or
            a ``results.json`` / ``results.jsonl`` file.

    Returns:
        ``results.json`` when it exists beside or inside ``path``, else ``results.jsonl``.

    Raises:
        UsageError: Nothing readable is there.
    """
    given = Path(path)
    target = _follow_latest(given)
    if target.is_file():
        sibling = target.with_name(JSON_NAME)
        if target.name == JSONL_NAME and sibling.is_file():
            return sibling
        return target
    if not target.is_dir():
        raise UsageError(
            f"no run at {given}: expected a run directory, a results.json or a results.jsonl"
        )
    for name in (JSON_NAME, JSONL_NAME):
        if (target / name).is_file():
            return target / name
    if (target / "latest").exists() or (target / "LATEST").is_file():
        return resolve_run(target / "latest")
    raise UsageError(f"{given} holds no {JSON_NAME} or {JSONL_NAME}: it is not a run directory")


def _follow_latest(path: Path) -> Path:
    marker = path.parent / "LATEST"
    if path.name == "latest" and not path.exists() and marker.is_file():
        # Without symlink support the runner leaves the newest run's name in runs/LATEST.
        return path.parent / marker.read_text(encoding="utf-8").strip()
    return path


def load_run(path: Path | str, *, on_warning: Warn | None = None) -> Run:
    """Load the results of a run.

    Args:
        path: Anything :func:`resolve_run` accepts.
        on_warning: Called with each warning (a skipped line, a fallback). By default each one
            is issued as a :class:`ReportWarning`.

    Returns:
        The run. One rebuilt from ``results.jsonl`` has status ``incomplete``, ``notes``
        saying why, and no ``environment`` or ``gate``.

    Raises:
        UsageError: The path holds no run, or it cannot be read.
        InvalidInputError: The file is not a skilleval results file, it
            was written in a results format version this skilleval does not know, or it
            departs from ``results.schema.json`` (the message names where).
    """
    warn = on_warning or _default_warn
    source = resolve_run(path)
    if source.name.endswith(".jsonl"):
        return rebuild_from_jsonl(source, warn)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:
        sibling = source.with_name(JSONL_NAME)
        if sibling.is_file():
            warn(f"{source} is not valid JSON ({exc}); rebuilding the run from {sibling}")
            return rebuild_from_jsonl(sibling, warn)
        raise InvalidInputError(f"{source} is not valid JSON: {exc}") from None
    return parse_run(data, source)


def parse_run(data: Any, source: Path | str) -> Run:
    """Check JSON data against the results format and build the typed run from it.

    Raises:
        InvalidInputError: As for :func:`load_run`.
    """
    check_version(data, source)
    problems = validate_document(data)
    if problems:
        shown = problems[:SHOWN_PROBLEMS]
        more = len(problems) - len(shown)
        raise InvalidInputError(
            f"{source} is not a valid skilleval results file ({len(problems)} "
            f"problem{'s' if len(problems) != 1 else ''}):\n  "
            + "\n  ".join(shown)
            + (f"\n  … and {more} more" if more else "")
        )
    try:
        return decode(Run, data)
    except DecodeError as exc:
        raise InvalidInputError(f"{source} is not a valid skilleval results file: {exc}") from None


def check_version(data: Any, source: Path | str) -> None:
    """Refuse anything but a results document in a format version this skilleval reads.

    Raises:
        InvalidInputError: Naming the version found, and what to do about it.
    """
    if not isinstance(data, dict) or "records" not in data:
        raise InvalidInputError(f"{source} is not a skilleval results file")
    version = data.get("version")
    if isinstance(version, int) and not isinstance(version, bool):
        if version == RESULTS_VERSION:
            return
        if version > RESULTS_VERSION:
            raise InvalidInputError(
                f"{source} uses results format version {version}, written by a newer skilleval; "
                f"skilleval {__version__} reads version {RESULTS_VERSION}: upgrade skilleval"
            )
    raise InvalidInputError(
        f"{source} uses an unknown results format version {version!r}; "
        f"skilleval {__version__} reads version {RESULTS_VERSION}"
    )


def validate_document(doc: Mapping[str, Any]) -> list[str]:
    """Every way ``doc`` departs from ``results.schema.json``, as ``path: message`` lines.

    The compiled check answers for a valid document (the usual case: a history of past
    runs); jsonschema is asked only to explain what is wrong.
    """
    schema = load_schema(SCHEMA_NAME)
    if is_valid(schema, doc):
        return []
    problems = []
    for error in validator_for(schema).iter_errors(doc):
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        message = error.message if len(error.message) <= 160 else error.message[:159] + "…"
        problems.append(f"{where}: {message}")
    return sorted(problems)


def parse_record(text: str) -> Record:
    """One line of ``results.jsonl``.

    Raises:
        ValueError: The line is not a record (its message says why).
    """
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return decode(Record, data)


def read_records(path: Path, warn: Warn) -> list[Record]:
    """Every readable record of a results.jsonl; the last copy wins for a repeated key."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    found: dict[tuple[str, str, int], Record] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = parse_record(line)
        except (ValueError, RecursionError) as exc:
            warn(f"{path}:{number}: skipped a corrupt line ({_short(exc)})")
            continue
        found[record.key] = record
    return list(found.values())


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 80 else text[:79] + "…"


def _started_at(run_id: str) -> str | None:
    try:
        stamp = dt.datetime.strptime(run_id[:15], "%Y%m%d-%H%M%S").replace(tzinfo=dt.UTC)
    except ValueError:
        return None
    return stamp.isoformat(timespec="seconds")


def _calls(records: Sequence[Record]) -> Calls:
    stats = [r.stats for r in records if r.stats is not None]
    fresh = [s for s in stats if not s.cached]
    return Calls(
        model_calls=len(fresh),
        cache_hits=len(stats) - len(fresh),
        prompt_tokens=sum(s.prompt_tokens for s in stats),
        completion_tokens=sum(s.completion_tokens for s in stats),
        tokens_evaluated=sum(s.tokens_evaluated for s in fresh),
        generation_tokens_per_s=None,
    )


def rebuild_from_jsonl(path: Path, warn: Warn | None = None) -> Run:
    """A run holding what a results.jsonl kept, marked incomplete.

    Args:
        path: The results.jsonl file.
        warn: Called for each skipped line.
    """
    warn = warn or _default_warn
    records = read_records(path, warn)
    seen = {r.arm for r in records}
    arms = [a for a in ARMS if a in seen] + sorted(seen - set(ARMS)) or ["default"]
    run_id = path.parent.name if path.name == JSONL_NAME else path.stem
    n = len(records)
    note = (
        f"{path.name} was read because the run's {JSON_NAME} is missing: the run did not finish, "
        f"so this shows the {n} result{'s' if n != 1 else ''} it streamed, with no gate verdict"
    )
    trials = max((r.trial + 1 for r in records), default=None)
    return Run(
        version=RESULTS_VERSION,
        skilleval=None,
        run_id=run_id,
        status="incomplete",
        notes=(note,),
        suite=SuiteInfo(
            path=None,
            description=None,
            type=None,
            threshold=None,
            trials=trials,
            tests=len({r.test_id for r in records}),
        ),
        environment=None,
        skill=None,
        judge=None,
        arms=tuple(arms),
        primary_arm="on" if "on" in arms else arms[0],
        records=tuple(records),
        summary=summarize(records, arms),
        lift=None,
        trigger=None,
        reliability=None,
        overfit=None,
        calls=_calls(records),
        gate=None,
        timing=Timing(started_at=_started_at(run_id), duration_s=None),
    )
