"""Splitting one run across machines: which tests a shard runs, and what it records so that
the parts can be checked and merged into one run (``skilleval merge``).

A shard is ``K/N``: the K-th of N parts (1-based). The partition is by test identity, so
every arm, trial and routing request of a test lands in the same shard, and it depends only
on the suite and the costs it is given, so every machine computes the same split. Seeds
depend on a test's trial, never on its position, so a test decodes the same in its shard as
in the whole run.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from skilleval.errors import UsageError
from skilleval.results.codec import encode
from skilleval.results.load import parse_record
from skilleval.results.model import Run
from skilleval.runner.arms import ContentFree, TriggerResult
from skilleval.runner.plan import messages_for
from skilleval.suite import template
from skilleval.suite.model import Suite, TestCase
from skilleval.util.frozen import frozen
from skilleval.version import __version__

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")

PART_FILE = "shard-part.json"
"""Beside a shard's results: its routing decisions at full precision, its call counters,
and the judge and overfit blocks, which merge needs and the records do not hold."""

EXPECTED = "K/N with whole numbers 1 <= K <= N (for example 2/3)"
"""What a shard value must look like, for the usage error."""


@frozen
class Shard:
    """The ``index``-th (1-based) of ``count`` parts of a run."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``"2/3"`` as a :class:`Shard`.

    Raises:
        ValueError: The text is not ``K/N`` with ``1 <= K <= N``; the message says why.
    """
    found = _SHARD.fullmatch(text)
    if found is None:
        raise ValueError(f"{text!r} is not a shard: expected {EXPECTED}")
    index, count = int(found.group(1)), int(found.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ValueError(f"{text!r} is not a shard: expected {EXPECTED}")
    return Shard(index, count)


def prompt_cost(test: TestCase) -> float:
    """A test's expected cost without a measurement: the length of its rendered prompt."""
    try:
        _, prompt = messages_for(test, None)
    except template.TemplateProblem:
        prompt = test.prompt.text or "".join(text for _, text in test.prompt.messages)
    return float(len(prompt) + 1)


def recorded_costs(run_dir: Path) -> dict[str, float]:
    """Each test's recorded duration (milliseconds, every arm and trial) in an earlier run.

    Lines that cannot be read are skipped: a cost is a hint, and every machine reading the
    same file skips the same lines.

    Raises:
        UsageError: ``run_dir`` holds no ``results.jsonl``.
    """
    path = run_dir / "results.jsonl" if run_dir.is_dir() else run_dir
    if not path.is_file():
        raise UsageError(f"{run_dir} holds no results.jsonl to read durations from")
    costs: dict[str, float] = {}
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                record = parse_record(line)
            except Exception:  # a damaged line is no duration
                continue
            spent = record.stats.latency_ms if record.stats is not None else 0.0
            costs[record.test_id] = costs.get(record.test_id, 0.0) + max(spent, 0.0)
    return costs


def costs_for(
    tests: Sequence[TestCase], recorded: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Each test's expected cost: its recorded duration when known, else its prompt length.

    With recorded durations, a test the earlier run did not have costs the mean recorded
    duration per prompt character times its own prompt length, so both kinds compare.
    """
    lengths = {t.id: prompt_cost(t) for t in tests}
    if not recorded:
        return lengths
    known = [t.id for t in tests if t.id in recorded]
    if not known:
        return lengths
    per_char = sum(recorded[i] for i in known) / sum(lengths[i] for i in known)
    return {i: recorded[i] if i in recorded else lengths[i] * per_char for i in lengths}


def partition(
    tests: Sequence[TestCase], count: int, costs: Mapping[str, float]
) -> list[list[TestCase]]:
    """``tests`` split into ``count`` parts of near-equal total cost, each in suite order.

    Longest first, each test to the part with the least cost so far (ties to the lower
    part); equal costs are taken in id order, so the split depends on ids and costs only.
    """
    totals = [0.0] * count
    owner: dict[str, int] = {}
    for test in sorted(tests, key=lambda t: (-costs[t.id], t.id)):
        part = min(range(count), key=lambda k: (totals[k], k))
        owner[test.id] = part
        totals[part] += costs[test.id]
    parts: list[list[TestCase]] = [[] for _ in range(count)]
    for test in tests:
        parts[owner[test.id]].append(test)
    return parts


def shard_tests(
    tests: Sequence[TestCase], shard: Shard, recorded: Mapping[str, float] | None = None
) -> list[TestCase]:
    """The tests shard ``shard`` runs."""
    return partition(tests, shard.count, costs_for(tests, recorded))[shard.index - 1]


def suite_digest(suite: Suite) -> str:
    """A SHA-256 over every file the suite reads, named relative to the suite's folder.

    Relative names make the digest the same on every machine that checked the suite out,
    wherever the checkout is.
    """
    base = suite.path.resolve().parent
    digest = hashlib.sha256()
    for path in sorted(p.resolve() for p in suite.files):
        if not path.is_file():
            continue
        try:
            name = path.relative_to(base).as_posix()
        except ValueError:
            name = path.name
        digest.update(name.encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def shard_manifest(
    suite: Suite,
    shard: Shard,
    tests: Sequence[TestCase],
    model: Mapping[str, Any] | None,
    overrides: Mapping[str, Any],
) -> dict[str, Any]:
    """What a shard records for ``merge`` to check the parts belong together and re-run
    the analysis: its K/N, the suite's digest, the model and decoding, the base seed, the
    skilleval version, the overrides it was loaded with and the tests it ran."""
    out = {
        "index": shard.index,
        "count": shard.count,
        "digest": suite_digest(suite),
        "model": dict(model) if model is not None else None,
        "decoding": suite.decoding.to_json(),
        "seed": suite.decoding.seed,
        "trials": suite.trials,
        "arms": list(suite.arms),
        "skilleval": __version__,
        "overrides": dict(overrides),
        "tests": [t.id for t in tests],
    }
    loaded: dict[str, Any] = json.loads(json.dumps(out, sort_keys=True, default=str))
    return loaded


def part_json(triggers: Sequence[TriggerResult], content_free: ContentFree | None, run: Run) -> Any:
    """What merge needs of a finished shard beyond its records, as plain JSON: the routing
    decisions and content-free scores unrounded, the call counters, the judge and overfit
    blocks."""
    return {
        "calls": encode(run.calls),
        "environment": encode(run.environment),
        "judge": None if run.judge is None else encode(run.judge),
        "overfit": None if run.overfit is None else encode(run.overfit),
        "triggers": [
            {
                "test_id": t.test_id,
                "expected": t.expected,
                "chosen": t.chosen,
                "scores": None if t.scores is None else dict(t.scores),
                "error": t.error,
                "runs": None if t.runs is None else list(t.runs),
                "rate": t.rate,
            }
            for t in triggers
        ],
        "content_free": None
        if content_free is None
        else {
            "scores": None if content_free.scores is None else dict(content_free.scores),
            "error": content_free.error,
        },
    }


def read_routing(data: Any) -> tuple[list[TriggerResult], ContentFree | None]:
    """The routing half of :func:`part_json`'s output read back.

    Raises:
        ValueError: It is not what :func:`routing_json` writes.
    """
    if not isinstance(data, dict) or not isinstance(data.get("triggers"), list):
        raise ValueError("not a shard's part file")
    triggers = [
        TriggerResult(
            test_id=str(t["test_id"]),
            expected=t["expected"],
            chosen=t["chosen"],
            scores=None if t["scores"] is None else {k: float(v) for k, v in t["scores"].items()},
            error=t["error"],
            runs=None if t.get("runs") is None else tuple(t["runs"]),
            rate=t.get("rate"),
        )
        for t in data["triggers"]
    ]
    free = data.get("content_free")
    content_free = None
    if isinstance(free, dict):
        scores = free.get("scores")
        content_free = ContentFree(
            scores=None if scores is None else {k: float(v) for k, v in scores.items()},
            error=free.get("error"),
        )
    return triggers, content_free
