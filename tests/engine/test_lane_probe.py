"""The lane probe's verdict and its memo (engine/lane_probe.py), without a model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skilleval.engine.lane_probe import (
    GAIN,
    MEMO_FILE,
    OUTNUMBERED_GAIN,
    LanePolicy,
    LaneVerdict,
    lane_count,
)


def verdict(
    one: float = 8.0,
    batched: float = 9.0,
    lanes: float = 4.0,
    *,
    threads: int = 2,
    same_bits: bool = True,
    count: int = 0,
) -> LaneVerdict:
    return LaneVerdict(threads, one, batched, lanes, same_bits, probe_ms=900.0, lanes=count)


def test_lanes_are_used_when_they_beat_the_faster_other_way_by_the_margin() -> None:
    assert verdict(8.0, 9.0, 4.0).use_lanes
    assert verdict(8.0, 4.0, 4.0).use_lanes is False  # batching is as fast
    assert verdict(8.0, 9.0, 8.0 * GAIN).use_lanes
    assert verdict(8.0, 9.0, 8.0 * GAIN + 0.01).use_lanes is False
    assert verdict(same_bits=False).use_lanes is False  # replies would change
    assert verdict(threads=1).use_lanes is False


def test_a_lane_holds_one_request_unless_batching_shares_a_step() -> None:
    assert verdict(8.0, 9.0).lane_width(4, 2) == 1  # a step of two costs two steps
    assert verdict(8.0, 5.0, 2.0).lane_width(4, 2) == 2
    assert verdict(8.0, 5.0, 2.0, threads=3).lane_width(4, 3) == 2
    assert verdict(8.0, 5.0, 2.0).lane_width(1, 1) == 1
    assert verdict(8.0, 5.0, 2.0, threads=16).lane_width(4, 4) == 1


def test_lanes_are_one_a_core_unless_the_threads_are_set() -> None:
    assert lane_count(2, None, 2) == 2
    assert lane_count(1, None, 2) == 2  # a busy machine: one thread, but lanes wait on nothing
    assert lane_count(1, 1, 2) == 1  # `threads: 1` set: one thread it is
    assert lane_count(4, 4, 2) == 4
    assert lane_count(1, None, 1) == 1
    assert verdict(8.0, 9.0, 4.0, threads=1, count=2).use_lanes
    assert verdict(8.0, 9.0, 4.0, threads=1, count=2).lanes == 2
    assert verdict(8.0, 9.0, 4.0, threads=2).lanes == 2


def test_lanes_that_outnumber_the_threads_need_only_beat_them() -> None:
    # Busy: one thread, two lanes. The lanes also take prompts with more of the machine.
    assert verdict(8.0, 9.0, 8.0 * GAIN + 0.5, threads=1, count=2).use_lanes
    assert verdict(8.0, 9.0, 8.0 * OUTNUMBERED_GAIN, threads=1, count=2).use_lanes
    assert verdict(8.0, 9.0, 8.0 * OUTNUMBERED_GAIN + 0.01, threads=1, count=2).use_lanes is False
    assert verdict(8.0, 9.0, 8.0 * GAIN + 0.5, threads=2).use_lanes is False


@pytest.mark.parametrize(
    ("found", "asked", "auto", "shape"),
    [
        (verdict(8.0, 9.0, 4.0), 1, True, (2, 1, 1)),  # none asked: one request a lane
        (verdict(8.0, 9.0, 4.0), 4, False, (2, 1, 1)),
        (verdict(8.0, 5.0, 2.0), 4, False, (2, 2, 1)),  # batching shares a step: two a lane
        (verdict(), 2, False, (2, 1, 1)),
        (verdict(8.0, 5.0, 7.0), 4, False, None),  # batching wins: one decoder batches
        (verdict(8.0, 5.0, 7.0), 1, True, None),  # none asked, no lanes: one at a time
        (verdict(8.0, 7.5, 7.0), 4, False, None),  # neither wins: one decoder, as asked
        (verdict(8.0, 9.0, 4.0, threads=1, count=2), 4, False, (2, 1, 1)),  # busy: lanes
        (verdict(8.0, 9.0, 4.0, threads=1, count=2), 1, True, (2, 1, 1)),
        (verdict(8.0, 8.5, 8.0, threads=1), 4, False, None),  # one thread, one lane
        (verdict(8.0, 5.0, 8.0, threads=1), 4, False, None),
        (verdict(8.0, 9.0, 2.0, threads=4), 2, False, (2, 1, 2)),  # two lanes of two threads
        (verdict(same_bits=False), 4, False, None),  # lanes would change bits
    ],
)
def test_the_verdict_plans_lanes_a_batch_or_one_at_a_time(
    found: LaneVerdict, asked: int, auto: bool, shape: tuple[int, int, int] | None
) -> None:
    assert found.plan(asked, found.threads, auto) == shape


@pytest.fixture
def facts() -> tuple[str, str, tuple[str, ...]]:
    return "ab" * 32, "0.3.36", ("AVX2",)


def test_a_kept_verdict_is_read_back_for_its_thread_count_only(
    tmp_path: Path, facts: tuple[str, str, tuple[str, ...]]
) -> None:
    LanePolicy(tmp_path, 0, lambda: facts).keep(verdict())
    found = LanePolicy(tmp_path, 0, lambda: facts).recall(2)
    assert found == verdict()
    assert found is not None
    assert found.remembered
    assert LanePolicy(tmp_path, 0, lambda: facts).recall(4) is None
    assert LanePolicy(tmp_path, -1, lambda: facts).recall(2) is None  # other GPU layers
    other = ("cd" * 32, "0.3.36", ("AVX2",))
    assert LanePolicy(tmp_path, 0, lambda: other).recall(2) is None
    busy = verdict(threads=1, count=2)
    LanePolicy(tmp_path, 0, lambda: facts).keep(busy)
    assert LanePolicy(tmp_path, 0, lambda: facts).recall(1, 2) == busy
    assert LanePolicy(tmp_path, 0, lambda: facts).recall(1) is None  # one lane: not measured
    assert LanePolicy(tmp_path, 0, lambda: facts).recall(2) == verdict()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("lanes_ms", 0.5),  # edited: the seal no longer matches
        ("threads", True),
        ("lanes", 3),
    ],
)
def test_an_edited_verdict_is_measured_again(
    tmp_path: Path, facts: tuple[str, str, tuple[str, ...]], field: str, value: object
) -> None:
    LanePolicy(tmp_path, 0, lambda: facts).keep(verdict())
    memo = tmp_path / MEMO_FILE
    raw = json.loads(memo.read_text())
    (entry,) = raw["entries"].values()
    entry[field] = value
    memo.write_text(json.dumps(raw))
    assert LanePolicy(tmp_path, 0, lambda: facts).recall(2) is None


GOOD = {
    "threads": 2,
    "lanes": 2,
    "one_ms": 8,
    "batched_ms": 9,
    "lanes_ms": 4,
    "same_bits": True,
    "probe_ms": 900,
}
"""An entry of the shape :meth:`LaneVerdict.to_json` writes."""


@pytest.mark.parametrize(
    "changed",
    [
        {"lanes": None},  # no lane count (None: the key left out)
        {"lanes": True},
        {"same_bits": "yes"},
        {"threads": 0},
        {"one_ms": 0},
        {"probe_ms": None},
        {"lanes_ms": 1e12},
    ],
)
def test_only_the_shape_keep_writes_is_read(changed: dict[str, object]) -> None:
    assert LaneVerdict.from_json(GOOD) == verdict(8.0, 9.0, 4.0)
    assert LaneVerdict.from_json({}) is None
    entry = {k: v for k, v in (GOOD | changed).items() if v is not None or k == "probe_ms"}
    assert LaneVerdict.from_json(entry) is None


def test_the_environment_block_names_the_lanes_and_what_chose_them(
    tmp_path: Path, facts: tuple[str, str, tuple[str, ...]]
) -> None:
    policy = LanePolicy(tmp_path, 0, lambda: facts)
    assert policy.info(1, 4, 2) == {}
    policy.keep(verdict())
    assert policy.info(2, 1, 1) == {
        "lanes": {
            "count": 2,
            "width": 1,
            "threads": 1,
            "one_ms": 8.0,
            "batched_ms": 9.0,
            "lanes_ms": 4.0,
            "same_bits": True,
        }
    }
