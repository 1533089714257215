"""The judge-fitness interval: Wilson on a mean of bounded per-pair scores."""

from __future__ import annotations

import random

import pytest

from skilleval.stats import wilson
from skilleval.stats.fitness import above_chance, figure_words, wilson_mean


@pytest.mark.parametrize(("x", "n"), [(0, 5), (3, 7), (7, 7), (36, 73), (60, 73)])
def test_it_is_wilson_when_every_score_is_zero_or_one(x: int, n: int) -> None:
    assert wilson_mean(x / n, n) == pytest.approx(wilson(x, n))


def test_edges_and_bad_arguments() -> None:
    assert wilson_mean(0.5, 0) is None
    with pytest.raises(ValueError, match="mean"):
        wilson_mean(1.5, 3)
    with pytest.raises(ValueError, match="n must"):
        wilson_mean(0.5, -1)
    with pytest.raises(ValueError, match="z must"):
        wilson_mean(0.5, 3, z=0)


def test_a_constant_judge_is_never_above_chance() -> None:
    """Every pair half right: the mean is exactly chance at any number of pairs."""
    for n in (1, 10, 73, 10_000):
        assert not above_chance(wilson_mean(0.5, n))


def test_the_interval_covers_the_truth_at_least_95_percent_of_the_time() -> None:
    """Pairs scored 0, 0.5 or 1 with correlated halves: coverage must hold (conservative)."""
    rng = random.Random(7)
    truth, n, covered, runs = 0.7, 73, 0, 2000
    weights = (0.15, 0.3, 0.55)  # P(0), P(0.5), P(1): mean 0.15*0 + 0.3*0.5 + 0.55 = 0.7
    for _ in range(runs):
        scores = rng.choices((0.0, 0.5, 1.0), weights, k=n)
        interval = wilson_mean(sum(scores) / n, n)
        assert interval is not None
        covered += interval[0] <= truth <= interval[1]
    assert covered / runs >= 0.95


def test_words_say_where_chance_lies() -> None:
    assert figure_words("fitness", 0.55, (0.43, 0.66), 73, "pairs") == (
        "fitness 0.55 [0.43, 0.66] includes chance 0.5 on 73 pairs"
    )
    assert "is above chance 0.5" in figure_words("fitness", 0.9, (0.8, 0.95), 73, "pairs")
    assert "is below chance 0.5" in figure_words("fitness", 0.1, (0.05, 0.2), 73, "pairs")
