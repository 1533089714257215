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
  request at once, so no step decodes for a finished sequence;
* a choice (a job with ``options``) takes a slot like a generation: its prompt is filled
  the same way, the prompt's last logits score every option's first token, and then each
  step decodes one token of its options (every start of an option once, depth first, in
  the slot's own cells after the prompt) beside the other slots' tokens, so a choice never
  holds the generations up and they never hold it up.

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
    Token,
    common_prefix,
    hold_after,
    option_paths,
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
    "Token",
    "common_prefix",
    "prefill_chunks",
]


@dataclass(slots=True)
class _Live:
    job: BatchJob
    deliver: Deliver
    result: BatchResult
    sampler: Sampler | None
    """None for a choice."""
    started: float
    fill: int
    """The first prompt position not evaluated yet (the prompt's length once it is)."""
    tokens: list[int] = field(default_factory=list)
    pending: int = -1
    """The token sampled last, still to be decoded."""
    hold: int = 0
    """Tokens still to wait for before a split multi-byte character is complete."""
    paths: list[tuple[int, ...]] = field(default_factory=list)
    """A choice's option paths still to decode (:func:`option_paths`), the next one first."""

    def entry(self, slot: int) -> Token:
        """This generating sequence's next batch entry: its pending token, or a choice's next
        option token after its path's start."""
        prompt = self.job.prompt
        if self.job.options:
            path = self.paths[0]
            return (path[-1], len(prompt) + len(path) - 1, slot, True)
        return (self.pending, len(prompt) + len(self.tokens) - 1, slot, True)


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
        if s.fill >= len(s.job.prompt):
            rows.append((slot, s, len(items)))
            items.append(s.entry(slot))
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
        generated: Tokens generated (a choice's option tokens are not: nothing is sampled).
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
                        if s.sampler is None:
                            going = self._scored(slot, s, index)
                        else:
                            going = self._step(s, s.sampler.sample(index), s.result)
                        if not going:
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
        # A choice's options go after its prompt, in its own cells.
        if len(prompt) + (job.max_tokens if job.options else 0) >= self.n_ctx:
            result = BatchResult()
            result.error = (
                f"prompt is {len(prompt)} tokens but the context holds {self.n_ctx}; "
                "raise model.n_ctx"
            )
            deliver(result)
            return None
        if job.options:
            sampler = None
        else:
            assert job.make_sampler is not None, "a generation needs a sampler"
            sampler = job.make_sampler()
        live = _Live(job, deliver, BatchResult(), sampler, time.perf_counter(), -1)
        live.paths = option_paths(job.options)
        return live

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
        if live is not None and live.sampler is not None:
            live.sampler.close()
        slots[slot] = None
        self._pending.pop(slot, None)

    def _scored(self, slot: int, live: _Live, index: int) -> bool:
        """Take the logits of a choice's last decoded token (the prompt's last, or an option
        path's); False when every option is scored (its result filled in, the option cells
        dropped so the slot keeps its bare prompt).

        Each option's score adds, in token order, the log-probability of each of its tokens
        after the tokens before it, as the one-at-a-time path adds them."""
        options = live.job.options
        prompt = live.job.prompt
        logprobs = self.backend.logprobs(index)
        result = live.result
        if not result.scores:  # the prompt's last token: every option's first
            result.scores = [float(logprobs[o[0]]) if o else 0.0 for o in options]
        else:
            path = live.paths.pop(0)
            m = len(path)
            for k, option in enumerate(options):
                if len(option) > m and option[:m] == path:
                    result.scores[k] += float(logprobs[option[m]])
        if live.paths:
            # Back to the next path's parent: its cells are the ones it is decoded after.
            self.backend.clear(slot, len(prompt) + len(live.paths[0]) - 1)
            return True
        self.backend.clear(slot, len(prompt))
        result.finish_reason = "stop"
        result.latency_ms = (time.perf_counter() - live.started) * 1000.0
        return False

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
