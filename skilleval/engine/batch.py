"""Batched decoding: several generation requests decoded together, one token each per step.

On a CPU, decoding one token is bound by memory bandwidth or by the matrix kernels, and
decoding a token for each of several sequences in the same step costs less than decoding them
one after another. :class:`BatchDecoder` keeps up to ``width`` sequences live at once:

* a new request starts from the longest start of its prompt already evaluated (the shared
  prefix sequence, another slot, or the prefix store: ``engine/batch_prefix.py``);
* the rest of its prompt is evaluated in chunks, one a step, between the decode steps of
  the sequences already generating, so a new prompt stalls the others for one chunk at a
  time. A chunk has a batch of its own (see :func:`plan_step`);
* a slot that finishes (end of turn, a stop string, ``max_tokens``) takes the next waiting
  request at once, so no step decodes for a finished sequence.

Every sequence has a KV stream of its own (``kv_unified`` off), so the attention of one
sequence never reads another's cells. On llama.cpp's CPU backend the logits of a decoded
token are then bitwise the same whatever other sequences' tokens are in the batch, and the
same as decoding it alone (docs/engine.md gives the measurement):
batched greedy replies equal one-at-a-time replies, and a run gives the same bytes whatever
its width, its cache hits or its resume point. A prompt chunk is never a single token.

The logic here speaks to llama.cpp through :class:`Backend`, so it is tested with a fake;
:class:`LlamaBackend` in ``engine/batch_llama.py`` is the real one.

Replies are finished as llama-cpp-python's ``create_completion`` finishes them (its stop and
``max_tokens`` rules, including its hold on a split multi-byte character), so the text is
byte for byte what the one-at-a-time path returns.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from skilleval.engine.batch_prefix import SharedPrefix
from skilleval.engine.batch_types import (
    LOOKAHEAD,
    STORE_GAIN,
    Backend,
    BatchJob,
    BatchResult,
    Deliver,
    Feed,
    ListFeed,
    Sampler,
    ScoreJob,
    ScoreResult,
    Token,
    common_prefix,
    hold_after,
    prefill_chunks,
)
from skilleval.engine.prefix_store import PrefixStore

__all__ = [
    "LOOKAHEAD",
    "STORE_GAIN",
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
    "Token",
    "common_prefix",
    "prefill_chunks",
]


@dataclass(slots=True)
class _Live:
    job: BatchJob
    deliver: Deliver
    result: BatchResult
    sampler: Sampler
    started: float
    fill: int
    """The first prompt position not evaluated yet (the prompt's length once it is)."""
    tokens: list[int] = field(default_factory=list)
    pending: int = -1
    """The token sampled last, still to be decoded."""
    hold: int = 0
    """Tokens still to wait for before a split multi-byte character is complete."""


Rows = list[tuple[int, _Live, int]]
"""Sequences that get logits from a batch: slot, sequence, index of its logits in the batch."""


def plan_step(
    live: Sequence[tuple[int, _Live]], n_batch: int
) -> tuple[list[tuple[list[Token], Rows]], list[tuple[int, _Live, int]]]:
    """One decode step: a chunk of the first prompt still filling, in a batch of its own, then
    the pending token of every generating sequence, in one batch.

    Returns the step's batches, each with the sequences that sample from its logits, and the
    chunk, as its slot, its sequence and the prompt position it ends at.

    A prompt chunk does not share a batch with other sequences' tokens: measured on the
    embedded model, a prompt evaluated beside them gave other bits in some batches (llama.cpp
    splits such a batch into micro-batches of its own making), and 5 of 30 replies of the
    benchmark changed. A chunk is never a single token and never leaves one for later.
    """
    items: list[Token] = []
    rows: Rows = []
    for slot, s in live:
        prompt = s.job.prompt
        if s.fill >= len(prompt):
            rows.append((slot, s, len(items)))
            items.append((s.pending, len(prompt) + len(s.tokens) - 1, slot, True))
    filling = [(slot, s) for slot, s in live if s.fill < len(s.job.prompt)]
    if not filling:
        return [(items, rows)], []
    slot, s = filling[0]
    prompt = s.job.prompt
    left = len(prompt) - s.fill
    step = min(max(2, n_batch), left)
    if left - step == 1:
        step -= 1
    end = s.fill + step
    last = len(prompt) - 1
    chunk = [(prompt[p], p, slot, p == last) for p in range(s.fill, end)]
    chunk_rows: Rows = [(slot, s, len(chunk) - 1)] if end == len(prompt) else []
    return [(chunk, chunk_rows), (items, rows)], [(slot, s, end)]


class BatchDecoder(SharedPrefix):
    """Decode many requests ``width`` at a time over one llama.cpp context.

    Args:
        backend: The context, with ``width + 1`` sequences: slots ``0..width-1`` and the
            shared prefix at ``width``.
        width: How many sequences decode together.
        n_ctx: Cells per sequence; a prompt plus its reply must fit.
        n_batch: The largest batch llama.cpp accepts in one decode.
        store: The prefixes kept from earlier runs, if any.

    Attributes:
        busy_s: Seconds spent generating (evaluating prompts, decoding, sampling).
        generated: Tokens generated.
        scoring_s: Seconds spent scoring choices.
        steps: Decode steps taken, and ``filling_steps`` those that carried a prompt chunk.
    """

    def __init__(
        self,
        backend: Backend,
        width: int,
        n_ctx: int,
        n_batch: int,
        store: PrefixStore | None = None,
    ) -> None:
        super().__init__(backend, width, n_ctx, n_batch, store)
        self.busy_s = 0.0
        self.generated = 0
        self.scoring_s = 0.0
        self.steps = 0
        self.filling_steps = 0

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
            self._copy(self.prefix_seq, 0)
            start = shared
        chunks = prefill_chunks(start, len(prompt), self.n_batch)
        for a, b in chunks:
            self._decode([(prompt[p], p, 0, p == len(prompt) - 1) for p in range(a, b)])
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
                self._copy(0, lane)
            step = 0
            while True:
                items = [
                    (job.options[o][step], len(prompt) + step, lane, True)
                    for o, lane in zip(group, lanes, strict=False)
                    if step + 1 < len(job.options[o])
                ]
                if not items:
                    break
                self._decode(items)
                row = 0
                for o in group:
                    if step + 1 < len(job.options[o]):
                        totals[o] += float(self.backend.logprobs(row)[job.options[o][step + 1]])
                        row += 1
                step += 1
        result.scores = totals

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
                        slots[slot] = self._admit(*taken)
                live = [(slot, s) for slot, s in enumerate(slots) if s is not None]
                if not live:
                    return
                self._begin_waiting(live, feed)
                batches, chunks = plan_step([(i, s) for i, s in live if s.fill >= 0], self.n_batch)
                if not any(batch for batch, _ in batches):
                    # Nothing can move but the requests that wait: begin them as they are.
                    self._begin_waiting(live, feed, force=True)
                    continue
                self.steps += 1
                self.filling_steps += bool(chunks)
                for slot, s, end in chunks:
                    s.fill = end
                    self._kept[slot] = s.job.prompt[:end]
                for batch, rows in batches:
                    if not batch:
                        continue
                    self._decode(batch)
                    for slot, _, end in chunks:
                        if any(seq == slot and pos == end - 1 for _, pos, seq, _ in batch):
                            self._filled(slot, end)
                    for slot, s, index in rows:
                        if not self._step(s, s.sampler.sample(index), s.result):
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

    def _admit(self, job: BatchJob, deliver: Deliver) -> _Live | None:
        """``job`` taken into a slot, not begun yet (:meth:`_begin`); None if its prompt
        cannot fit (its result delivered)."""
        prompt = job.prompt
        if len(prompt) >= self.n_ctx:
            result = BatchResult()
            result.error = (
                f"prompt is {len(prompt)} tokens but the context holds {self.n_ctx}; "
                "raise model.n_ctx"
            )
            deliver(result)
            return None
        return _Live(job, deliver, BatchResult(), job.make_sampler(), time.perf_counter(), -1)

    def _begin(
        self, slot: int, live: _Live, waiting: Sequence[tuple[int, ...]], force: bool
    ) -> None:
        """Give ``live``'s slot the start of its prompt (``_slot_start``); the rest is
        evaluated in the coming decode steps. Unless ``force``, it waits while another slot
        is filling a prefix it could copy."""
        prompt = live.job.prompt
        if not force and self._awaits(slot, prompt):
            return
        start = self._slot_start(slot, prompt, waiting)
        self._kept[slot] = prompt[:start]
        # What the prefix sequence evaluated, it evaluated while admitting this request.
        live.result.evaluated = len(prompt) - start + self._unbilled
        self._unbilled = 0
        live.fill = start

    def _begin_waiting(
        self, live: Sequence[tuple[int, _Live]], feed: Feed, force: bool = False
    ) -> None:
        """Begin the slots' requests that have not begun, in slot order; each looks ahead at
        the others not begun and at the feed's waiting requests."""
        for slot, s in live:
            if s.fill < 0:
                ahead = [o.job.prompt for _, o in live if o.fill < 0 and o is not s]
                self._begin(slot, s, [*ahead, *feed.waiting()], force)

    def _release(self, slot: int, slots: list[_Live | None]) -> None:
        live = slots[slot]
        if live is not None:
            live.sampler.close()
        slots[slot] = None
        self._pending.pop(slot, None)

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
            live.hold = hold_after(everything, live.hold)
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
