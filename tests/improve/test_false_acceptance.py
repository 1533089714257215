"""The false-acceptance simulation (docs/statistics.md): under a null where no candidate is
better, fewer than α of simulated runs accept an edit; choosing on the held-out set itself,
the design the loop avoids, does not keep that promise, so the check can fail."""

from __future__ import annotations

import pytest

from skilleval.improve.simulate import simulate

ALPHA = 0.05


@pytest.mark.parametrize(("tests", "candidates", "rounds"), [(30, 4, 1), (40, 6, 3)])
def test_under_the_null_fewer_than_alpha_of_runs_accept(
    tests: int, candidates: int, rounds: int
) -> None:
    result = simulate(
        runs=300, tests=tests, candidates=candidates, rounds=rounds, alpha=ALPHA, seed=20261203
    )
    assert result.rate < ALPHA


def test_choosing_on_the_held_out_set_accepts_too_often() -> None:
    result = simulate(
        runs=300, tests=60, candidates=8, rounds=3, alpha=ALPHA, seed=20261203, naive=True
    )
    assert result.rate > ALPHA


def test_a_truly_better_candidate_is_accepted_often() -> None:
    result = simulate(runs=200, tests=60, candidates=4, alpha=ALPHA, effect=0.3, seed=20261203)
    assert result.rate > 0.3
