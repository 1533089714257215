"""The batched side of the in-process model: requests made into batch jobs, decoded over a
second llama.cpp context on the provider's loaded weights, and results made into replies.

:class:`~skilleval.engine.llama.LlamaProvider` owns the model, its chat template and its
grammars and hands this class what it needs as callables; this class owns the batched
context (``engine/batch_llama.py``) and its decoder (``engine/batch.py``), created on first
use. The provider's lock is held around every call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from skilleval.engine.base import Completion, Message, Request, clean_reply
from skilleval.engine.batch import (
    BatchDecoder,
    BatchJob,
    BatchResult,
    Deliver,
    Feed,
    ListFeed,
)
from skilleval.engine.batch_llama import LlamaBackend
from skilleval.engine.greedy_grammar import closing_token, guards_loops
from skilleval.engine.llama_checks import (
    SCORE_DIGITS,
    check_schema,
    native_seed,
    one_line,
    pick,
    validate_json,
)
from skilleval.engine.llama_queue import Prepared
from skilleval.engine.prefix_store import PrefixStore
from skilleval.errors import ProviderError

__all__ = ["CELL_STEP", "MIN_CELLS", "BatchedLlama", "cells_for"]

Answer = Completion | ProviderError

CELL_STEP = 256
"""KV cells per sequence are a multiple of this (llama.cpp pads attention to it)."""
MIN_CELLS = 512
"""The fewest KV cells per sequence the batched context starts with."""


def cells_for(need: int, current: int, n_ctx: int) -> int:
    """KV cells per sequence for work that needs ``need`` of them: ``current`` when they
    suffice, else at least twice as many (so the context is rebuilt rarely), a multiple of
    :data:`CELL_STEP`, never fewer than :data:`MIN_CELLS` nor more than ``n_ctx``."""
    if current and need <= current:
        return current
    want = max(need, MIN_CELLS, 2 * current)
    return min(n_ctx, -(-want // CELL_STEP) * CELL_STEP)


class _FittingFeed:
    """A feed that holds back the first request needing more KV cells than the context has:
    the decoder then finishes the requests it holds, and the context is made larger."""

    def __init__(
        self, feed: Feed, cells: int, n_ctx: int, held: tuple[BatchJob, Deliver] | None
    ) -> None:
        self._feed = feed
        self._cells = cells
        self._n_ctx = n_ctx
        self.held = held
        """The request held back (first to be taken once the context fits it)."""
        self._blocked = False

    def take(self) -> tuple[BatchJob, Deliver] | None:
        if self._blocked:
            return None
        taken = self.held if self.held is not None else self._feed.take()
        self.held = None
        if taken is not None and min(_need(taken[0]), self._n_ctx) > self._cells:
            self.held, self._blocked = taken, True
            return None
        return taken

    def waiting(self) -> Sequence[tuple[int, ...]]:
        return [] if self._blocked else self._feed.waiting()


def _need(job: BatchJob) -> int:
    """KV cells a job may fill: its prompt and its longest reply."""
    return len(job.prompt) + job.max_tokens + 1


class BatchedLlama:
    """Batched decoding for one provider.

    Args:
        width: Requests decoded together.
        n_ctx: Cells per sequence.
        n_batch: Largest batch.
        load: Loads the model (once) and returns the ``llama_cpp.Llama``.
        prompt_tokens: Renders and tokenizes messages as the provider does.
        grammar: The grammar of a JSON schema, as the provider builds it.
        stops: The stop strings the chat template implies.
        store: The prefixes kept from earlier runs, if any (made when the decoder is).
        threads: CPU threads of the batched context (by default the model's own).
    """

    def __init__(
        self,
        width: int,
        n_ctx: int,
        n_batch: int,
        *,
        load: Callable[[], Any],
        prompt_tokens: Callable[[Sequence[Message]], list[int]],
        grammar: Callable[[Mapping[str, Any]], Any],
        stops: Callable[[], list[str]],
        store: Callable[[], PrefixStore | None] = lambda: None,
        turn_end: Callable[[], int] | None = None,
        threads: int | None = None,
    ) -> None:
        self.width = width
        self.threads = threads
        self.n_ctx = n_ctx
        self.n_batch = max(2, n_batch)
        self._load = load
        self._prompt_tokens = prompt_tokens
        self._grammar = grammar
        self._stops = stops
        self._store = store
        self._turn_end = turn_end
        self._backend: LlamaBackend | None = None
        self._decoder: BatchDecoder | None = None
        self.cells = 0
        """KV cells per sequence of the batched context (0 before it is made): sized to the
        work seen so far, and made larger when a request needs more."""
        self._generated = 0
        self._busy_s = 0.0

    def busy(self) -> tuple[int, float]:
        """Tokens generated and seconds spent generating, over every batch so far."""
        decoder = self._decoder
        if decoder is None:
            return self._generated, self._busy_s
        return self._generated + decoder.generated, self._busy_s + decoder.busy_s

    def decode(self, requests: Sequence[Request]) -> list[Answer]:
        """Answer each request (a generation, or a choice scored), decoded together; one
        answer per request."""
        self._ready()
        out: list[Answer] = []
        placed: list[tuple[int, Prepared]] = []
        for i, request in enumerate(requests):
            try:
                prepared = self.prepare(request)
            except ProviderError as exc:
                out.append(exc)
                continue
            out.append(ProviderError("not decoded"))  # replaced below
            placed.append((i, prepared))
        feed = ListFeed([prepared.job for _, prepared in placed])
        self.drain(feed)
        results = feed.results
        for (i, prepared), result in zip(placed, results, strict=True):
            out[i] = prepared.finish(result)
        return out

    def drain(self, feed: Feed) -> None:
        """Decode requests from ``feed`` (:class:`~skilleval.engine.llama_queue.RequestQueue`)
        until none is waiting; when a request needs more KV cells than the context has, the
        requests already decoding finish, and the context is made again, larger."""
        held: tuple[BatchJob, Deliver] | None = None
        while True:
            decoder = self._ready(_need(held[0]) if held is not None else 0)
            fitting = _FittingFeed(feed, self.cells, self.n_ctx, held)
            decoder.drain(fitting)
            held = fitting.held
            if held is None:
                return

    def prepare(self, request: Request) -> Prepared:
        """``request`` as a batch job (the model loaded), and how its result becomes a reply.

        Raises:
            ProviderError: The chat template rejects the messages, or the schema cannot be
                turned into a grammar.
        """
        self._ready()
        if request.choices is not None:
            return self._prepare_choice(request)
        if request.json_schema is not None:
            check_schema(request.json_schema)
        prompt = self._prompt_tokens(request.messages)
        grammar = self._grammar(request.json_schema) if request.json_schema else None
        sampled = request.temperature > 0
        closing = closing_token(self._load()) if guards_loops(request) else None

        def make() -> Any:
            # The context of the moment: it is made again when the work needs more cells.
            backend = self._backend
            assert backend is not None
            return backend.sampler(
                temperature=float(request.temperature) if sampled else 0.0,
                top_p=float(request.top_p) if sampled else 1.0,
                seed=native_seed(request.seed),
                grammar=grammar,
                closing=closing,
            )

        def finish(result: BatchResult) -> Answer:
            if result.error is not None:
                return ProviderError(result.error)
            completion = clean_reply(
                Completion(
                    text=result.text.decode("utf-8", errors="ignore"),
                    finish_reason=result.finish_reason,
                    prompt_tokens=len(prompt),
                    completion_tokens=result.completion_tokens,
                    latency_ms=result.latency_ms,
                    tokens_evaluated=result.evaluated,
                )
            )
            if request.json_schema is not None and not completion.truncated:
                try:
                    validate_json(completion.text, request.json_schema)
                except ProviderError as exc:
                    return exc
            return completion

        stop = tuple(s.encode("utf-8") for s in self._stops())
        return Prepared(BatchJob(tuple(prompt), request.max_tokens, make, stop), finish)

    def _prepare_choice(self, request: Request) -> Prepared:
        """A choice request as a job that scores each option (its tokens, then the end of
        turn), and how the scores become the reply (the option picked, every score)."""
        assert request.choices is not None
        llm = self._load()
        eos = self._turn_end() if self._turn_end is not None else int(llm.token_eos())
        prompt = self._prompt_tokens(request.messages)
        options: list[tuple[int, ...]] = []
        lengths: dict[str, int] = {}
        for option in request.choices:
            tokens = [int(t) for t in llm.tokenize(option.encode("utf-8"), add_bos=False)]
            lengths[option] = len(tokens)
            options.append((*tokens, eos))

        def finish(result: BatchResult) -> Answer:
            assert request.choices is not None
            if result.error is not None:
                return ProviderError(result.error)
            scores = {
                option: round(total, SCORE_DIGITS)
                for option, total in zip(request.choices, result.scores, strict=True)
            }
            picked = pick(scores, request)
            return clean_reply(
                Completion(
                    text=picked,
                    finish_reason="stop",
                    prompt_tokens=len(prompt),
                    completion_tokens=lengths[picked],
                    latency_ms=result.latency_ms,
                    choice_scores=scores,
                    tokens_evaluated=result.evaluated,
                )
            )

        return Prepared(BatchJob.choice(tuple(prompt), tuple(options)), finish)

    def close(self) -> None:
        """Free the batched context, keeping its counters; the next call makes it again."""
        if self._backend is not None:
            self._backend.close()
            self._backend = None
        if self._decoder is not None:
            self._generated += self._decoder.generated
            self._busy_s += self._decoder.busy_s
            self._decoder = None

    def _ready(self, need: int = 0) -> BatchDecoder:
        """The decoder, made on the loaded model on first use, with KV cells for ``need``
        (made again, larger, when it has fewer; its counters kept).

        Raises:
            ProviderError: The model cannot be loaded, or llama.cpp refuses the context.
        """
        cells = cells_for(min(need, self.n_ctx), self.cells, self.n_ctx)
        if self._decoder is None or cells > self.cells:
            llm = self._load()
            self.close()
            try:
                self._backend = LlamaBackend(llm, self.width, cells, self.n_batch, self.threads)
            except RuntimeError as exc:
                raise ProviderError(f"llama.cpp failed: {one_line(exc)}") from None
            self.cells = cells
            self._decoder = BatchDecoder(
                self._backend, self.width, self.n_ctx, self.n_batch, self._store()
            )
        assert self._decoder is not None
        return self._decoder
