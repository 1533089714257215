"""Screening on the train set and choosing on the selection set: pure functions over
outcomes, shared by the loop and the false-acceptance simulation (``simulate.py``).

* **Screening**: a candidate whose primary measure (see ``rule.py``) counts fewer train
  tests than the current skill's is dropped.
* **Choosing**: the survivors are ranked by their gain over the current skill on the
  selection set (the primary measure, then the other one), ties by name; the first is
  chosen only when its gain is above zero. No confirmation figure is read here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from skilleval.improve.candidates import Part
from skilleval.improve.evaluate import TestOutcome
from skilleval.improve.rule import count, primary_measure
from skilleval.util.frozen import frozen

Outcomes = Mapping[str, TestOutcome]


def other_measure(measure: str) -> str:
    return "routing" if measure == "pass" else "pass"


def screen(part: Part, outcomes: Outcomes, base: Outcomes, train: Sequence[str]) -> str | None:
    """Why the candidate is dropped on the train set; None when it stays."""
    measure = primary_measure(part)
    mine, theirs = count(outcomes, train, measure), count(base, train, measure)
    if mine < theirs:
        return f"worse than the current skill on the train set ({measure}: {mine} against {theirs})"
    return None


@frozen
class Ranked:
    name: str
    gain: tuple[int, int]
    """Selection-set gain over the current skill: the primary measure, then the other."""


def rank(
    survivors: Sequence[tuple[str, Part, Outcomes]], base: Outcomes, selection: Sequence[str]
) -> list[Ranked]:
    """The survivors, best gain on the selection set first, ties by name."""
    ranked = []
    for name, part, outcomes in survivors:
        measure = primary_measure(part)
        other = other_measure(measure)
        gain = (
            count(outcomes, selection, measure) - count(base, selection, measure),
            count(outcomes, selection, other) - count(base, selection, other),
        )
        ranked.append(Ranked(name, gain))
    return sorted(ranked, key=lambda r: (-r.gain[0], -r.gain[1], r.name))


def chosen(ranked: Sequence[Ranked]) -> Ranked | None:
    """The first ranked survivor, when it gains on the selection set."""
    return ranked[0] if ranked and ranked[0].gain > (0, 0) else None
