"""Lanes (engine/llama_lanes.py): several batched decoders over one model, each with its own
queue and lock, decoding at the same time; over the fake llama.cpp of test_batch.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest
from test_batch import PROMPTS, REPLIES, FakeBackend
from test_llama_queue import SlowSampler, expected, request

from skilleval.engine.base import Completion, Request
from skilleval.engine.batch import BatchDecoder, BatchJob, BatchResult, Feed, ListFeed
from skilleval.engine.llama_lanes import Lanes
from skilleval.engine.llama_queue import Prepared
from skilleval.errors import ProviderError

Answer = Completion | ProviderError


class FakeLane:
    """What Lanes needs of a lane's decoder (engine/llama_batched.py's BatchedLlama), over a
    fake backend of its own; request i asks PROMPTS[i % 5]."""

    def __init__(self, width: int, threads: int | None, spans: list[tuple[float, float]]) -> None:
        self.width = width
        self.threads = threads
        self.cells = 0
        self.backend = FakeBackend(dict(zip(PROMPTS, REPLIES, strict=True)))
        self.decoder = BatchDecoder(self.backend, width, 64, 4)
        self.log: list[str] = []
        self.asked: list[int] = []
        self.spans = spans
        self.broken: ProviderError | None = None
        self.closed = 0

    def prepare(self, req: Request) -> Prepared:
        i = int(req.messages[0].content)
        job = BatchJob(PROMPTS[i % 5], 16, lambda: SlowSampler(self.backend, self.log))

        def finish(result: BatchResult) -> Answer:
            self.asked.append(i)
            return Completion(text=result.text.decode(), completion_tokens=result.completion_tokens)

        return Prepared(job, finish)

    def drain(self, feed: Feed) -> None:
        start = time.perf_counter()
        if self.broken is not None:
            raise self.broken
        self.decoder.drain(feed)
        self.spans.append((start, time.perf_counter()))

    def decode(self, requests: Sequence[Request]) -> list[Answer]:
        if self.broken is not None:
            raise self.broken
        prepared = [self.prepare(r) for r in requests]
        feed = ListFeed([p.job for p in prepared])
        self.drain(feed)
        return [p.finish(r) for p, r in zip(prepared, feed.results, strict=True)]

    def busy(self) -> tuple[int, float]:
        return self.decoder.generated, self.decoder.busy_s

    def close(self) -> None:
        self.closed += 1


class Maker:
    """Makes fake lanes and keeps them."""

    def __init__(self) -> None:
        self.made: list[FakeLane] = []
        self.spans: list[tuple[float, float]] = []

    def __call__(self, width: int, threads: int | None) -> FakeLane:
        lane = FakeLane(width, threads, self.spans)
        self.made.append(lane)
        return lane


def lanes(count: int, width: int) -> tuple[Lanes, Maker]:
    maker = Maker()
    out = Lanes(maker, 4)  # type: ignore[arg-type]  # a fake lane, duck-typed
    if count > 1:
        out.split(count, width, 1)
    return out, maker


def test_one_lane_until_split_then_each_lane_with_its_width_and_threads() -> None:
    one, maker = lanes(1, 4)
    assert (one.count, one.width, one.threads) == (1, 4, None)
    one.split(2, 1, 1)
    assert (one.count, one.width, one.threads) == (2, 1, 1)
    assert [lane.closed for lane in maker.made] == [1, 0, 0]  # the first lane was freed


def test_calls_from_many_threads_are_shared_among_the_lanes_with_their_own_replies() -> None:
    split, maker = lanes(2, 1)
    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(lambda i: split.ask(request(i)).text, range(30)))
    assert answers == [expected(i) for i in range(30)]
    both = maker.made[1:]
    assert all(lane.asked for lane in both)
    assert sorted(i for lane in both for i in lane.asked) == list(range(30))
    # Every sampler was made and closed on its own lane.
    assert all(
        lane.log.count("open") == lane.log.count("close") == len(lane.asked) for lane in both
    )


def test_lanes_decode_at_the_same_time_and_their_busy_time_is_counted_once() -> None:
    split, maker = lanes(2, 1)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda i: split.ask(request(i)), range(24)))
    spans = maker.spans
    overlapping = any(
        a_start < b_end and b_start < a_end
        for k, (a_start, a_end) in enumerate(spans)
        for b_start, b_end in spans[k + 1 :]
    )
    assert overlapping
    generated, seconds = split.busy()
    assert generated == sum(lane.decoder.generated for lane in maker.made)
    drains = sum(end - start for start, end in spans)
    assert max(end - start for start, end in spans) <= seconds < drains


def test_a_batch_is_shared_in_turn_and_answered_in_order() -> None:
    split, maker = lanes(3, 2)
    answers = split.decode([request(i) for i in range(7)])
    assert [a.text for a in answers if isinstance(a, Completion)] == [expected(i) for i in range(7)]
    assert [sorted(lane.asked) for lane in maker.made[1:]] == [[0, 3, 6], [1, 4], [2, 5]]


def test_a_lane_that_fails_answers_its_share_with_its_error_and_the_others_reply() -> None:
    split, maker = lanes(2, 1)
    maker.made[2].broken = ProviderError("llama.cpp failed: out of memory")
    answers = split.answer_all(
        [request(i) for i in range(4)], batches=True, check=lambda r: None, one=_never
    )
    assert [a.text if isinstance(a, Completion) else str(a) for a in answers] == [
        expected(0),
        "llama.cpp failed: out of memory",
        expected(2),
        "llama.cpp failed: out of memory",
    ]


def test_answer_all_checks_each_request_and_answers_the_rest_one_at_a_time() -> None:
    split, _ = lanes(2, 1)

    def check(req: Request) -> None:
        if req.messages[0].content == "1":
            raise ProviderError("choices is empty")

    asked: list[int] = []

    def one(req: Request) -> Completion:
        asked.append(int(req.messages[0].content))
        return Completion(text="alone")

    logprobs = Request(messages=request(3).messages, max_tokens=4, logprobs=True)
    answers = split.answer_all(
        [request(0), request(1), request(2), logprobs], batches=True, check=check, one=one
    )
    assert [a.text if isinstance(a, Completion) else str(a) for a in answers] == [
        expected(0),
        "choices is empty",
        expected(2),
        "alone",
    ]
    assert asked == [3]
    unbatched = split.answer_all([request(0)], batches=False, check=check, one=one)
    assert [a.text for a in unbatched if isinstance(a, Completion)] == ["alone"]


def test_an_interruption_in_a_lane_reaches_the_caller() -> None:
    split, maker = lanes(2, 1)

    def stop(requests: Sequence[Request]) -> list[Answer]:
        raise KeyboardInterrupt

    maker.made[1].decode = stop  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        split.decode([request(0), request(1)])


def _never(req: Request) -> Completion:
    raise AssertionError("answered one at a time")


def test_a_lane_is_chosen_by_the_fewest_calls_in_it() -> None:
    split, maker = lanes(2, 1)
    gate = threading.Event()
    first, second = maker.made[1:]
    held = first.drain

    def slow(feed: Feed) -> None:
        gate.wait(5)
        held(feed)

    first.drain = slow  # type: ignore[method-assign]
    with ThreadPoolExecutor(max_workers=3) as pool:
        a = pool.submit(split.ask, request(0))
        time.sleep(0.05)  # the first call holds the first lane
        b = pool.submit(split.ask, request(1))
        assert b.result(timeout=5).text == expected(1)
        gate.set()
        assert a.result(timeout=5).text == expected(0)
    assert first.asked == [0]
    assert second.asked == [1]
