"""Continuous batching (engine/llama_queue.py): calls from many threads decoded together as
they arrive, each reply handed back the moment it is finished, over the fake llama.cpp of
test_batch.py."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from test_batch import PROMPTS, REPLIES, FakeBackend, FakeSampler

from skilleval.engine.base import Completion, Message, Request
from skilleval.engine.batch import BatchDecoder, BatchJob, BatchResult, Feed
from skilleval.engine.llama_queue import Prepared, RequestQueue
from skilleval.errors import ProviderError


class SlowSampler(FakeSampler):
    """Takes a moment per token, as a real model does, so that other calls arrive meanwhile."""

    def sample(self, index: int) -> int:
        time.sleep(0.002)
        return super().sample(index)


def request(i: int) -> Request:
    return Request(messages=(Message("user", str(i)),), max_tokens=16)


class Model:
    """A RequestQueue over a BatchDecoder of the given width on the fake backend; request i
    asks PROMPTS[i % 5], and request 99 cannot be prepared."""

    def __init__(self, width: int) -> None:
        self.backend = FakeBackend(dict(zip(PROMPTS, REPLIES, strict=True)))
        self.decoder = BatchDecoder(self.backend, width, 64, 4)
        self.log: list[str] = []
        self.drains = 0
        self.broken: ProviderError | None = None
        self.lock = threading.Lock()
        self.queue = RequestQueue(self.prepare, self.drain)

    def prepare(self, req: Request) -> Prepared:
        i = int(req.messages[0].content)
        if i == 99:
            raise ProviderError("the chat template rejected the messages")
        job = BatchJob(PROMPTS[i % 5], 16, lambda: SlowSampler(self.backend, self.log))

        def finish(result: BatchResult) -> Completion | ProviderError:
            if result.error is not None:
                return ProviderError(result.error)
            return Completion(text=result.text.decode(), completion_tokens=result.completion_tokens)

        return Prepared(job, finish)

    def drain(self, feed: Feed) -> None:
        assert self.lock.acquire(blocking=False), "two decoders ran at once"
        try:
            self.drains += 1
            if self.broken is not None:
                raise self.broken
            self.decoder.drain(feed)
        finally:
            self.lock.release()


def expected(i: int) -> str:
    return "".join(chr(96 + t % 26) for t in REPLIES[i % 5])


def test_calls_from_many_threads_get_their_own_replies_decoded_together() -> None:
    model = Model(width=3)
    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(lambda i: model.queue.ask(request(i)).text, range(40)))
    assert answers == [expected(i) for i in range(40)]
    # Every sampler was closed, and requests arriving while a decoder ran joined it.
    assert model.log.count("open") == model.log.count("close") == 40
    assert model.drains < 40
    assert max(len(b) for b in model.backend.batches) > 1


def test_a_request_that_cannot_be_prepared_fails_alone() -> None:
    model = Model(width=2)
    with ThreadPoolExecutor(max_workers=4) as pool:
        bad = pool.submit(model.queue.ask, request(99))
        good = [pool.submit(model.queue.ask, request(i)) for i in range(6)]
        with pytest.raises(ProviderError, match="chat template"):
            bad.result()
        assert [f.result().text for f in good] == [expected(i) for i in range(6)]


def test_a_model_that_cannot_run_fails_the_waiting_calls_and_the_next_call_tries_again() -> None:
    model = Model(width=2)
    model.broken = ProviderError("could not load the model")
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(model.queue.ask, request(i)) for i in range(4)]
        for future in futures:
            with pytest.raises(ProviderError, match="could not load"):
                future.result()
    model.broken = None
    assert model.queue.ask(request(2)).text == expected(2)


def test_a_failure_of_llama_cpp_fails_the_requests_in_flight_not_later_ones() -> None:
    model = Model(width=2)
    model.backend.fail_after = 3
    with ThreadPoolExecutor(max_workers=3) as pool:
        outcomes = list(
            pool.map(lambda i: _outcome(lambda: model.queue.ask(request(i)).text), range(3))
        )
    assert any(o.startswith("llama.cpp failed") for o in outcomes)
    assert all(o.startswith("llama.cpp failed") or o == expected(i) for i, o in enumerate(outcomes))
    # The decoder starts afresh afterwards.
    assert model.queue.ask(request(4)).text == expected(4)


def _outcome(call: object) -> str:
    try:
        return str(call())  # type: ignore[operator]
    except ProviderError as exc:
        return str(exc)
