"""The three disjoint sets of ``skilleval improve``: train, selection and confirmation.

Made once from the suite's tests and the seed, and recorded in the report:

* **train**: the failures the proposer is shown, and the first screening of every candidate;
* **selection**: where one candidate is chosen among the survivors;
* **confirmation**: the one test of the chosen candidate against the current skill.

The split is stratified: tests are grouped by ``should_trigger`` and by their tags
(``metadata.tags``), and each group is dealt out in the target proportions, so a small
group of negative controls does not land in one set. The order within a group is a hash of
the seed and the test's id, so the split depends on nothing else (not the file order, not
the Python version). A test may be pinned with ``split: train | selection | confirm``.
Tests added with ``--grow`` are training tests only, never selection or confirmation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from skilleval.suite.model import TestCase
from skilleval.util.frozen import frozen

SetName = Literal["train", "selection", "confirm"]
SETS: tuple[SetName, ...] = ("train", "selection", "confirm")

DEFAULT_FRACTIONS: tuple[float, float, float] = (0.4, 0.2, 0.4)
"""Train, selection and confirmation shares of the suite's own tests. Confirmation gets as
much as train: it is the one test whose power decides whether anything is accepted."""


@frozen
class Split:
    """Which tests are in which set, and why."""

    seed: int
    fractions: tuple[float, float, float]
    train: tuple[str, ...]
    selection: tuple[str, ...]
    confirm: tuple[str, ...]
    pinned: Mapping[str, SetName]
    grown: tuple[str, ...]
    """Ids of the ``--grow`` tests (all in ``train``)."""
    strata: Mapping[str, int]
    """Each stratum's label and how many of the suite's tests it holds."""

    def ids(self, name: SetName) -> tuple[str, ...]:
        return {"train": self.train, "selection": self.selection, "confirm": self.confirm}[name]

    def set_of(self, test_id: str) -> SetName:
        for name in SETS:
            if test_id in self.ids(name):
                return name
        raise KeyError(test_id)

    def sizes(self) -> dict[str, int]:
        return {name: len(self.ids(name)) for name in SETS}

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "fractions": {name: f for name, f in zip(SETS, self.fractions, strict=True)},
            "sizes": self.sizes(),
            "train": list(self.train),
            "selection": list(self.selection),
            "confirm": list(self.confirm),
            "pinned": dict(sorted(self.pinned.items())),
            "grown": list(self.grown),
            "strata": dict(sorted(self.strata.items())),
        }


def tags_of(test: TestCase) -> tuple[str, ...]:
    """A test's tags: ``metadata.tags``, a string or a list of strings."""
    raw = test.metadata.get("tags") if test.metadata else None
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list | tuple):
        return tuple(sorted({str(t) for t in raw}))
    return ()


def stratum(test: TestCase) -> str:
    """The group a test is dealt out with: its ``should_trigger`` and its tags."""
    trigger = {True: "trigger", False: "no-trigger", None: "unrouted"}[test.should_trigger]
    tags = tags_of(test)
    return trigger + ("" if not tags else " [" + ", ".join(tags) + "]")


def _order(seed: int, test_id: str) -> str:
    return hashlib.sha256(f"{seed}\0{test_id}".encode("utf-8", "surrogatepass")).hexdigest()


def make_split(
    tests: Sequence[TestCase],
    *,
    seed: int,
    fractions: tuple[float, float, float] = DEFAULT_FRACTIONS,
    grown: Iterable[TestCase] = (),
) -> Split:
    """Deal ``tests`` into the three sets; ``grown`` tests all go to train.

    Each test goes, in turn, to the set furthest below its share of the tests dealt so far
    (ties: train, then selection, then confirmation), strata one after another in a fixed
    order, so every stratum is spread over the sets and the totals follow ``fractions``.
    Pinned tests (``split:``) are placed first and count toward the totals.
    """
    total = sum(fractions)
    shares = [f / total for f in fractions]
    placed: dict[SetName, list[str]] = {name: [] for name in SETS}
    pinned: dict[str, SetName] = {}
    for test in tests:
        if test.split is not None:
            pinned[test.id] = test.split
            placed[test.split].append(test.id)
    groups: dict[str, list[TestCase]] = {}
    for test in tests:
        groups.setdefault(stratum(test), []).append(test)
    dealt = sum(len(ids) for ids in placed.values())
    for label in sorted(groups):
        for test in sorted(groups[label], key=lambda t: _order(seed, t.id)):
            if test.id in pinned:
                continue
            dealt += 1
            deficits = [shares[i] * dealt - len(placed[name]) for i, name in enumerate(SETS)]
            best = max(range(len(SETS)), key=lambda i: (deficits[i], -i))
            placed[SETS[best]].append(test.id)
    grown_ids = tuple(t.id for t in grown)
    order = {t.id: i for i, t in enumerate(tests)}
    return Split(
        seed=seed,
        fractions=(fractions[0], fractions[1], fractions[2]),
        train=tuple(sorted(placed["train"], key=order.__getitem__)) + grown_ids,
        selection=tuple(sorted(placed["selection"], key=order.__getitem__)),
        confirm=tuple(sorted(placed["confirm"], key=order.__getitem__)),
        pinned=pinned,
        grown=grown_ids,
        strata={label: len(group) for label, group in groups.items()},
    )


def parse_fractions(text: str) -> tuple[float, float, float]:
    """``--split 40/20/40``: three positive shares, in any unit.

    Raises:
        ValueError: Not three positive numbers separated by ``/``.
    """
    parts = text.split("/")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) != 3 or any(not v > 0 for v in values):
        raise ValueError(f"expected TRAIN/SELECTION/CONFIRM shares such as 40/20/40, got {text!r}")
    return (values[0], values[1], values[2])
