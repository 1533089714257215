"""The benchmark's ceiling replays skilleval's batched schedule (bench/ceiling_schedule.py):
recorded from the engine's decoder over a fake llama.cpp, replayed, the same batches come out.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from skilleval.engine.batch import BatchDecoder, BatchJob, Deliver, ListFeed
from skilleval.engine.prefix_store import PrefixStore
from tests.engine.test_batch import FakeBackend, FakeSampler

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from ceiling_schedule import (  # bench/ is not a package: imported from its folder
    CeilingDecoder,
    Diverged,
    Plan,
    Recorder,
    install,
    lanes_of,
    replay,
    replay_all_waiting,
)

SYSTEM = tuple(range(1, 13))
PROMPTS = [(*SYSTEM, 20 + i, 21 + i, 22 + i, 23) for i in range(6)] + [(40, 41, 42, 43, 44)]
REPLIES = [[3, 4, 5], [7], [8, 9, 10, 11, 12, 13], [14, 15], [16, 17, 18], [19] * 5, [30, 31]]
MAX_TOKENS = [16, 16, 16, 16, 16, 3, 16]


class Trickle:
    """A queue that receives one more request every third time the decoder asks, so slots
    sometimes find none waiting, as skilleval's queue does while its callers grade."""

    def __init__(self, jobs: Sequence[BatchJob]) -> None:
        self.inner = ListFeed(jobs)
        self.jobs = jobs
        self.asked = 0

    def _arrived(self) -> int:
        return 2 + self.asked // 3

    def take(self) -> tuple[BatchJob, Deliver] | None:
        self.asked += 1
        if self.inner._next >= min(self._arrived(), len(self.jobs)):
            return None
        return self.inner.take()

    def waiting(self) -> Sequence[tuple[int, ...]]:
        return self.inner.waiting()[: max(0, self._arrived() - self.inner._next)]


class SlowSampler(FakeSampler):
    """Takes a moment per token, so that two lanes' drains overlap."""

    def sample(self, index: int) -> int:
        time.sleep(0.002)
        return super().sample(index)


def script() -> dict[tuple[int, ...], Sequence[int]]:
    return dict(zip(PROMPTS, REPLIES, strict=True))


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[dict[str, Any], FakeBackend]:
    """The engine's decoder run over a trickling feed, in two drains, with a prefix store."""
    backend = FakeBackend(script())
    log: list[str] = []
    jobs = [
        BatchJob(p, n, lambda: FakeSampler(backend, log))
        for p, n in zip(PROMPTS, MAX_TOKENS, strict=True)
    ]
    recorder = Recorder(describe=lambda job: {"prompt_len": len(job.prompt)}, cells=lambda d: 64)
    uninstall = install(recorder, lambda decoder, token: decoder.backend.is_eog(token))
    try:
        decoder = BatchDecoder(backend, 3, 64, 4, PrefixStore(tmp_path / "a"))
        decoder.drain(Trickle(jobs[:5]))
        decoder.drain(ListFeed(jobs[5:]))
    finally:
        uninstall()
    return recorder.to_json(), backend


def ceiling_run(
    schedule: dict[str, Any], folder: Path, whole: bool | None = None
) -> tuple[Any, FakeBackend]:
    """The recorded schedule replayed; with ``whole`` (True or False), all requests waiting
    at once instead, prompts evaluated whole or a chunk a step."""
    backend = FakeBackend(script())
    log: list[str] = []

    def make_decoder(spec: dict[str, Any], plans: dict[int, Plan]) -> CeilingDecoder:
        assert spec["cells"] == 64
        store = PrefixStore(folder) if spec["store"] else None
        return CeilingDecoder(
            backend, spec["width"], spec["n_ctx"], spec["n_batch"], store, plans=plans
        )

    def make_sampler(job: dict[str, Any]) -> Any:
        return lambda: FakeSampler(backend, log)

    if whole is None:
        done = replay(schedule, make_decoder, make_sampler)
    else:
        done = replay_all_waiting(schedule, make_decoder, make_sampler, whole)
    return done, backend


def test_the_replay_makes_the_engine_s_batches_and_replies(
    recorded: tuple[dict[str, Any], FakeBackend], tmp_path: Path
) -> None:
    schedule, engine = recorded
    # The feed was empty at times, and there were two drains.
    assert any(e == ["t", None] for d in schedule["drains"] for e in d["events"])
    assert len(schedule["drains"]) == 2
    assert [j["tokens"] for j in schedule["jobs"]] == [
        r[:n] for r, n in zip(REPLIES, MAX_TOKENS, strict=True)
    ]
    assert [j["eog"] for j in schedule["jobs"]] == [True] * 5 + [False, True]
    done, backend = ceiling_run(schedule, tmp_path / "b")
    # Call for call the same work: every batch, with its tokens, positions and sequences.
    assert backend.batches == engine.batches
    assert done.replies == [j["tokens"] for j in schedule["jobs"]]
    assert done.generated == sum(len(j["tokens"]) for j in schedule["jobs"])
    assert done.evaluated == sum(j["evaluated"] for j in schedule["jobs"])
    assert done.busy_s > 0


def test_a_sequence_that_ends_elsewhere_is_caught(
    recorded: tuple[dict[str, Any], FakeBackend], tmp_path: Path
) -> None:
    schedule, _ = recorded
    # One request said to have ended a token early: the decoder frees its slot a step
    # sooner, asks its feed at another moment, and the replay says so.
    first = schedule["jobs"][0]
    first["tokens"] = first["tokens"][:-1]
    with pytest.raises(Diverged):
        ceiling_run(schedule, tmp_path / "c")


def test_all_waiting_prompts_are_placed_whole_or_a_chunk_a_step_with_the_same_replies(
    recorded: tuple[dict[str, Any], FakeBackend], tmp_path: Path
) -> None:
    schedule, _ = recorded
    runs = {w: ceiling_run(schedule, tmp_path / str(w), whole=w) for w in (False, True)}
    tokens = [j["tokens"] for j in schedule["jobs"]]
    for done, _ in runs.values():
        assert done.replies == tokens

    def generating_before_last_first_prompt(batches: list[list[Any]]) -> bool:
        """Whether a decode step of generated tokens came before the first three prompts
        (the slots' first admissions) were all evaluated."""
        prompt_ends = [
            i
            for i, batch in enumerate(batches)
            if any(logits and pos == len(PROMPTS[0]) - 1 for _, pos, _, logits in batch)
        ]
        generating = [
            i
            for i, batch in enumerate(batches)
            if all(pos >= len(PROMPTS[0]) for _, pos, _, _ in batch)
        ]
        return generating[0] < prompt_ends[2]

    # A chunk a step: the first slot generates while the others still fill. Whole: the
    # three prompts first, each in batches of its own, then one step for all three.
    assert generating_before_last_first_prompt(runs[False][1].batches)
    assert not generating_before_last_first_prompt(runs[True][1].batches)
    assert runs[True][0].steps < runs[False][0].steps


def test_a_choice_among_the_generations_is_replayed_with_the_same_scores(
    tmp_path: Path,
) -> None:
    backend = FakeBackend(script())
    log: list[str] = []
    jobs = [
        BatchJob(PROMPTS[0], 16, lambda: FakeSampler(backend, log)),
        BatchJob.choice(PROMPTS[1], ((3, 4, 0), (3, 5, 0), (6, 0))),
        BatchJob(PROMPTS[2], 16, lambda: FakeSampler(backend, log)),
    ]
    recorder = Recorder(cells=lambda d: 64)
    uninstall = install(recorder, lambda decoder, token: decoder.backend.is_eog(token))
    try:
        BatchDecoder(backend, 2, 64, 4).drain(Trickle(jobs))
    finally:
        uninstall()
    schedule = recorder.to_json()
    assert schedule["scored"] == 1
    choice = schedule["jobs"][1]
    assert choice["options"] == [[3, 4, 0], [3, 5, 0], [6, 0]]
    assert len(choice["scores"]) == 3
    done, replayed = ceiling_run(schedule, tmp_path / "d")
    assert replayed.batches == backend.batches
    assert done.replies == [j.get("tokens", j.get("scores")) for j in schedule["jobs"]]


def test_lanes_are_replayed_each_on_its_own_decoder_at_the_same_time(tmp_path: Path) -> None:
    # Two lanes (engine/llama_lanes.py): two decoders over contexts of their own, draining at
    # once on two threads.
    backends = [FakeBackend(script()), FakeBackend(script())]
    log: list[str] = []
    shares = [[0, 2, 4], [1, 3, 5, 6]]
    gate = threading.Barrier(2)
    recorder = Recorder(cells=lambda d: 64)
    uninstall = install(recorder, lambda decoder, token: decoder.backend.is_eog(token))

    def lane(n: int) -> None:
        backend = backends[n]
        jobs = [
            BatchJob(PROMPTS[i], MAX_TOKENS[i], lambda b=backend: SlowSampler(b, log))
            for i in shares[n]
        ]
        decoder = BatchDecoder(backend, 1, 64, 4)
        gate.wait()
        decoder.drain(ListFeed(jobs[:2]))
        decoder.drain(ListFeed(jobs[2:]))

    try:
        threads = [threading.Thread(target=lane, args=(n,)) for n in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        uninstall()
    schedule = recorder.to_json()
    lanes = lanes_of(schedule)
    assert sorted(len(group) for group in lanes) == [2, 2]
    assert {frozenset(schedule["drains"][i]["decoder"] for i in g) for g in lanes} == {
        frozenset({0}),
        frozenset({1}),
    }
    # Without times (an older schedule), one lane in recorded order.
    untimed = {**schedule, "drains": [{"decoder": d["decoder"]} for d in schedule["drains"]]}
    assert lanes_of(untimed) == [[0, 1, 2, 3]]

    current = threading.local()
    made: list[FakeBackend] = []

    def make_decoder(spec: dict[str, Any], plans: dict[int, Plan]) -> CeilingDecoder:
        backend = FakeBackend(script())
        made.append(backend)
        return CeilingDecoder(
            backend, spec["width"], spec["n_ctx"], spec["n_batch"], None, plans=plans
        )

    def entering(decoder: CeilingDecoder) -> None:
        current.backend = decoder.backend

    done = replay(
        schedule, make_decoder, lambda job: lambda: FakeSampler(current.backend, log), entering
    )
    assert len(made) == 2
    assert done.replies == [j["tokens"] for j in schedule["jobs"]]
    assert sorted(b.batches for b in made) == sorted(b.batches for b in backends)
