"""From a run's failing records to candidate cases, and to notes for what is not a failure.

- A wrong routing decision becomes a ``routing`` case: the test's prompt with the
  ``should_trigger`` it was meant to have. The decision is taken once per test and carried by
  each of its records, so a test gives at most one routing case.
- A failing output becomes an ``output`` case: the test's prompt with only the assertions that
  failed, copied as they are written in the suite (an inherited ``defaultTest`` assertion is
  copied into the case, which then opts out of the defaults).
- An error is not a failure: a judge that gave no usable grade, a judge reply that copies the
  rubric prompt's worked example, a check that could not run, a call that failed. Each
  becomes a note, never a case.

The same failure in several trials or arms is one case, pointing at the first record that
shows it and listing the others.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from skilleval.cases.source import Written
from skilleval.errors import Location
from skilleval.results.records import AssertionResult, Record
from skilleval.suite.model import AssertionEntry, Suite, TestCase
from skilleval.util.frozen import frozen

TAG = "from-failure"
"""The tag every case carries in its ``metadata.tags``."""

Kind = Literal["routing", "output"]

AGENT_KEYS = ("tools", "environment", "turns", "max_steps")
"""A test's agentic keys, copied as written: the case runs as its source test did."""


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
    kind: Kind
    origin: Origin
    test: dict[str, Any]
    """The test's keys in writing order; ``file://`` paths relative to :attr:`base_dir`."""
    base_dir: Path
    """The folder the source test's relative paths are written from."""
    prompt: str
    """The prompt as the run rendered it, for the overlap checks."""
    source_at: Location
    why: str
    """One line: what went wrong."""
    also: list[Origin] = field(default_factory=list)
    """Other records that showed the same failure."""


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


def collect(
    records: Iterable[Record], suite: Suite, run_id: str, arms: Sequence[str] | None
) -> Collected:
    """The cases and notes of a run's failing ``records``.

    Args:
        records: The records that went wrong (:func:`~skilleval.cases.source.wanted`).
        suite: The suite the run came from, loaded.
        run_id: Written into each case's metadata.
        arms: The arms whose failing outputs become cases; None for every arm but ``off``
            (without the skill, failing is what the baseline is for).
    """
    tests = {t.id: t for t in suite.tests}
    order = {t.id: i for i, t in enumerate(suite.tests)}
    written = Written()
    out = Collected()
    found: dict[tuple[Any, ...], Case] = {}
    sorted_records = sorted(records, key=lambda r: (order.get(r.test_id, len(order)), _rank(r)))
    for record in sorted_records:
        origin = Origin(record.test_id, record.arm, record.trial)
        test = tests.get(record.test_id)
        if test is None:
            out.notes.append(
                Note(origin, "not-in-suite", f"test '{record.test_id}' is not in the suite now")
            )
            continue
        _routing(record, origin, test, suite, run_id, written, found, out)
        if record.arm not in arms if arms is not None else record.arm == "off":
            continue
        _errors(record, origin, out)
        if record.status == "fail":
            _output(record, origin, test, suite, run_id, written, found, out)
    out.cases = sorted(
        found.values(),
        key=lambda c: (order.get(c.origin.test, 0), c.kind != "routing", c.id),
    )
    return out


RANK = ("on", "routed", "default", "off")
"""Which record a case points at when several show its failure: the skill's arms first."""


def _rank(record: Record) -> tuple[int, str, int]:
    arm = RANK.index(record.arm) if record.arm in RANK else len(RANK)
    return (arm, record.arm, record.trial)


def case_id(origin: Origin, kind: Kind) -> str:
    """``TEST/ARM/TRIAL/KIND``, with any character an id cannot hold made a ``-``."""
    test = re.sub(r"[^A-Za-z0-9._:/-]+", "-", origin.test).strip("-") or "test"
    if not test[0].isalnum():
        test = f"t{test}"
    return f"{test}/{origin.arm}/{origin.trial}/{kind}"


def _routing(
    record: Record,
    origin: Origin,
    test: TestCase,
    suite: Suite,
    run_id: str,
    written: Written,
    found: dict[tuple[Any, ...], Case],
    out: Collected,
) -> None:
    trigger = record.trigger
    if trigger is None:
        return
    key = ("routing", record.test_id)
    if trigger.error is not None:
        if key not in found and not any(
            n.kind == "routing-error" and n.origin.test == record.test_id for n in out.notes
        ):
            out.notes.append(
                Note(origin, "routing-error", f"the routing decision failed: {trigger.error}")
            )
        return
    if trigger.correct is not False or trigger.expected is None:
        return
    if key in found:
        return  # one decision per test, carried by each of its records
    body = _body(test, written, origin, run_id, "routing")
    body["should_trigger"] = trigger.expected
    chosen = trigger.chosen if trigger.chosen is not None else "nothing"
    wanted = "the skill" if trigger.expected else "anything but the skill"
    found[key] = Case(
        id=case_id(origin, "routing"),
        kind="routing",
        origin=origin,
        test=_ordered(body),
        base_dir=test.base_dir,
        prompt=record.prompt,
        source_at=test.where,
        why=f"routed to {chosen} where {wanted} was wanted",
    )


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


def _output(
    record: Record,
    origin: Origin,
    test: TestCase,
    suite: Suite,
    run_id: str,
    written: Written,
    found: dict[tuple[Any, ...], Case],
    out: Collected,
) -> None:
    failed = [a for a in record.asserts if a.status == "fail" and a.weight > 0] or [
        a for a in record.asserts if a.status == "fail"
    ]
    if not failed:
        return
    entries = _entries(test)
    turns = {id(e) for t in (test.agent.turns if test.agent else ()) for e in t.asserts}
    copied: list[Any] = []
    places: list[str] = []
    from_default = False
    for result in failed:
        entry = _match(entries, result)
        if entry is None:
            out.notes.append(
                Note(
                    origin,
                    "suite-changed",
                    f"the {result.type} assertion that failed at {result.where} is not there "
                    "in the suite now; it is left out",
                )
            )
            continue
        places.append(f"{entry.where.line}:{entry.where.col}")
        if id(entry) in turns:
            continue  # the case copies the test's turns, with their assertions
        copied.append(as_written(entry, result, written))
        from_default = from_default or entry.from_default
    if not places:
        return
    key = ("output", record.test_id, tuple(sorted(places)))
    if key in found:
        found[key].also.append(origin)
        return
    body = _body(test, written, origin, run_id, "output")
    if copied:
        body["assert"] = copied
    if from_default:
        options = dict(body.get("options") or {})
        options["disableDefaultAsserts"] = True
        body["options"] = options
    shown = ", ".join(a.type for a in failed)
    found[key] = Case(
        id=case_id(origin, "output"),
        kind="output",
        origin=origin,
        test=_ordered(body),
        base_dir=test.base_dir,
        prompt=record.prompt,
        source_at=test.where,
        why=f"failed {shown}",
    )


def _entries(test: TestCase) -> list[AssertionEntry]:
    out: list[AssertionEntry] = []
    todo = list(test.every_assert)
    while todo:
        entry = todo.pop(0)
        out.append(entry)
        todo.extend(entry.children)
    return out


def _match(entries: Sequence[AssertionEntry], result: AssertionResult) -> AssertionEntry | None:
    """The suite's assertion a result was graded by: same file name, line and column, type."""
    path, _, rest = result.where.rpartition(":")
    path, _, line = path.rpartition(":")
    if not (line.isdigit() and rest.isdigit()):
        return None
    for entry in entries:
        at = entry.where
        if (
            (at.line, at.col) == (int(line), int(rest))
            and Path(at.path).name == Path(path).name
            and entry.type == result.type
        ):
            return entry
    return None


def as_written(entry: AssertionEntry, result: AssertionResult, written: Written) -> Any:
    """The assertion as the suite writes it, or rebuilt from what was loaded when the file
    does not hold it as a mapping (a CSV's ``__expected`` column)."""
    found = written.node_at(entry.where)
    if found is not None and isinstance(found[0], Mapping):
        return _plain(found[0])
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


def _body(
    test: TestCase, written: Written, origin: Origin, run_id: str, kind: Kind
) -> dict[str, Any]:
    """The keys a case takes from its source test: prompt, vars, options, agentic keys."""
    found = written.node_at(test.where)
    raw: Mapping[str, Any] = found[0] if found and isinstance(found[0], Mapping) else {}
    body: dict[str, Any] = {
        "id": case_id(origin, kind),
        "description": _description(test, kind),
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


def _description(test: TestCase, kind: Kind) -> str:
    what = "misrouted" if kind == "routing" else "failed"
    label = test.description or test.id
    return f"{label} ({what} in a run)"


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
