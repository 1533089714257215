"""Put the shards of one run back together (``skilleval merge``).

The parts are checked first: each must be a shard's run directory, all of the same suite
(its digest), model, decoding, base seed, trials, arms, filters and skilleval version, with
every shard 1..N present once and no test in two of them. The records are then streamed from
each part's ``results.jsonl`` into one new run directory, in the order a whole run writes
them, and every aggregate is recomputed from the union by the code a whole run uses
(:func:`~skilleval.runner.document.build_run`): the lift test, the trigger block and its
AUROC, pass@k and pass^k, the summaries and the gate. Nothing is averaged across parts.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from skilleval.engine.base import ModelIdentity, Provider
from skilleval.errors import ProviderError, SkillevalError, UsageError
from skilleval.exitcodes import ExitCode
from skilleval.results.codec import decode
from skilleval.results.model import Calls, Environment, JudgeInfo, Overfit, RouterFitness
from skilleval.results.records import Record
from skilleval.runner.arms import ContentFree, TriggerResult
from skilleval.runner.document import build_run
from skilleval.runner.merge_records import (
    CheckedTexts,
    Key,
    PartFiles,
    Piece,
    read_part_records,
    write_lines,
)
from skilleval.runner.options import RunOutcome
from skilleval.runner.plan import select
from skilleval.runner.resume import read_manifest
from skilleval.runner.rundir import RunDir
from skilleval.runner.shard import PART_FILE, read_routing, suite_digest
from skilleval.suite.model import Suite
from skilleval.version import __version__

LoadSuite = Callable[[Path, dict[str, Any]], Suite]
"""Loads the suite a part names, with the command-line overrides the shards recorded."""

_SAME = (
    ("skilleval", "skilleval version"),
    ("digest", "suite digest (the suite or a file it reads differs)"),
    ("model", "model"),
    ("decoding", "decoding settings"),
    ("seed", "base seed"),
    ("trials", "trial count"),
    ("arms", "arms"),
    ("overrides", "command-line settings"),
    ("count", "shard count"),
)
"""What every part must share, and how to name it when two differ."""


DIFFERENT_MACHINES = (
    "the shards ran in different environments (Python, platform, or the model engine's threads "
    "or build differ); the environment shown is shard 1's. A model can give other bytes on "
    "another CPU or build, so the merged records may differ from a run on one machine "
    "(docs/scaling.md)"
)
"""The merged run's note when its parts' environments differ."""


@dataclass
class Part:
    """One shard's run directory and its recorded manifest."""

    root: Path
    manifest: dict[str, Any]

    @property
    def shard(self) -> dict[str, Any]:
        shard: dict[str, Any] = self.manifest["shard"]
        return shard

    @property
    def label(self) -> str:
        return f"{self.shard['index']}/{self.shard['count']}"


def read_part(root: Path) -> Part:
    """A shard's run directory, or a usage error saying why it is not one."""
    if not root.is_dir():
        raise UsageError(f"{root} is not a run directory")
    manifest = read_manifest(root)
    shard = manifest.get("shard")
    if not isinstance(shard, dict):
        raise UsageError(f"{root} is not a shard's run directory (it was not run with --shard)")
    filters = manifest.get("filters", [])
    if not isinstance(filters, list) or not all(isinstance(f, str) for f in filters):
        raise UsageError(f"{root}/run.json has damaged filters")
    problem = _shard_block_problem(shard)
    if problem is not None:
        raise UsageError(f"{root}/run.json has a damaged shard block: {problem}")
    return Part(root, manifest)


def _shard_block_problem(shard: dict[str, Any]) -> str | None:
    """What is wrong with a ``shard`` block read back from disk, or None."""
    index, count = shard.get("index"), shard.get("count")
    if not isinstance(index, int) or not isinstance(count, int) or not 1 <= index <= count:
        return "its K/N is not 1 <= K <= N"
    tests = shard.get("tests")
    if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
        return "it does not list its tests"
    if not isinstance(shard.get("digest"), str):
        return "it has no suite digest"
    model = shard.get("model")
    if model is not None and not (
        isinstance(model, dict)
        and isinstance(model.get("kind"), str)
        and isinstance(model.get("name"), str)
    ):
        return "its model identity is not one"
    overrides = shard.get("overrides")
    if (
        not isinstance(overrides, dict)
        or not all(
            overrides.get(k) is None or isinstance(overrides.get(k), str)
            for k in ("model", "judge")
        )
        or not all(
            overrides.get(k) is None or type(overrides.get(k)) is int for k in ("trials", "seed")
        )
    ):
        return "its command-line settings are not ones skilleval writes"
    return None


def check_parts(parts: Sequence[Part]) -> None:
    """Refuse parts that do not make one run, with one message naming what is wrong."""
    first = parts[0]
    for part in parts[1:]:
        for key, what in _SAME:
            if part.shard.get(key) != first.shard.get(key):
                raise UsageError(
                    f"{part.root} and {first.root} are not parts of one run: their {what} differ"
                )
        if part.manifest.get("filters") != first.manifest.get("filters"):
            raise UsageError(
                f"{part.root} and {first.root} are not parts of one run: they ran different "
                "--filter selections"
            )
    count = int(first.shard["count"])
    seen: dict[int, Path] = {}
    for part in parts:
        index = int(part.shard["index"])
        if index in seen:
            raise UsageError(f"shard {index}/{count} is given twice: {seen[index]} and {part.root}")
        seen[index] = part.root
    missing = [k for k in range(1, count + 1) if k not in seen]
    if missing:
        names = ", ".join(f"{k}/{count}" for k in missing)
        raise UsageError(f"shard {names} {'is' if len(missing) == 1 else 'are'} missing")
    owner: dict[str, Path] = {}
    for part in parts:
        for test_id in part.shard["tests"]:
            if test_id in owner:
                raise UsageError(
                    f"test {test_id!r} is in two parts: {owner[test_id]} and {part.root}"
                )
            owner[str(test_id)] = part.root


class _RecordedModel:
    """The model the shards ran, as they recorded it: its identity and nothing else."""

    def __init__(self, identity: dict[str, Any] | None, label: str) -> None:
        self._identity = identity
        self._label = label

    def identity(self) -> ModelIdentity:
        if self._identity is None:
            raise ProviderError(f"the shards could not tell the identity of {self._label}")
        return ModelIdentity(
            kind=str(self._identity["kind"]),
            name=str(self._identity["name"]),
            sha256=self._identity.get("sha256"),
            size=self._identity.get("size"),
            file=self._identity.get("file"),
            details=self._identity.get("details") or {},
        )


def merge_runs(
    roots: Sequence[Path],
    out: Path,
    load: LoadSuite,
    suite_path: Path | None,
    home: Path,
) -> RunOutcome:
    """Check the parts at ``roots``, write their merged run to ``out`` and gate it.

    Raises:
        UsageError: The parts do not make one run, the suite changed since they ran, a part
            is unfinished, or ``out`` is not empty.
    """
    parts = [read_part(root.resolve()) for root in roots]
    check_parts(parts)
    first = parts[0]
    path = suite_path or Path(str(first.manifest["suite"]))
    if not path.is_file():
        raise UsageError(f"the suite {path} the shards ran is not here: give it with --suite")
    suite = load(path, dict(first.shard["overrides"]))
    if suite_digest(suite) != first.shard["digest"]:
        raise UsageError(
            f"{path} is not the suite the shards ran: it or a file it reads changed since "
            "(the suite digest differs)"
        )
    tests = select(suite.tests, [str(f) for f in first.manifest.get("filters") or []])
    ran = {str(t) for part in parts for t in part.shard["tests"]}
    if ran != {t.id for t in tests}:
        raise UsageError(f"the shards' tests are not the tests of {path}")
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out} is not empty: merge writes a new run directory")
    arms = list(suite.arms)
    records: dict[Key, Record] = {}
    lines: dict[Key, Piece] = {}
    texts: dict[Key, Piece] = {}
    triggers: dict[str, TriggerResult] = {}
    content_free: ContentFree | None = None
    counters: list[Calls] = []
    environments: dict[int, Environment] = {}
    judge: JudgeInfo | None = None
    overfit: Overfit | None = None
    started = dt.datetime.now(dt.UTC)
    t0 = time.perf_counter()
    with PartFiles() as files:
        for part in parts:
            own = {str(t) for t in part.shard["tests"]}
            expected = len(own) * len(arms) * suite.trials
            same_version = part.shard.get("skilleval") == __version__
            found = read_part_records(
                part.root, part.label, own, same_version, files, records, lines, texts
            )
            if found != expected:
                raise UsageError(
                    f"shard {part.label} ({part.root}) is unfinished: {found} of {expected} "
                    "results; finish it with `skilleval run --resume` first"
                )
            extra = _read_part_file(part)
            triggers.update({t.test_id: t for t in extra.routed})
            content_free = content_free or extra.content_free
            counters.append(extra.calls)
            environments[int(part.shard["index"])] = extra.environment
            judge = judge or extra.judge
            overfit = overfit or extra.overfit
        order = [(t.id, arm, trial) for arm in arms for t in tests for trial in range(suite.trials)]
        ordered = [records[key] for key in order]
        provider = cast(Provider, _RecordedModel(first.shard["model"], suite.model.label))
        out.parent.mkdir(parents=True, exist_ok=True)
        run_dir = RunDir(out)
        run_dir.write_json(
            "run.json",
            {**{k: v for k, v in first.manifest.items() if k != "shard"}, "merged": _merged(parts)},
        )
        try:
            # The parts' own lines, read back: they are what a whole run writes for these records.
            write_lines(run_dir.jsonl_path, order, lines, records, files)
        finally:
            run_dir.close()
        del lines
        routed_in_order = [triggers[t.id] for t in tests if t.id in triggers]
        run = build_run(
            suite,
            tests,
            arms,
            ordered,
            provider,
            started,
            time.perf_counter() - t0,
            run_dir,
            False,
            routed_in_order,
            None,
            overfit,
            judge_fitness=None if judge is None else judge.fitness,
            side_by_side=None if judge is None else judge.side_by_side,
            content_free=content_free,
            router=_router(home, provider)
            if routed_in_order and suite.model.provider.capabilities.measured
            else None,
        )
        # What the parts spent, added up, and the judge as the shards described it.
        run = replace(run, calls=_add_calls(counters), judge=judge, environment=environments[1])
        if any(env != environments[1] for env in environments.values()):
            run = replace(run, notes=(*run.notes, DIFFERENT_MACHINES))
        # The parts' own results.json texts of the records, where they are the same records: a
        # record is encoded again only when its part's text could not be used.
        run_dir.write_results(run, CheckedTexts(order, texts, files))
    code = ExitCode(run.gate.exit_code) if run.gate is not None else ExitCode.RUNTIME
    return RunOutcome(run, run_dir, code, ordered)


@dataclass
class _PartFile:
    """A shard's ``shard-part.json``, read once."""

    routed: list[TriggerResult]
    content_free: ContentFree | None
    calls: Calls
    environment: Environment
    judge: JudgeInfo | None
    overfit: Overfit | None


def _read_part_file(part: Part) -> _PartFile:
    path = part.root / PART_FILE
    if not path.is_file():
        raise UsageError(f"{part.root} has no {PART_FILE}: it is not a finished shard")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        routed, free = read_routing(data)
        return _PartFile(
            routed,
            free,
            decode(Calls, data["calls"]),
            decode(Environment, data["environment"]),
            None if data.get("judge") is None else decode(JudgeInfo, data["judge"]),
            None if data.get("overfit") is None else decode(Overfit, data["overfit"]),
        )
    except KeyError as exc:
        raise UsageError(f"{path} cannot be read: it has no {exc}") from None
    except (SkillevalError, ValueError, TypeError, AttributeError) as exc:
        raise UsageError(f"{path} cannot be read: {exc}") from None


def _add_calls(parts: Sequence[Calls]) -> Calls:
    """The parts' call counters added up; a rate only when every part has one."""
    summed: dict[str, Any] = {}
    for f in dataclasses.fields(Calls):
        values = [getattr(c, f.name) for c in parts]
        if f.name == "generation_tokens_per_s":
            continue
        known = [v for v in values if v is not None]
        summed[f.name] = None if not known else round(sum(known), 3)
    rates = [(c.generation_tokens_per_s, c.busy_s) for c in parts]
    if rates and all(r is not None and b for r, b in rates):
        busy = sum(b or 0.0 for _, b in rates)
        tokens = sum((r or 0.0) * (b or 0.0) for r, b in rates)
        summed["generation_tokens_per_s"] = round(tokens / busy, 2)
    else:
        summed["generation_tokens_per_s"] = None
    return Calls(**summed)


def _merged(parts: Sequence[Part]) -> list[dict[str, Any]]:
    """What the merged run was made of: each shard's K/N and where it was."""
    ordered = sorted(parts, key=lambda p: int(p.shard["index"]))
    return [{"shard": p.label, "path": str(p.root)} for p in ordered]


def _router(home: Path, provider: Provider) -> RouterFitness | None:
    """The router's kept verdict on this machine, as a whole run here would attach it."""
    try:
        identity = provider.identity()
    except SkillevalError:
        return None
    from skilleval.runner.routercheck import NOT_CHECKED, cached_fitness  # lazy: start-up time

    return cached_fitness(home, identity) or NOT_CHECKED
