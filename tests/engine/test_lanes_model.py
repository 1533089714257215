"""Lanes on the embedded model (engine/lane_probe.py, engine/llama_lanes.py): the probe
measures every way, and whichever way its verdict chooses, replies equal one at a time's.
Which way is faster depends on the machine, so the tests that need a way keep a verdict
saying so in the home first, as the probe would have."""

from __future__ import annotations

import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from skilleval.engine import llama
from skilleval.engine.base import Message, Request
from skilleval.engine.lane_probe import LaneVerdict, probe_lanes
from skilleval.engine.llama import LlamaConfig, LlamaProvider
from skilleval.engine.wait_policy import ThreadCount
from tests.cli.fresh import run_json
from tests.engine.test_llama_batch import key

pytestmark = pytest.mark.model

LANES_WIN = LaneVerdict(2, one_ms=8.0, batched_ms=9.0, lanes_ms=4.0, same_bits=True)
LANES_SHARE = LaneVerdict(2, one_ms=8.0, batched_ms=5.0, lanes_ms=3.0, same_bits=True)
LANES_LOSE = LaneVerdict(2, one_ms=8.0, batched_ms=5.0, lanes_ms=7.0, same_bits=True)

ASKS = [
    Request(messages=(Message("user", text),), max_tokens=max_tokens)
    for text, max_tokens in (
        ("Name a colour.", 12),
        ("Write a commit message for a fix to the CSV parser.", 24),
        ("Count to four.", 16),
        ("What is the capital of Italy?", 10),
        ("Give a verb.", 6),
        ("Describe the sea in one sentence.", 20),
    )
] + [
    Request(messages=(Message("user", "Is the sky blue?"),), max_tokens=4, choices=("yes", "no")),
    Request(
        messages=(Message("user", "Reply with a JSON object with a key ok."),),
        max_tokens=16,
        json_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}},
    ),
]


@pytest.fixture(scope="module")
def alone(tmp_path_factory: pytest.TempPathFactory) -> list[object]:
    provider = LlamaProvider(LlamaConfig(parallel=1), tmp_path_factory.mktemp("alone"))
    try:
        return [key(provider.complete(ask)) for ask in ASKS]
    finally:
        provider.close()


def _provider(home: Path, found: LaneVerdict) -> LlamaProvider:
    provider = LlamaProvider(LlamaConfig(parallel=4, threads=found.threads), home)
    provider._lane_policy.keep(found)
    return provider


@pytest.mark.parametrize("threads", [1, 2])
def test_the_probe_measures_every_way_and_one_thread_gives_the_same_bits(
    tmp_path: Path, threads: int
) -> None:
    provider = LlamaProvider(LlamaConfig(threads=threads), tmp_path)
    try:
        found = probe_lanes(provider._load(), threads)
    finally:
        provider.close()
    assert found.threads == threads
    assert min(found.one_ms, found.batched_ms, found.lanes_ms) > 0
    # Each dot product is computed whole by one thread, whatever their number.
    assert found.same_bits


@pytest.mark.parametrize(
    ("found", "lanes"),
    [
        (LANES_WIN, (2, 1, 1)),
        (LANES_SHARE, (2, 2, 1)),
        (LANES_LOSE, (1, 4, 2)),
    ],
)
def test_replies_equal_one_at_a_time_whichever_way_the_verdict_chose(
    tmp_path: Path, alone: list[object], found: LaneVerdict, lanes: tuple[int, int, int]
) -> None:
    provider = _provider(tmp_path, found)
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            asked = list(pool.map(lambda ask: key(provider.complete(ask)), ASKS))
        together = [key(answer) for answer in provider.complete_batch(ASKS)]
        info = provider.engine_info()
    finally:
        provider.close()
    assert asked == alone
    assert together == alone
    assert info["batch_width"] == 4
    shape = info["lanes"]
    assert (shape["count"], shape["width"], shape["threads"]) == lanes
    assert shape["lanes_ms"] == found.lanes_ms


@pytest.mark.parametrize("asked", [LlamaConfig(parallel=4), LlamaConfig()])
def test_a_busy_machine_gives_one_thread_and_still_a_lane_a_core(
    tmp_path: Path, alone: list[object], asked: LlamaConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Other processes keep a core busy: the run gets one thread, but lanes hold no barrier.
    monkeypatch.setattr(llama, "default_threads", lambda: 2)
    monkeypatch.setattr(llama, "thread_count", lambda _set, _cores: ThreadCount(1, "busy"))
    provider = LlamaProvider(asked, tmp_path)
    provider._lane_policy.keep(LaneVerdict(1, 8.0, 9.0, 4.0, same_bits=True, lanes=2))
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(lambda ask: key(provider.complete(ask)), ASKS))
        info = provider.engine_info()
    finally:
        provider.close()
    assert answers == alone
    assert info["threads"] == 1
    shape = info["lanes"]
    assert (shape["count"], shape["width"], shape["threads"]) == (2, 1, 1)


def test_one_thread_or_one_request_at_a_time_needs_no_lanes(tmp_path: Path) -> None:
    for config in (LlamaConfig(parallel=4, threads=1), LlamaConfig(parallel=1, threads=2)):
        provider = LlamaProvider(config, tmp_path)
        try:
            provider.complete(ASKS[0])
            assert "lanes" not in provider.engine_info()
        finally:
            provider.close()


SUITE = """
version: 1
model: {provider: gguf, threads: 2}
decoding: {max_tokens: 16, seed: 3}
prompts: ["You answer in one short sentence. {{q}}"]
tests:
  - id: capital
    vars: {q: "What is the capital of France?"}
  - id: colour
    vars: {q: "What colour is the sky on a clear day?"}
  - id: count
    vars: {q: "Count from one to five."}
  - id: verb
    vars: {q: "Give one verb that means to run fast."}
"""


def test_a_run_in_lanes_records_them_and_the_outputs_of_a_run_one_at_a_time(
    tmp_path: Path,
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(SUITE), encoding="utf-8")
    home = tmp_path / "home"
    _provider(home, LANES_WIN).close()
    wide, _ = run_json(["run", str(suite), "--no-cache", "--jobs", "4"], home)
    one = tmp_path / "one.yaml"
    one.write_text(textwrap.dedent(SUITE).replace("threads: 2", "threads: 2, parallel: 1"))
    single, _ = run_json(["run", str(one), "--no-cache"], tmp_path / "single")
    outputs = [
        {(r["test_id"], r["arm"]): r["output"] for r in run["records"]} for run in (wide, single)
    ]
    assert outputs[0] == outputs[1]
    lanes = wide["environment"]["lanes"]
    assert (lanes["count"], lanes["width"], lanes["threads"]) == (2, 1, 1)
    assert lanes["lanes_ms"] == LANES_WIN.lanes_ms
    assert "lanes" not in single["environment"]
