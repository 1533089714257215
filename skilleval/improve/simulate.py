"""The false-acceptance simulation: how often the loop accepts an edit that is no better.

Each simulated run has ``tests`` tests, each with its own chance of passing drawn uniformly
from [0, 1] (some tests are easy, some hard). Every skill (the current one and each
candidate) passes each test independently with that test's chance, plus ``effect`` for the
candidates when simulating a truly better edit. The tests are split as ``improve`` splits
them (40/20/40 by default), and each round runs the loop's own screening and choice
(``choice.py``) and the acceptance rule (``rule.py``) at α split over the rounds. Under the
null (``effect = 0``) no candidate is better, so every acceptance is a false one.

``python -m skilleval.improve.simulate`` prints the table docs/statistics.md shows.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Sequence

from skilleval.improve import choice, rule
from skilleval.improve.candidates import Part
from skilleval.improve.choice import Outcomes
from skilleval.improve.evaluate import TestOutcome
from skilleval.util.frozen import frozen


@frozen
class SimResult:
    runs: int
    accepted: int

    @property
    def rate(self) -> float:
        return self.accepted / self.runs


def _draw(rng: random.Random, chances: Sequence[float], effect: float) -> dict[str, TestOutcome]:
    out = {}
    for i, p in enumerate(chances):
        passed = int(rng.random() < min(1.0, p + effect))
        out[f"t{i}"] = TestOutcome(f"t{i}", 1, passed, 0, None)
    return out


def simulate(
    *,
    runs: int,
    tests: int = 30,
    candidates: int = 4,
    rounds: int = 1,
    alpha: float = 0.05,
    effect: float = 0.0,
    fractions: tuple[float, float, float] = (0.4, 0.2, 0.4),
    seed: int = 0,
    naive: bool = False,
) -> SimResult:
    """Simulated runs and how many accepted at least one edit.

    ``naive`` plays the design this loop replaces: the best candidate *on the held-out set*
    is tested on that same set, at the full α every round. It accepts far more often than α
    under the null, which is what a selection-biased held-out score looks like.
    """
    rng = random.Random(seed)
    total = sum(fractions)
    n_train = round(tests * fractions[0] / total)
    n_sel = round(tests * fractions[1] / total)
    ids = [f"t{i}" for i in range(tests)]
    train, selection, confirm = (
        ids[:n_train],
        ids[n_train : n_train + n_sel],
        ids[n_train + n_sel :],
    )
    per_round = rule.round_alpha(alpha, rounds)
    accepted = 0
    for _ in range(runs):
        chances = [rng.random() for _ in range(tests)]
        base = _draw(rng, chances, 0.0)
        any_accepted = False
        for _round in range(rounds):
            pool = {f"c{k}": _draw(rng, chances, effect) for k in range(candidates)}
            if naive:
                everyone: list[tuple[str, Part, Outcomes]] = [
                    (n, "instructions", o) for n, o in pool.items()
                ]
                ranked = choice.rank(everyone, base, confirm)
                check = rule.confirm(
                    "instructions", pool[ranked[0].name], base, confirm, alpha=alpha
                )
                if check.accepted:
                    any_accepted = True
                    base = pool[ranked[0].name]
                continue
            survivors: list[tuple[str, Part, Outcomes]] = [
                (name, "instructions", o)
                for name, o in pool.items()
                if choice.screen("instructions", o, base, train) is None
            ]
            best = choice.chosen(choice.rank(survivors, base, selection))
            if best is None:
                continue
            check = rule.confirm("instructions", pool[best.name], base, confirm, alpha=per_round)
            if check.accepted:
                any_accepted = True
                base = pool[best.name]
        accepted += any_accepted
    return SimResult(runs, accepted)


def main() -> None:
    """The table of docs/statistics.md: acceptance rates under the null and one alternative."""
    out = sys.stdout
    out.write("| design | tests | candidates | rounds | effect | runs | accepted |\n")
    out.write("|---|---:|---:|---:|---:|---:|---:|\n")
    for naive, tests, candidates, rounds, effect in [
        (False, 30, 4, 1, 0.0),
        (False, 30, 4, 3, 0.0),
        (False, 60, 4, 1, 0.0),
        (False, 60, 8, 3, 0.0),
        (False, 200, 4, 1, 0.0),
        (True, 60, 8, 3, 0.0),
        (False, 30, 4, 1, 0.3),
        (False, 60, 4, 1, 0.3),
        (False, 200, 4, 1, 0.15),
    ]:
        result = simulate(
            runs=2000,
            tests=tests,
            candidates=candidates,
            rounds=rounds,
            effect=effect,
            seed=1,
            naive=naive,
        )
        out.write(
            f"| {'best on held-out' if naive else 'improve'} | {tests} | {candidates} | "
            f"{rounds} | {effect:g} | {result.runs} | {result.rate:.2%} |\n"
        )


if __name__ == "__main__":
    main()
