"""Continuous batching: requests from many threads decoded together as they arrive.

A caller of :meth:`RequestQueue.ask` queues its request and waits. If no decoder is running,
the caller becomes the leader and runs one; the decoder takes queued requests whenever a slot
frees (so requests that arrive while it runs join it at once) and hands each reply to its
caller the moment it is finished, so that caller can grade it and ask again while the others
still decode. The leader returns when the queue is empty and every slot is done.

Batched replies equal one-at-a-time replies (``engine/batch.py``), so who decoded with whom
never changes a reply; only the time does.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from skilleval.engine.base import Completion, Request
from skilleval.engine.batch import LOOKAHEAD, BatchJob, BatchResult, Deliver, Feed
from skilleval.errors import ProviderError

__all__ = ["Prepared", "RequestQueue"]

Answer = Completion | ProviderError


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request made ready to decode, and how its result becomes its reply."""

    job: BatchJob
    finish: Callable[[BatchResult], Answer]


@dataclass(slots=True, eq=False)
class _Ticket:
    request: Request
    answer: list[Answer] = field(default_factory=list)
    prepared: Prepared | ProviderError | None = None


class RequestQueue:
    """Requests queued by any thread, decoded by whichever caller leads.

    Args:
        prepare: Turns a request into a job (on the leader's thread, under the model's
            lock); raises :class:`ProviderError` for a request that cannot be decoded.
        drain: Runs a decoder over a feed until it is empty; raises :class:`ProviderError`
            when the model cannot be used at all (every waiting request then gets it).
    """

    def __init__(
        self,
        prepare: Callable[[Request], Prepared],
        drain: Callable[[Feed], None],
    ) -> None:
        self._prepare = prepare
        self._drain = drain
        self._cond = threading.Condition()
        self._waiting: deque[_Ticket] = deque()
        self._leading = False

    def ask(self, request: Request) -> Completion:
        """The reply to ``request``, decoded together with whatever else is asked meanwhile.

        Raises:
            ProviderError: The request could not be decoded.
        """
        ticket = _Ticket(request)
        with self._cond:
            self._waiting.append(ticket)
            while not ticket.answer:
                if self._leading:
                    self._cond.wait()
                    continue
                self._leading = True
                self._cond.release()
                try:
                    self._lead()
                finally:
                    self._cond.acquire()
                    self._leading = False
                    self._cond.notify_all()
        answer = ticket.answer[0]
        if isinstance(answer, ProviderError):
            raise answer
        return answer

    def _lead(self) -> None:
        feed = _QueueFeed(self)
        try:
            self._drain(feed)
        except ProviderError as exc:
            self._fail(feed, exc)
        except BaseException:
            self._fail(feed, ProviderError("interrupted"))
            raise
        # A decoder answers every request it took; should one ever be left, its caller
        # must not wait for it forever.
        self._fail(feed, ProviderError("interrupted"), waiting=False)

    def _fail(self, feed: _QueueFeed, exc: ProviderError, *, waiting: bool = True) -> None:
        """Answer with ``exc`` the requests ``feed`` took and left unanswered, and (with
        ``waiting``) every request still waiting."""
        with self._cond:
            for ticket in feed.taken:
                if not ticket.answer:
                    ticket.answer.append(exc)
            while waiting and self._waiting:
                self._waiting.popleft().answer.append(exc)
            self._cond.notify_all()

    def _answer(self, ticket: _Ticket, answer: Answer) -> None:
        with self._cond:
            ticket.answer.append(answer)
            self._cond.notify_all()

    def _head(self) -> _Ticket | None:
        """The first waiting request, prepared; requests that cannot be prepared are answered
        with their error and dropped."""
        while True:
            with self._cond:
                if not self._waiting:
                    return None
                ticket = self._waiting[0]
            prepared = self._prepared(ticket)
            if isinstance(prepared, Prepared):
                return ticket
            with self._cond:
                self._waiting.remove(ticket)
            self._answer(ticket, prepared)

    def _prepared(self, ticket: _Ticket) -> Prepared | ProviderError:
        """The ticket's request made ready to decode (once), or why it cannot be."""
        if ticket.prepared is None:
            try:
                ticket.prepared = self._prepare(ticket.request)
            except ProviderError as exc:
                ticket.prepared = exc
        return ticket.prepared


class _QueueFeed:
    """The queue as a decoder's feed (only the leader's thread calls it)."""

    def __init__(self, queue: RequestQueue) -> None:
        self._queue = queue
        self.taken: set[_Ticket] = set()
        """Requests taken and not yet answered."""

    def take(self) -> tuple[BatchJob, Deliver] | None:
        queue = self._queue
        ticket = queue._head()
        if ticket is None:
            return None
        with queue._cond:
            queue._waiting.remove(ticket)
        self.taken.add(ticket)
        prepared = ticket.prepared
        assert isinstance(prepared, Prepared)

        def deliver(result: BatchResult) -> None:
            queue._answer(ticket, prepared.finish(result))
            self.taken.discard(ticket)

        return prepared.job, deliver

    def waiting(self) -> Sequence[tuple[int, ...]]:
        queue = self._queue
        with queue._cond:
            tickets = list(itertools.islice(queue._waiting, LOOKAHEAD))
        # A request that cannot be prepared is answered when it reaches the head.
        prepared = [queue._prepared(ticket) for ticket in tickets]
        return [p.job.prompt for p in prepared if isinstance(p, Prepared)]
