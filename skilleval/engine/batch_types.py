"""What batched decoding is made of: the requests, their results, where they come from, and
the few llama.cpp operations the decoder needs (``engine/batch.py`` decodes them).

These are kept apart from the decoder so that its callers (the provider's queue, the
llama.cpp backend, the tests' fake backend) depend on the shapes, not on the decoding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from skilleval.engine.prefix_store import shared_length

__all__ = [
    "LOOKAHEAD",
    "STORE_GAIN",
    "Backend",
    "BatchJob",
    "BatchResult",
    "Deliver",
    "Feed",
    "ListFeed",
    "Sampler",
    "Token",
    "closest",
    "common_prefix",
    "hold_after",
    "option_paths",
    "prefill_chunks",
]


class Sampler(Protocol):
    """One sequence's sampler: picks a token from the logits of one output of the last batch."""

    def sample(self, index: int) -> int:
        """The next token, from output ``index`` of the last decode (and remember it)."""
        ...

    def close(self) -> None: ...


Token = tuple[int, int, int, bool]
"""One batch entry: token, position, sequence id, whether its logits are wanted."""


class Backend(Protocol):
    """The few llama.cpp operations batched decoding needs."""

    def decode(self, items: Sequence[Token]) -> None:
        """Evaluate one batch; raise RuntimeError if llama.cpp refuses it."""
        ...

    def clear(self, seq: int, start: int = 0) -> None:
        """Drop sequence ``seq``'s cells from position ``start`` on."""
        ...

    def copy(self, src: int, dst: int) -> None:
        """Make sequence ``dst`` hold what ``src`` holds."""
        ...

    def is_eog(self, token: int) -> bool: ...

    def logprobs(self, index: int) -> Sequence[float]:
        """The log-softmax of output ``index`` of the last decode, indexable by token."""
        ...

    def detokenize(self, tokens: Sequence[int], prev: Sequence[int]) -> bytes: ...

    def state(self, seq: int) -> bytes:
        """Sequence ``seq``'s cells, serialized (for :class:`PrefixStore`)."""
        ...

    def restore(self, seq: int, data: bytes) -> bool:
        """Make the empty sequence ``seq`` hold what :meth:`state` serialized; False if
        llama.cpp refuses the bytes."""
        ...


Deliver = Callable[["BatchResult"], None]
"""Receives a request's result the moment it is finished."""

LOOKAHEAD = 16
"""Waiting requests a decoder looks at when it chooses the prefix to share."""


class Feed(Protocol):
    """Where a decoder takes its requests from while it runs: a fixed list, or a queue that
    other threads keep filling (continuous batching)."""

    def take(self) -> tuple[BatchJob, Deliver] | None:
        """The next request and where its result goes; None when none is waiting now."""
        ...

    def waiting(self) -> Sequence[tuple[int, ...]]:
        """The prompts of the requests waiting now, in the order :meth:`take` returns them
        (at most :data:`LOOKAHEAD`)."""
        ...


class ListFeed:
    """A fixed list of jobs, their results collected in order."""

    def __init__(self, jobs: Sequence[BatchJob]) -> None:
        self.jobs = jobs
        self.results = [BatchResult() for _ in jobs]
        self._next = 0

    def take(self) -> tuple[BatchJob, Deliver] | None:
        i = self._next
        if i >= len(self.jobs):
            return None
        self._next += 1

        def deliver(result: BatchResult) -> None:
            self.results[i] = result

        return self.jobs[i], deliver

    def waiting(self) -> Sequence[tuple[int, ...]]:
        return [job.prompt for job in self.jobs[self._next : self._next + LOOKAHEAD]]


@dataclass(frozen=True, slots=True)
class BatchJob:
    """One request, ready to decode: a generation, or with ``options`` a choice to score."""

    prompt: tuple[int, ...]
    max_tokens: int
    make_sampler: Callable[[], Sampler] | None
    """Makes the sequence's sampler (None for a choice, which samples nothing)."""
    stop: tuple[bytes, ...] = ()
    """Stop strings: the reply ends before the first one."""
    options: tuple[tuple[int, ...], ...] = ()
    """A choice's options, each one's tokens with its end-of-turn token last: the job then
    scores each option's total log-probability after the prompt instead of generating."""

    @classmethod
    def choice(cls, prompt: tuple[int, ...], options: tuple[tuple[int, ...], ...]) -> BatchJob:
        """A job that scores ``options`` after ``prompt``."""
        return cls(prompt, max((len(o) for o in options), default=0), None, (), options)


@dataclass(slots=True)
class BatchResult:
    """What one request produced."""

    text: bytes = b""
    finish_reason: str = "length"
    completion_tokens: int = 0
    evaluated: int = 0
    """Prompt tokens evaluated for this request (not copied from the shared prefix)."""
    latency_ms: float = 0.0
    """From its admission to its last token."""
    error: str | None = None
    scores: list[float] = field(default_factory=list)
    """A choice's options' total log-probabilities, in order."""


def option_paths(options: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The token paths a choice decodes, each once, in depth-first order: every start of an
    option that ends before its last token (whose logits score the token after it). The
    path decoded before a path is its parent or a descendant of its parent, so the sequence
    only ever drops cells back to the parent's end."""
    paths = {o[:m] for o in options for m in range(1, len(o))}
    return sorted(paths)


def common_prefix(prompts: Sequence[Sequence[int]]) -> int:
    """The length of the longest token prefix every prompt shares, leaving each prompt at
    least two tokens of its own (so its last evaluation is never a single-token batch)."""
    if not prompts:
        return 0
    first = prompts[0]
    n = min(len(p) for p in prompts)
    length = 0
    while length < n and all(p[length] == first[length] for p in prompts):
        length += 1
    return max(0, min(length, n - 2))


STORE_GAIN = 16
"""A stored prefix is loaded, and an evaluated one stored, only when it spares at least this
many tokens of evaluation."""


def closest(prompt: Sequence[int], others: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The one of ``others`` that shares the longest start with ``prompt`` (the first of
    equals), as a list; empty when there are none."""
    best: list[tuple[int, ...]] = []
    length = -1
    for other in others:
        n = shared_length(prompt, other)
        if n > length:
            best, length = [other], n
    return best


def prefill_chunks(start: int, end: int, size: int) -> list[tuple[int, int]]:
    """Split positions ``start..end`` into batches of at most ``size`` tokens, none of one
    token when it can be helped (llama.cpp's CPU kernels give other bits for a one-token
    batch of a prompt than for the same token inside a larger one)."""
    size = max(2, size)
    out: list[tuple[int, int]] = []
    pos = start
    while pos < end:
        step = min(size, end - pos)
        if end - pos - step == 1:
            step -= 1
        out.append((pos, pos + step))
        pos += step
    return out


def hold_after(text: bytes, hold: int) -> int:
    """How many more tokens to wait for before ``text`` may be checked for stops and length."""
    # llama-cpp-python's rule, kept exactly: when the text ends inside a multi-byte UTF-8
    # character, the stop and length checks wait for the missing bytes' tokens.
    for k, char in enumerate(text[-3:]):
        k = 3 - k
        for num, pattern in ((2, 192), (3, 224), (4, 240)):
            if num > k and pattern & char == pattern:
                hold = num - k
    return hold
