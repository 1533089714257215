"""The shard partition: deterministic, balanced by cost, every test in exactly one part."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from skilleval.runner.shard import (
    Shard,
    costs_for,
    parse_shard,
    partition,
    shard_tests,
    suite_digest,
)
from skilleval.suite.load import load_suite
from skilleval.suite.model import TestCase as Case


def load_tests(tmp_path: Path, lengths: list[int]) -> list[Case]:
    lines = ["version: 1", "model: {provider: echo}", 'prompts: ["{{text}}"]', "tests:"]
    for i, n in enumerate(lengths):
        lines.append(f"  - id: case-{i:03d}\n    vars: {{text: '{'w' * n}'}}")
    path = tmp_path / "suite.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    suite, _ = load_suite(path)
    return list(suite.tests)


@pytest.mark.parametrize("count", [1, 2, 3, 7, 40])
def test_every_test_is_in_exactly_one_shard(tmp_path: Path, count: int) -> None:
    rng = random.Random(count)
    tests = load_tests(tmp_path, [rng.randint(1, 300) for _ in range(25)])
    parts = [shard_tests(tests, Shard(k, count)) for k in range(1, count + 1)]
    ids = [t.id for part in parts for t in part]
    assert sorted(ids) == sorted(t.id for t in tests)
    assert len(ids) == len(set(ids))
    for part in parts:  # each part keeps the suite's order
        assert [t.id for t in part] == [t.id for t in tests if t in part]
    if count > len(tests):
        assert sum(1 for p in parts if not p) == count - len(tests)


def test_the_split_depends_on_ids_and_costs_not_on_order(tmp_path: Path) -> None:
    rng = random.Random(5)
    tests = load_tests(tmp_path, [rng.randint(1, 200) for _ in range(30)])
    costs = costs_for(tests)
    split = [[t.id for t in p] for p in partition(tests, 4, costs)]
    shuffled = list(tests)
    rng.shuffle(shuffled)
    again = [sorted(t.id for t in p) for p in partition(shuffled, 4, costs)]
    assert [sorted(p) for p in split] == again
    assert split == [[t.id for t in p] for p in partition(tests, 4, costs)]


def test_shards_are_balanced_by_prompt_length(tmp_path: Path) -> None:
    rng = random.Random(11)
    tests = load_tests(tmp_path, [rng.randint(1, 400) for _ in range(60)])
    costs = costs_for(tests)
    totals = [sum(costs[t.id] for t in p) for p in partition(tests, 3, costs)]
    # Longest-first greedy: no part exceeds another by more than the largest single test.
    assert max(totals) - min(totals) <= max(costs.values())
    # Not merely by count: one huge test gets a shard to itself.
    lopsided = load_tests(tmp_path, [5000] + [10] * 9)
    parts = partition(lopsided, 2, costs_for(lopsided))
    assert sorted(len(p) for p in parts) == [1, 9]


def test_recorded_durations_win_over_prompt_length(tmp_path: Path) -> None:
    tests = load_tests(tmp_path, [10, 10, 10, 10])
    slow = {"case-000": 9000.0, "case-001": 10.0, "case-002": 10.0, "case-003": 10.0}
    parts = partition(tests, 2, costs_for(tests, slow))
    assert sorted(len(p) for p in parts) == [1, 3]
    # A test the earlier run did not have is priced from its prompt at the recorded rate.
    some = costs_for(tests, {"case-000": 100.0})
    assert some["case-001"] == pytest.approx(100.0)


@pytest.mark.parametrize(
    ("text", "shard"), [("1/1", Shard(1, 1)), ("2/3", Shard(2, 3)), (" 3 / 3 ", Shard(3, 3))]
)
def test_shard_values(text: str, shard: Shard) -> None:
    assert parse_shard(text) == shard


@pytest.mark.parametrize("text", ["0/3", "4/3", "x", "", "1/0", "0/0", "1.5/3", "2"])
def test_bad_shard_values(text: str) -> None:
    with pytest.raises(ValueError, match="expected K/N"):
        parse_shard(text)


def test_the_digest_covers_every_file_and_not_where_the_checkout_is(tmp_path: Path) -> None:
    def checkout(root: Path, skill: str) -> Path:
        (root / "skill").mkdir(parents=True)
        (root / "skill" / "SKILL.md").write_text(
            f"---\nname: s\ndescription: A skill.\n---\n{skill}\n", encoding="utf-8"
        )
        suite = root / "suite.yaml"
        suite.write_text(
            "version: 1\nmodel: {provider: echo}\nskill: skill/SKILL.md\n"
            'prompts: ["hi"]\ntests: [{id: a}]\n',
            encoding="utf-8",
        )
        return suite

    here = load_suite(checkout(tmp_path / "a", "Be brief."))[0]
    there = load_suite(checkout(tmp_path / "b" / "deeper", "Be brief."))[0]
    edited = load_suite(checkout(tmp_path / "c", "Be long."))[0]
    assert suite_digest(here) == suite_digest(there)
    assert suite_digest(here) != suite_digest(edited)
