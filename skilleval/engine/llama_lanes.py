"""Lanes: the in-process model's batched decoders, one or several over the one loaded model.

A lane is a batched decoder (``engine/llama_batched.py``: a llama.cpp context of its own on
the provider's weights) with its request queue (``engine/llama_queue.py``) and its lock. With
one lane, every concurrent call joins the same batches, decoded with all the model's threads.
With several, each lane's context gets an equal share of the threads, a call goes to the lane
holding the fewest calls, and the lanes decode at the same time (llama.cpp computes without
Python's lock). On a small model, one thread a lane can beat both batching and several threads
on one sequence: a step's threads meet at a barrier after each of about a thousand graph nodes,
and kernels that multiply one row at a time share nothing between sequences. Which way is
faster is measured, not assumed (``engine/lane_probe.py``).

Replies do not depend on the lane: the probe checks that a step's logits are bitwise the same
with a lane's threads as with the model's, and each lane decodes as the one batched context
would (``engine/batch.py``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from skilleval.engine.base import Completion, Request
from skilleval.engine.llama_batched import BatchedLlama
from skilleval.engine.llama_queue import RequestQueue
from skilleval.errors import ProviderError

__all__ = ["Lanes", "MakeLane"]

Answer = Completion | ProviderError

MakeLane = Callable[[int, "int | None"], BatchedLlama]
"""Makes one lane's decoder: its width, and its threads (None: the model's own)."""


class _Lane:
    """One decoder, the queue that feeds it, and the lock around its context."""

    def __init__(self, batched: BatchedLlama, clock: _Clock) -> None:
        self.batched = batched
        self.lock = threading.Lock()
        self.queue = RequestQueue(batched.prepare, self._drain)
        self.calls = 0
        """Calls sent to this lane and not yet answered."""
        self._clock = clock

    def _drain(self, feed: object) -> None:
        with self.lock, self._clock:
            self.batched.drain(feed)  # type: ignore[arg-type]

    def answer_all(
        self,
        requests: Sequence[Request],
        *,
        batches: bool,
        check: Callable[[Request], None],
        one: Callable[[Request], Completion],
    ) -> list[Answer]:
        """One answer per request: with ``batches``, those ``check`` accepts decoded together
        (:meth:`decode`) and those it rejects answered with its error; the rest (all of them
        without ``batches``, and those asking for log-probabilities, which are recorded one at
        a time) answered by ``one``. A request that fails gets its error in its place."""
        out: list[Answer | None] = [None] * len(requests)
        together: list[int] = []
        for i, request in enumerate(requests):
            if not batches or request.logprobs:
                continue
            try:
                check(request)
            except ProviderError as exc:
                out[i] = exc
                continue
            together.append(i)
        if together:
            try:
                answers = self.decode([requests[i] for i in together])
            except ProviderError as exc:
                answers = [exc] * len(together)
            for i, answer in zip(together, answers, strict=True):
                out[i] = answer
        for i, request in enumerate(requests):
            if out[i] is None:
                try:
                    out[i] = one(request)
                except ProviderError as exc:
                    out[i] = exc
        return [answer for answer in out if answer is not None]

    def decode(self, requests: Sequence[Request]) -> list[Answer]:
        with self.lock, self._clock:
            return self.batched.decode(requests)


class _Clock:
    """Seconds during which at least one lane was decoding (lanes overlap, so their own
    clocks would count the same second twice)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._since = 0.0
        self.seconds = 0.0

    def __enter__(self) -> None:
        with self._lock:
            if self._active == 0:
                self._since = time.perf_counter()
            self._active += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._active -= 1
            if self._active == 0:
                self.seconds += time.perf_counter() - self._since


class Lanes:
    """The batched decoders of one provider.

    Args:
        make: Makes a lane's decoder.
        width: The batch width, all in one lane until :meth:`split` says otherwise.
    """

    def __init__(self, make: MakeLane, width: int) -> None:
        self._make = make
        self._clock = _Clock()
        self._pick = threading.Lock()
        self._lanes = [_Lane(make(width, None), self._clock)]
        self._generated = 0
        """Tokens generated by lanes no longer in use."""

    @property
    def count(self) -> int:
        """How many lanes decode at once."""
        return len(self._lanes)

    @property
    def width(self) -> int:
        """Requests decoded together in one lane."""
        return self._lanes[0].batched.width

    @property
    def threads(self) -> int | None:
        """Each lane's threads (None: the model's own)."""
        return self._lanes[0].batched.threads

    @property
    def cells(self) -> int:
        """KV cells per sequence of the largest lane context (0 before any is made)."""
        return max(lane.batched.cells for lane in self._lanes)

    def split(self, count: int, width: int, threads: int) -> None:
        """Decode in ``count`` lanes of ``width`` requests and ``threads`` threads each; called
        before any request is asked (the lanes in use are freed)."""
        self.close()
        self._generated += sum(lane.batched.busy()[0] for lane in self._lanes)
        self._lanes = [_Lane(self._make(width, threads), self._clock) for _ in range(count)]

    def ask(self, request: Request) -> Completion:
        """The reply to ``request``, from the lane holding the fewest calls (the first of
        those on a tie), decoded with whatever that lane is asked meanwhile.

        Raises:
            ProviderError: The request could not be decoded.
        """
        with self._pick:
            lane = min(self._lanes, key=lambda each: each.calls)
            lane.calls += 1
        try:
            return lane.queue.ask(request)
        finally:
            with self._pick:
                lane.calls -= 1

    def answer_all(
        self,
        requests: Sequence[Request],
        *,
        batches: bool,
        check: Callable[[Request], None],
        one: Callable[[Request], Completion],
    ) -> list[Answer]:
        """One answer per request: with ``batches``, those ``check`` accepts decoded together
        (:meth:`decode`) and those it rejects answered with its error; the rest (all of them
        without ``batches``, and those asking for log-probabilities, which are recorded one at
        a time) answered by ``one``. A request that fails gets its error in its place."""
        out: list[Answer | None] = [None] * len(requests)
        together: list[int] = []
        for i, request in enumerate(requests):
            if not batches or request.logprobs:
                continue
            try:
                check(request)
            except ProviderError as exc:
                out[i] = exc
                continue
            together.append(i)
        if together:
            try:
                answers = self.decode([requests[i] for i in together])
            except ProviderError as exc:
                answers = [exc] * len(together)
            for i, answer in zip(together, answers, strict=True):
                out[i] = answer
        for i, request in enumerate(requests):
            if out[i] is None:
                try:
                    out[i] = one(request)
                except ProviderError as exc:
                    out[i] = exc
        return [answer for answer in out if answer is not None]

    def decode(self, requests: Sequence[Request]) -> list[Answer]:
        """One answer per request, the requests shared among the lanes in turn (request ``i``
        to lane ``i % count``) and the lanes decoding at the same time; a lane that fails
        answers its share with its error."""
        lanes = self._lanes
        if len(lanes) == 1 or len(requests) <= 1:
            return lanes[0].decode(requests)
        shares = [list(requests[k :: len(lanes)]) for k in range(len(lanes))]
        found: list[list[Answer] | BaseException] = [[] for _ in lanes]

        def work(k: int) -> None:
            try:
                found[k] = lanes[k].decode(shares[k])
            except ProviderError as exc:  # that lane's model failed: its share has the error
                found[k] = [exc] * len(shares[k])
            except BaseException as exc:  # raised on the caller's thread below
                found[k] = exc

        workers = [threading.Thread(target=work, args=(k,)) for k in range(1, len(lanes))]
        for worker in workers:
            worker.start()
        work(0)
        for worker in workers:
            worker.join()
        out: list[Answer] = []
        for i in range(len(requests)):
            share = found[i % len(lanes)]
            if isinstance(share, BaseException):
                raise share
            out.append(share[i // len(lanes)])
        return out

    def busy(self) -> tuple[int, float]:
        """Tokens generated over every lane, and the seconds during which any lane decoded."""
        generated = self._generated + sum(lane.batched.busy()[0] for lane in self._lanes)
        return generated, self._clock.seconds

    def close(self) -> None:
        """Free every lane's context, keeping the counters; the next call makes them again."""
        for lane in self._lanes:
            with lane.lock:
                lane.batched.close()
