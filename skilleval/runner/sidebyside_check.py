"""The side-by-side judge on the judge-fitness set: does it prefer the good output?

Every pair of the set (``suites/judge-fitness.yaml``) has an output that meets its rubric and
one that misses it. Shown both, as the skill-on and skill-off answers of a test, a fit
side-by-side judge prefers the good one on both calls (the places swapped); a judge that
favours a position gives a tie, and one that cannot tell them apart gives ties or the bad
output. ``skilleval judge-check --side-by-side`` prints these figures beside the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from skilleval.api import Check, Judge, Verdict
from skilleval.assertions.builtin.sidebyside import side_by_side
from skilleval.runner.judgecheck import Pair
from skilleval.util.frozen import frozen


@frozen
class Preferred:
    """What the side-by-side judge made of one pair."""

    pair: Pair
    preferred: str
    """``good``, ``bad``, ``tie`` or ``error``."""
    split: bool
    """The two calls disagreed (a preference for a position, or for neither)."""
    reason: str = ""


@frozen
class SideBySideReport:
    """Every pair's outcome, and the figures over them."""

    outcomes: tuple[Preferred, ...]

    def count(self, preferred: str) -> int:
        return sum(o.preferred == preferred for o in self.outcomes)

    @property
    def accuracy(self) -> float | None:
        """The share of the pairs judged where the good output was preferred."""
        judged = len(self.outcomes) - self.count("error")
        return self.count("good") / judged if judged else None

    @property
    def split(self) -> int:
        return sum(o.split for o in self.outcomes)

    def line(self) -> str:
        judged = len(self.outcomes) - self.count("error")
        accuracy = "n/a" if self.accuracy is None else f"{self.accuracy:.2f}"
        return (
            f"side by side    {accuracy}  (good preferred on {self.count('good')}/{judged} pairs, "
            f"bad on {self.count('bad')}, ties {self.count('tie')}; the two calls disagreed on "
            f"{self.split}"
            + (f"; {self.count('error')} errors" if self.count("error") else "")
            + ")"
        )


def prefer(judge: Judge, pair: Pair) -> Preferred:
    """Show ``pair``'s good and bad outputs side by side, as the on and off arms."""
    items = list(pair.value) if isinstance(pair.value, tuple) else [pair.value]

    def check(arm: str, output: str) -> Check:
        return Check(output=output, value=items, prompt=pair.prompt, judge=judge, arm=arm)

    on, _off = _verdicts(side_by_side([check("off", pair.bad), check("on", pair.good)]))
    if on.error is not None:
        return Preferred(pair, "error", False, on.error)
    details = on.details
    named = {"on": "good", "off": "bad", "tie": "tie"}
    calls = [c for item in details.get("items", []) for c in item.get("calls", [])]
    split = any(a != b for a, b in zip(calls[::2], calls[1::2], strict=False))
    return Preferred(pair, named.get(str(details.get("preferred")), "tie"), split, on.reason)


def _verdicts(verdicts: Sequence[Verdict]) -> tuple[Verdict, Verdict]:
    """The on arm's verdict and the off arm's (they come in arm order: off, on)."""
    off, on = verdicts
    return on, off


def run_side_by_side_check(
    judge: Judge,
    pairs: Sequence[Pair],
    progress: Callable[[Preferred, int, int], None] | None = None,
) -> SideBySideReport:
    """Every pair shown side by side to ``judge``."""
    outcomes = []
    for pair in pairs:
        outcomes.append(prefer(judge, pair))
        if progress is not None:
            progress(outcomes[-1], len(outcomes), len(pairs))
    return SideBySideReport(tuple(outcomes))
