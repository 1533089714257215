"""From a run's failing records to candidate cases, and to notes for what is not a failure.

One case per test that failed, however many of its records show it:

- A wrong routing decision makes the case carry the ``should_trigger`` the test was meant
  to have. The decision is taken once per test and carried by each of its records.
- A failing output makes the case carry the assertions that failed, in any of the test's
  records, copied as they are written in the suite (an inherited ``defaultTest`` assertion
  is copied into the case, which then opts out of the defaults) and none of those that
  passed.
- An error is not a failure: a judge that gave no usable grade, a judge reply that copies the
  rubric prompt's worked example, a check that could not run, a call that failed. Each
  becomes a note, never a case.

The case points at the first record that shows its failure (the ``on`` arm first, then the
lowest trial) and lists the others, so one request never appears twice in what is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from skilleval.cases.paths import Rebase
from skilleval.cases.source import Written
from skilleval.errors import Location
from skilleval.results.records import AssertionResult, Record, TriggerOutcome
from skilleval.suite.model import AssertionEntry, Suite, TestCase
from skilleval.util.frozen import frozen

TAG = "from-failure"
"""The tag every case carries in its ``metadata.tags``."""

Kind = Literal["routing", "output"]

AGENT_KEYS = ("tools", "environment", "turns", "max_steps")
"""A test's agentic keys, copied as written: the case runs as its source test did."""

RANK = ("on", "routed", "default", "off")
"""Which record a case points at when several show its failure: the skill's arms first."""


@frozen
class Origin:
    """One record: the test, the arm and the trial (as ``results.jsonl`` numbers it)."""

    test: str
    arm: str
    trial: int

    def __str__(self) -> str:
        return f"{self.test} / {self.arm} / trial {self.trial}"

    def to_json(self) -> dict[str, Any]:
        return {"test": self.test, "arm": self.arm, "trial": self.trial}


@dataclass
class Case:
    """One candidate test, as plain data ready to be written as YAML."""

    id: str
    kinds: tuple[Kind, ...]
    """``routing``, ``output`` or both."""
    origin: Origin
    test: dict[str, Any]
    """The test's keys in writing order; ``file://`` paths relative to :attr:`base_dir`."""
    base_dir: Path
    """The folder the source test's relative paths are written from."""
    prompt: str
    """The prompt as the run rendered it, for the overlap checks."""
    source_at: Location
    why: str
    """What went wrong, in a few words."""
    also: list[Origin] = field(default_factory=list)
    """Other records that showed a failure of the same test."""


@frozen
class Note:
    """Something that went wrong but makes no case: an error, a judge that did not grade."""

    origin: Origin
    kind: str
    """``judge-error``, ``copied-example``, ``check-error``, ``call-error``, ``routing-error``,
    ``not-in-suite`` or ``suite-changed``."""
    message: str

    def to_json(self) -> dict[str, Any]:
        return {**self.origin.to_json(), "kind": self.kind, "message": self.message}


@dataclass
class Collected:
    cases: list[Case] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)


@dataclass
class _Draft:
    """What the records of one test showed, before it becomes a case."""

    test: TestCase
    origins: list[Origin] = field(default_factory=list)
    prompt: str = ""
    routing: TriggerOutcome | None = None
    failed: dict[int, tuple[AssertionEntry, AssertionResult]] = field(default_factory=dict)
    """By the entry's position among the test's assertions."""

    def saw(self, origin: Origin, prompt: str) -> None:
        if origin not in self.origins:
            self.origins.append(origin)
        self.prompt = self.prompt or prompt


def collect(
    records: Iterable[Record],
    suite: Suite,
    run_id: str,
    arms: Sequence[str] | None,
    written: Written | None = None,
) -> Collected:
    """The cases and notes of a run's failing ``records``.

    Args:
        records: The records that went wrong (:func:`~skilleval.cases.source.wanted`).
        suite: The suite the run came from, loaded.
        run_id: Written into each case's metadata.
        arms: The arms whose failing outputs become cases; None for every arm but ``off``
            (without the skill, failing is what the baseline is for).
        written: The suite's files as written, when some are already read.
    """
    tests = {t.id: t for t in suite.tests}
    order = {t.id: i for i, t in enumerate(suite.tests)}
    out = Collected()
    drafts: dict[tuple[str, str], _Draft] = {}
    routing_errors: set[str] = set()
    ordered = sorted(records, key=lambda r: (order.get(r.test_id, len(order)), _rank(r)))
    for record in ordered:
        origin = Origin(record.test_id, record.arm, record.trial)
        test = tests.get(record.test_id)
        if test is None:
            out.notes.append(
                Note(origin, "not-in-suite", f"test '{record.test_id}' is not in the suite now")
            )
            continue
        draft = drafts.setdefault(_written_test(test), _Draft(test))
        trigger = record.trigger
        if trigger is not None and trigger.error is not None and test.id not in routing_errors:
            routing_errors.add(test.id)
            out.notes.append(
                Note(origin, "routing-error", f"the routing decision failed: {trigger.error}")
            )
        elif (
            trigger is not None
            and trigger.correct is False
            and trigger.expected is not None
            and draft.routing is None  # one decision, carried by each of the test's records
        ):
            draft.routing = trigger
            draft.saw(origin, record.prompt)
        if record.arm not in arms if arms is not None else record.arm == "off":
            continue
        _errors(record, origin, out)
        if record.status == "fail" and _failed(record, origin, draft, out):
            draft.saw(origin, record.prompt)
    written = written or Written()
    for draft in drafts.values():
        if draft.origins:
            out.cases.append(_case(draft, written, run_id, suite.base_dir))
    out.cases.sort(key=lambda c: order.get(c.origin.test, 0))
    used: set[str] = set()
    for case in out.cases:
        # Two test ids that differ only in characters an id cannot hold: number the second.
        unique, n = case.id, 2
        while unique in used:
            unique, n = f"{case.id}-{n}", n + 1
        used.add(unique)
        case.id = case.test["id"] = unique
    return out


def _written_test(test: TestCase) -> tuple[str, str]:
    """A test as written: with several prompts, ``t[a]`` and ``t[b]`` are one test, and a
    case from either runs every prompt again."""
    return (str(test.where), json.dumps(test.vars, sort_keys=True, default=str))


def _rank(record: Record) -> tuple[int, str, int]:
    arm = RANK.index(record.arm) if record.arm in RANK else len(RANK)
    return (arm, record.arm, record.trial)


def case_id(origin: Origin) -> str:
    """``TEST/ARM/TRIAL``, with any character an id cannot hold made a ``-``."""
    test = re.sub(r"[^A-Za-z0-9._:/-]+", "-", origin.test).strip("-") or "test"
    if not test[0].isalnum():
        test = f"t{test}"
    return f"{test}/{origin.arm}/{origin.trial}"


def _errors(record: Record, origin: Origin, out: Collected) -> None:
    explained = False
    for result in record.asserts:
        if result.status != "error":
            continue
        explained = True
        kind = (
            "copied-example"
            if result.details.get("error_kind") == "copied"
            else "judge-error"
            if result.tier == "model"
            else "check-error"
        )
        at = f" ({result.where})" if result.where else ""
        out.notes.append(Note(origin, kind, f"{result.type}{at}: {result.error or result.reason}"))
    if record.status == "error" and record.error and not explained:
        out.notes.append(Note(origin, "call-error", record.error))


def _failed(record: Record, origin: Origin, draft: _Draft, out: Collected) -> bool:
    """Add the record's failed assertions to the draft; False when none could be found."""
    failed = [a for a in record.asserts if a.status == "fail" and a.weight > 0] or [
        a for a in record.asserts if a.status == "fail"
    ]
    entries = _entries(draft.test)
    added = False
    for result in failed:
        found = _match(entries, result)
        if found is None:
            out.notes.append(
                Note(
                    origin,
                    "suite-changed",
                    f"the {result.type} assertion that failed at {result.where} is not there "
                    "in the suite now; it is left out",
                )
            )
            continue
        index, entry = found
        draft.failed.setdefault(index, (entry, result))
        added = True
    return added


def _entries(test: TestCase) -> list[AssertionEntry]:
    out: list[AssertionEntry] = []
    todo = list(test.every_assert)
    while todo:
        entry = todo.pop(0)
        out.append(entry)
        todo.extend(entry.children)
    return out


def _match(
    entries: Sequence[AssertionEntry], result: AssertionResult
) -> tuple[int, AssertionEntry] | None:
    """The suite's assertion a result was graded by: same file name, line, column and type."""
    path, _, col = result.where.rpartition(":")
    path, _, line = path.rpartition(":")
    if not (line.isdigit() and col.isdigit()):
        return None
    for index, entry in enumerate(entries):
        at = entry.where
        if (
            (at.line, at.col) == (int(line), int(col))
            and Path(at.path).name == Path(path).name
            and entry.type == result.type
        ):
            return index, entry
    return None


def _case(draft: _Draft, written: Written, run_id: str, suite_dir: Path) -> Case:
    test, origin = draft.test, draft.origins[0]
    raw = written.test_node(test.id, test.where)
    body = _body(test, raw if isinstance(raw, Mapping) else {}, origin, run_id)
    kinds: list[Kind] = []
    why: list[str] = []
    if draft.routing is not None:
        kinds.append("routing")
        body["should_trigger"] = draft.routing.expected
        chosen = draft.routing.chosen if draft.routing.chosen is not None else "nothing"
        wanted = "the skill" if draft.routing.expected else "anything but the skill"
        why.append(f"routed to {chosen} where {wanted} was wanted")
    if draft.failed:
        kinds.append("output")
        turns = {id(e) for t in (test.agent.turns if test.agent else ()) for e in t.asserts}
        pairs = [draft.failed[i] for i in sorted(draft.failed)]
        # defaultTest writes its paths from the suite's folder, the case from its test's.
        to_test = Rebase(suite_dir, test.base_dir)
        copied = [
            to_test.walk(as_written(e, written, test), ("defaultTest", "assert", 0))
            if e.from_default
            else as_written(e, written, test)
            for e, _ in pairs
            if id(e) not in turns
        ]
        if copied:
            body["assert"] = copied
        if any(e.from_default for e, _ in pairs):
            options = dict(body.get("options") or {})
            options["disableDefaultAsserts"] = True
            body["options"] = options
        why.append("failed " + ", ".join(e.type for e, _ in pairs))
    return Case(
        id=case_id(origin),
        kinds=tuple(kinds),
        origin=origin,
        test=_ordered(body),
        base_dir=test.base_dir,
        prompt=draft.prompt,
        source_at=test.where,
        why="; ".join(why),
        also=draft.origins[1:],
    )


def as_written(entry: AssertionEntry, written: Written, test: TestCase) -> Any:
    """The assertion as the suite writes it, or rebuilt from what was loaded when the file
    does not hold it as a mapping (a CSV's ``__expected`` column)."""
    own = [e for e in test.asserts if not e.from_default]
    index = next((i for i, e in enumerate(own) if e is entry), None)
    found = written.assert_node(test.id, index, entry.where)
    if isinstance(found, Mapping):
        return _plain(found)
    rebuilt: dict[str, Any] = {"type": entry.type}
    if entry.value is not None:
        rebuilt["value"] = _plain(entry.value)
    if entry.threshold is not None:
        rebuilt["threshold"] = entry.threshold
    if entry.weight != 1.0:
        rebuilt["weight"] = entry.weight
    if entry.metric:
        rebuilt["metric"] = entry.metric
    return rebuilt


def _body(test: TestCase, raw: Mapping[str, Any], origin: Origin, run_id: str) -> dict[str, Any]:
    """The keys a case takes from its source test: prompt, vars, options, agentic keys."""
    body: dict[str, Any] = {
        "id": case_id(origin),
        "description": _description(test),
    }
    if isinstance(raw.get("prompt"), str):
        body["prompt"] = raw["prompt"]
    variables = _vars(test, raw)
    if variables:
        body["vars"] = variables
    if test.should_trigger is not None:
        body["should_trigger"] = test.should_trigger
    if isinstance(raw.get("options"), Mapping):
        body["options"] = _plain(raw["options"])
    for key in AGENT_KEYS:
        if key in raw:
            body[key] = _plain(raw[key])
    body["metadata"] = {"tags": [TAG], "from": {"run": run_id, **origin.to_json()}}
    return body


FAILED = " (failed in a run)"


def _description(test: TestCase) -> str:
    """The test's description (or id) marked as a failure, once: a case's case is not marked
    twice."""
    label = test.description or test.id
    return label if label.endswith(FAILED) else label + FAILED


def _vars(test: TestCase, raw: Mapping[str, Any]) -> Any:
    """The test's own vars as written; a list that stood for one test per item is this
    test's item. A test read from CSV or JSONL has its loaded vars."""
    if not raw:
        return _plain(dict(test.vars))
    written = raw.get("vars")
    if not isinstance(written, Mapping):
        return _plain(written) if written is not None else None
    whole = bool((raw.get("options") or {}).get("disableVarExpansion"))
    out: dict[str, Any] = {}
    for name, value in written.items():
        expands = (
            not whole
            and isinstance(value, list)
            and value
            and all(isinstance(v, str) for v in value)
        )
        out[str(name)] = _plain(test.vars.get(name, value) if expands else value)
    return out


ORDER = (
    "id",
    "description",
    "prompt",
    "vars",
    "should_trigger",
    "options",
    *AGENT_KEYS,
    "assert",
    "metadata",
)


def _ordered(body: Mapping[str, Any]) -> dict[str, Any]:
    return {k: body[k] for k in ORDER if k in body}


def _plain(value: Any) -> Any:
    """A deep copy made of dicts, lists and scalars."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
