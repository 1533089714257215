"""Batched decoding: several generation requests decoded together, one token each per step.

On a CPU, decoding one token is bound by memory bandwidth (every weight is read once per
step), so decoding a token for each of several sequences in the same step costs little more
than decoding one. :class:`BatchDecoder` keeps up to ``width`` sequences live at once:

* the prompts of one call share their longest common token prefix (the chat template's
  opening, a system prompt, a skill, a rubric). It is evaluated once into a dedicated prefix
  sequence, kept from call to call while it still matches, and copied into each slot;
* each slot then evaluates the rest of its prompt and joins the decode steps; every step
  decodes one token for every live sequence in a single batch;
* a slot that finishes (end of turn, a stop string, ``max_tokens``) takes the next waiting
  request at once, so no step decodes for a finished sequence.

Every sequence has a KV stream of its own (``kv_unified`` off), so the attention of one
sequence never reads another's cells. On llama.cpp's CPU backend the logits of a sequence
are then bitwise the same whatever else is in the batch, and the same as decoding it alone
(docs/engine.md gives the measurement): batched greedy replies equal one-at-a-time replies,
and a run gives the same bytes whatever its width, its cache hits or its resume point.

The logic here speaks to llama.cpp through :class:`Backend`, so it is tested with a fake;
:class:`LlamaBackend` in ``engine/batch_llama.py`` is the real one.

Replies are finished as llama-cpp-python's ``create_completion`` finishes them (its stop and
``max_tokens`` rules, including its hold on a split multi-byte character), so the text is
byte for byte what the one-at-a-time path returns.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from skilleval.engine.prefix_store import MIN_TOKENS, PrefixStore, shared_length

__all__ = [
    "Backend",
    "BatchDecoder",
    "BatchJob",
    "BatchResult",
    "Deliver",
    "Feed",
    "ListFeed",
    "Sampler",
    "ScoreJob",
    "ScoreResult",
    "common_prefix",
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
    """One request, ready to decode."""

    prompt: tuple[int, ...]
    max_tokens: int
    make_sampler: Callable[[], Sampler]
    stop: tuple[bytes, ...] = ()
    """Stop strings: the reply ends before the first one."""


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


@dataclass(frozen=True, slots=True)
class ScoreJob:
    """One choice to score: each option's tokens (its end-of-turn token last) after a prompt."""

    prompt: tuple[int, ...]
    options: tuple[tuple[int, ...], ...]


@dataclass(slots=True)
class ScoreResult:
    """Each option's total log-probability given the prompt, in order; or an error."""

    scores: list[float] = field(default_factory=list)
    evaluated: int = 0
    latency_ms: float = 0.0
    error: str | None = None


@dataclass(slots=True)
class _Live:
    job: BatchJob
    deliver: Deliver
    result: BatchResult
    sampler: Sampler
    started: float
    tokens: list[int] = field(default_factory=list)
    pending: int = -1
    """The token sampled last, still to be decoded."""
    hold: int = 0
    """Tokens still to wait for before a split multi-byte character is complete."""


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


def _closest(prompt: Sequence[int], others: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
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


def _hold_after(text: bytes, hold: int) -> int:
    # llama-cpp-python's rule, kept exactly: when the text ends inside a multi-byte UTF-8
    # character, the stop and length checks wait for the missing bytes' tokens.
    for k, char in enumerate(text[-3:]):
        k = 3 - k
        for num, pattern in ((2, 192), (3, 224), (4, 240)):
            if num > k and pattern & char == pattern:
                hold = num - k
    return hold


class BatchDecoder:
    """Decode many requests ``width`` at a time over one llama.cpp context.

    Args:
        backend: The context, with ``width + 1`` sequences: slots ``0..width-1`` and the
            shared prefix at ``width``.
        width: How many sequences decode together.
        n_ctx: Cells per sequence; a prompt plus its reply must fit.
        n_batch: The largest batch llama.cpp accepts in one decode.

    Attributes:
        busy_s: Seconds spent generating (evaluating prompts, decoding, sampling).
        generated: Tokens generated.
        scoring_s: Seconds spent scoring choices.
    """

    def __init__(
        self,
        backend: Backend,
        width: int,
        n_ctx: int,
        n_batch: int,
        store: PrefixStore | None = None,
    ) -> None:
        self.backend = backend
        self.store = store
        self.width = max(1, width)
        self.n_ctx = n_ctx
        self.n_batch = max(2, n_batch)
        self.prefix_seq = self.width
        self.busy_s = 0.0
        self.generated = 0
        self.scoring_s = 0.0
        self._held: tuple[int, ...] = ()
        self._kept: list[tuple[int, ...]] = [() for _ in range(self.width)]
        """The prompt whose cells each slot still holds (evaluated as a prompt is, so they
        can be copied into another slot as if evaluated there)."""
        self._unbilled = 0

    def run(self, jobs: Sequence[BatchJob]) -> list[BatchResult]:
        """Decode every job; one result per job, in order. A job that fails gets its error;
        a failure of llama.cpp itself fails the jobs not yet finished."""
        feed = ListFeed(jobs)
        self.drain(feed)
        return feed.results

    def drain(self, feed: Feed) -> None:
        """Decode requests from ``feed`` until it has none waiting and every slot is done,
        taking a new one whenever a slot frees, and delivering each result as it finishes.
        A failure of llama.cpp itself fails the requests in the slots and those waiting."""
        start = time.perf_counter()
        try:
            self._run(feed)
        finally:
            self.busy_s += time.perf_counter() - start

    def score(self, jobs: Sequence[ScoreJob]) -> list[ScoreResult]:
        """Score every job's options, the options of one job decoded side by side.

        The prompt is evaluated once (its shared part copied from the prefix sequence) into
        slot 0 and copied to as many slots as there are options (``width`` at a time); then
        each step decodes the next token of every option in one batch. Each token of an
        option is decoded alone in its sequence, as the one-at-a-time scoring decodes it.
        """
        if self.width < 2:
            raise ValueError("scoring side by side needs a width of at least 2")
        results = [ScoreResult() for _ in jobs]
        if not jobs:
            return results
        start = time.perf_counter()
        try:
            fitting = [j.prompt for j in jobs if len(j.prompt) < self.n_ctx]
            self._unbilled = 0
            self._forget_slots()  # scoring writes options into every slot
            try:
                shared = self._prepare_prefix(
                    tuple(fitting[0][: common_prefix(fitting)]) if fitting else ()
                )
            except RuntimeError:
                self._held = ()
                shared = 0
            for job, result in zip(jobs, results, strict=True):
                began = time.perf_counter()
                try:
                    self._score_one(job, result, shared)
                except RuntimeError as exc:
                    result.error = f"llama.cpp failed: {exc}"
                    self._held = ()
                    shared = self._prepare_prefix(())
                result.latency_ms = (time.perf_counter() - began) * 1000.0
        finally:
            self.scoring_s += time.perf_counter() - start
        return results

    def _score_one(self, job: ScoreJob, result: ScoreResult, shared: int) -> None:
        prompt = job.prompt
        longest = max((len(o) for o in job.options), default=0)
        if len(prompt) + longest >= self.n_ctx:
            result.error = (
                f"prompt is {len(prompt)} tokens but the context holds {self.n_ctx}; "
                "raise model.n_ctx"
            )
            return
        self.backend.clear(0)
        start = 0
        if shared and len(prompt) - shared >= 2:
            self.backend.copy(self.prefix_seq, 0)
            start = shared
        chunks = prefill_chunks(start, len(prompt), self.n_batch)
        for a, b in chunks:
            self.backend.decode([(prompt[p], p, 0, p == len(prompt) - 1) for p in range(a, b)])
        result.evaluated = len(prompt) - start
        if start:
            result.evaluated += self._unbilled
            self._unbilled = 0
        first = self.backend.logprobs(chunks[-1][1] - chunks[-1][0] - 1)
        totals = [float(first[o[0]]) if o else 0.0 for o in job.options]
        # Slot 0 keeps the bare prompt; the options take the other slots.
        lanes = list(range(1, self.width))
        for group_start in range(0, len(job.options), len(lanes)):
            group = list(range(group_start, min(group_start + len(lanes), len(job.options))))
            for lane in lanes[: len(group)]:
                self.backend.clear(lane)
                self.backend.copy(0, lane)
            step = 0
            while True:
                items = [
                    (job.options[o][step], len(prompt) + step, lane, True)
                    for o, lane in zip(group, lanes, strict=False)
                    if step + 1 < len(job.options[o])
                ]
                if not items:
                    break
                self.backend.decode(items)
                row = 0
                for o in group:
                    if step + 1 < len(job.options[o]):
                        totals[o] += float(self.backend.logprobs(row)[job.options[o][step + 1]])
                        row += 1
                step += 1
        result.scores = totals

    # -- the shared prefix -----------------------------------------------------------------

    def _prepare_prefix(self, target: tuple[int, ...]) -> int:
        """Make the prefix sequence hold ``target`` (or as much as can be kept); return its
        length, evaluating only what neither it nor a slot's kept prompt held already."""
        keep = shared_length(self._held, target)
        slot, found = self._slot_source(target)
        restored = self._restore(target, max(keep, found))
        keep = shared_length(self._held, target)  # the prefix sequence may have changed
        if not restored and found > keep + 1:
            # A slot holds more of it: start from a copy of that slot.
            self.backend.clear(self.prefix_seq)
            self.backend.copy(slot, self.prefix_seq)
            self._held = self._kept[slot]
            keep = found
        if len(target) - keep == 1:
            keep -= 1  # never extend by a single token
        if keep < 0 or len(target) < 2:
            self.backend.clear(self.prefix_seq)
            self._held = ()
            return 0
        self.backend.clear(self.prefix_seq, keep)
        self._held = target[:keep]
        for a, b in prefill_chunks(keep, len(target), self.n_batch):
            self.backend.decode([(target[p], p, self.prefix_seq, False) for p in range(a, b)])
        self._held = target
        # Counted once, with the request being admitted.
        self._unbilled = len(target) - keep
        store = self.store
        if (
            store is not None
            and len(target) >= MIN_TOKENS
            and len(target) - keep >= STORE_GAIN
            and not store.has(target)
        ):
            store.write(target, self.backend.state(self.prefix_seq))
        return len(target)

    def _restore(self, target: tuple[int, ...], held: int) -> bool:
        """Load the stored prefix that shares the most with ``target`` into the prefix
        sequence, when it shares at least :data:`STORE_GAIN` tokens more than ``held``."""
        store = self.store
        if store is None or len(target) < MIN_TOKENS:
            return False
        entry, length = store.best(target)
        if entry is None or min(length, len(target)) < held + STORE_GAIN:
            return False
        data = store.read(entry)
        if data is None:
            return False
        self.backend.clear(self.prefix_seq)
        if not self.backend.restore(self.prefix_seq, data):
            self.backend.clear(self.prefix_seq)
            self._held = ()
            store.remove(entry)
            return False
        self._held = entry.tokens
        return True

    def _copy_start(self, slot: int, source: int, found: int, shared: int, length: int) -> int:
        """Give ``slot`` the longest start it can copy, from ``source`` (holding ``found``
        tokens of the prompt) or from the prefix sequence (``shared``); return its length."""
        if found > shared and length - found >= 2:
            if source != slot:
                self.backend.clear(slot)
                self.backend.copy(source, slot)
            self.backend.clear(slot, found)
            return found
        self.backend.clear(slot)
        if shared and length - shared >= 2:
            self.backend.copy(self.prefix_seq, slot)
            self.backend.clear(slot, shared)  # the prefix sequence may hold more than shared
            return shared
        return 0

    def _restore_slot(self, slot: int, prompt: tuple[int, ...], held: int) -> int:
        """Load into ``slot`` the stored prefix that shares the most with ``prompt``, when it
        spares at least :data:`STORE_GAIN` tokens more than the ``held`` ones; return how
        many of the prompt's tokens the slot then holds (0 when nothing was loaded).

        The prefix sequence follows what consecutive requests share; a request whose
        neighbours are of another kind (a judge call between generations) still starts from
        the store."""
        store = self.store
        if store is None or len(prompt) < MIN_TOKENS:
            return 0
        entry, length = store.best(prompt)
        usable = min(length, len(prompt) - 2)
        if entry is None or usable < held + STORE_GAIN:
            return 0
        data = store.read(entry)
        if data is None:
            return 0
        self.backend.clear(slot)
        if not self.backend.restore(slot, data):
            self.backend.clear(slot)
            store.remove(entry)
            return 0
        self.backend.clear(slot, usable)
        return usable

    # -- one call ----------------------------------------------------------------------------

    def _run(self, feed: Feed) -> None:
        slots: list[_Live | None] = [None] * self.width
        try:
            while True:
                for slot in range(self.width):
                    while slots[slot] is None:
                        taken = feed.take()
                        if taken is None:
                            break
                        slots[slot] = self._admit(slot, *taken, feed.waiting())
                live = [(slot, s) for slot, s in enumerate(slots) if s is not None]
                if not live:
                    return
                self.backend.decode(
                    [
                        (s.pending, len(s.job.prompt) + len(s.tokens) - 1, slot, True)
                        for slot, s in live
                    ]
                )
                for row, (slot, s) in enumerate(live):
                    if not self._step(s, s.sampler.sample(row), s.result):
                        self._release(slot, slots)
                        s.deliver(s.result)
        except RuntimeError as exc:
            failed = f"llama.cpp failed: {exc}"
            for slot, held in enumerate(slots):
                if held is not None:
                    self._release(slot, slots)
                    held.deliver(BatchResult(error=failed))
            while (taken := feed.take()) is not None:
                taken[1](BatchResult(error=failed))
            # The KV state is unknown now: the next call evaluates its prefix afresh.
            self._held = ()
            self._forget_slots()

    def _admit(
        self, slot: int, job: BatchJob, deliver: Deliver, waiting: Sequence[tuple[int, ...]]
    ) -> _Live | None:
        """Put ``job`` in ``slot`` and sample its first token; None if it is done (its result
        delivered).

        The prefix sequence is first brought to the prefix this prompt shares with the
        waiting request that shares the most of it (or to the whole prompt but two tokens,
        when none waits), evaluating only what it did not hold; the slot gets a copy and
        evaluates the rest. Requests of one kind share long prefixes (a skill, a rubric), so
        each prefix is evaluated about once, even when requests of another kind (judge calls
        between generations) come between them.
        """
        result = BatchResult()
        prompt = job.prompt
        if len(prompt) >= self.n_ctx:
            result.error = (
                f"prompt is {len(prompt)} tokens but the context holds {self.n_ctx}; "
                "raise model.n_ctx"
            )
            deliver(result)
            return None
        live = _Live(job, deliver, result, job.make_sampler(), time.perf_counter())
        try:
            last_row = self._prefill(slot, prompt, waiting, result)
            going = self._step(live, live.sampler.sample(last_row), result)
        except RuntimeError as exc:
            live.sampler.close()
            deliver(BatchResult(error=f"llama.cpp failed: {exc}"))
            raise
        if going:
            return live
        live.sampler.close()
        deliver(result)
        return None

    def _prefill(
        self,
        slot: int,
        prompt: tuple[int, ...],
        waiting: Sequence[tuple[int, ...]],
        result: BatchResult,
    ) -> int:
        """Evaluate ``prompt`` into ``slot`` (its shared prefix copied, see :meth:`_admit`);
        return the row of its last token's logits."""
        after = _closest(prompt, [p for p in waiting if len(p) < self.n_ctx])
        self._unbilled = 0
        target = prompt[: common_prefix([prompt, *after])]
        held = max(0, min(shared_length(self._held, prompt), len(prompt) - 2))
        # The prefix sequence, or a slot holding a longer start of this prompt (an earlier
        # request of its kind, when the prefix sequence went to a request of another kind).
        source, found = self._slot_source(prompt)
        if after and (len(target) < held or found >= len(target)):
            # What the waiting requests share with this prompt is already held, by the prefix
            # sequence or by a slot: keep the prefix sequence for the next request of its
            # kind rather than cut it to this short shared start.
            shared = held
        else:
            shared = self._prepare_prefix(target)
        self._kept[slot] = ()
        # Or the store, when it holds more of this prompt than the model does.
        start = self._restore_slot(slot, prompt, max(shared, found))
        if start == 0:
            start = self._copy_start(slot, source, found, shared, len(prompt))
        chunks = prefill_chunks(start, len(prompt), self.n_batch)
        for a, b in chunks:
            self.backend.decode([(prompt[p], p, slot, p == len(prompt) - 1) for p in range(a, b)])
        self._kept[slot] = prompt
        # What the prefix sequence evaluated, it evaluated while admitting this request.
        result.evaluated = len(prompt) - start + self._unbilled
        self._unbilled = 0
        return chunks[-1][1] - chunks[-1][0] - 1

    def _slot_source(self, tokens: tuple[int, ...]) -> tuple[int, int]:
        """The slot whose kept prompt shares the longest start with ``tokens``, and how long
        (cut so that ``tokens`` keeps two of its own)."""
        best, length = 0, 0
        for slot, kept in enumerate(self._kept):
            n = shared_length(kept, tokens)
            if n > length:
                best, length = slot, n
        return best, max(0, min(length, len(tokens) - 2))

    def _forget_slots(self) -> None:
        self._kept = [() for _ in range(self.width)]

    def _release(self, slot: int, slots: list[_Live | None]) -> None:
        live = slots[slot]
        if live is not None:
            live.sampler.close()
        slots[slot] = None

    def _step(self, live: _Live, token: int, result: BatchResult) -> bool:
        """Take one sampled token; False when the reply is finished (``result`` filled in)."""
        job = live.job
        prompt = list(job.prompt)
        # The budget llama-cpp-python allows: max_tokens, cut to what the context holds.
        budget = job.max_tokens
        if budget + len(prompt) >= self.n_ctx:
            budget = self.n_ctx - len(prompt)
        finish: str | None = None
        text = b""
        if self.backend.is_eog(token):
            text = self.backend.detokenize(live.tokens, prompt)
            finish = "stop"
        else:
            live.tokens.append(token)
            self.generated += 1
            everything = self.backend.detokenize(live.tokens, prompt)
            live.hold = _hold_after(everything, live.hold)
            if live.hold > 0:
                live.hold -= 1
                if len(prompt) + len(live.tokens) >= self.n_ctx:
                    text, finish = everything, "length"
            else:
                stops = [s for s in job.stop if s in everything]
                if stops:
                    text = everything[: everything.index(stops[0])]
                    finish = "stop"
                elif len(live.tokens) >= budget:
                    text, finish = everything, "length"
        if finish is None:
            live.pending = token
            return True
        result.text = text
        result.finish_reason = finish
        result.completion_tokens = len(live.tokens)
        result.latency_ms = (time.perf_counter() - live.started) * 1000.0
        return False
