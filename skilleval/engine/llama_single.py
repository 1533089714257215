"""One request at a time on the loaded ``llama_cpp.Llama``: the provider's calls when it does
not batch (``model.parallel`` 1).

:class:`SingleCalls` is the part of :class:`~skilleval.engine.llama.LlamaProvider` that
evaluates a prompt on the model's own context (reusing the previous prompt's cells and the
prefix store), generates free or schema-constrained text with llama-cpp-python's
``create_chat_completion``, and scores choices by log-probability. The provider holds its
lock around every call.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from skilleval.engine.base import Completion, Message, Request
from skilleval.engine.batch import STORE_GAIN
from skilleval.engine.batch_llama import log_softmax, restore_seq, seq_state
from skilleval.engine.greedy_grammar import (
    GrammarProcessor,
    GreedyGrammar,
    LlamaGrammarJudge,
    closing_token,
    guards_loops,
)
from skilleval.engine.llama_adapter import clear_kv, context_of, drop_kv, vocab_of
from skilleval.engine.llama_checks import (
    SCORE_DIGITS,
    check_schema,
    native_seed,
    one_line,
    pick,
    runtime_version,
    validate_json,
)
from skilleval.engine.llama_config import LlamaConfig
from skilleval.engine.llama_logprobs import watch_logprobs
from skilleval.engine.llama_template import ModelTemplate
from skilleval.engine.prefix_store import MIN_TOKENS, PrefixStore, shared_length, store_folder
from skilleval.errors import ProviderError

__all__ = ["SingleCalls", "open_model", "prefix_store"]

_GRAMMARS = threading.Lock()
"""Held around the grammar caches: lanes (``engine/llama_lanes.py``) ask from several threads."""


def prefix_store(
    memo_dir: Path, model_key: str, llm: Any, features: Sequence[str], grid: int = 0
) -> PrefixStore:
    """The prompt prefixes evaluated by earlier runs of this model file on this runtime, build
    and KV layout, kept under the home (``engine/prefix_store.py``); ``grid``: prompts are
    evaluated on that grid (``engine/kernel_policy.py``), whose prefixes are kept apart."""
    params = llm.context_params
    layout = [
        f"{name}={getattr(params, name, None)}"
        for name in ("type_k", "type_v", "flash_attn_type", "swa_full")
    ]
    folder = store_folder(
        memo_dir,
        model_key,
        f"llama-cpp-python={runtime_version()}",
        f"build={','.join(features)}",
        *layout,
        *([f"grid={grid}"] if grid else []),
    )
    return PrefixStore(folder)


def open_model(path: Path, config: LlamaConfig, n_ctx: int, threads: int) -> Any:
    """Load the GGUF at ``path`` with llama-cpp-python.

    Raises:
        ProviderError: llama.cpp rejects the file.
    """
    from llama_cpp import Llama  # lazy: start-up time

    # n_ubatch == n_batch, so llama.cpp never splits a batch that _prefill has shaped.
    n_batch = max(2, config.n_batch)
    try:
        return Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_batch=n_batch,
            n_ubatch=n_batch,
            n_threads=threads,
            n_threads_batch=threads,
            n_gpu_layers=config.n_gpu_layers,
            seed=0,
            logits_all=False,
            verbose=False,
        )
    except (ValueError, RuntimeError, OSError) as exc:
        raise ProviderError(
            f"could not load {path}: llama.cpp rejected it, so it is probably truncated or "
            f"corrupt ({one_line(exc)})"
        ) from None


class SingleCalls:
    """Prompt evaluation, generation and choice scoring one request at a time."""

    _canonical: int
    """How many leading KV positions were evaluated in batches of two or more tokens."""
    _grid: int = 0
    """Prompt batches end on multiples of this (0: anywhere; ``engine/kernel_policy.py``)."""
    _eval_log: list[int]
    _grammars: dict[str, Any]
    _busy_s: float
    _generated: int

    def template(self) -> ModelTemplate:
        raise NotImplementedError

    def _prefixes(self) -> PrefixStore:
        raise NotImplementedError

    def _prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        raise NotImplementedError

    def _count_evals(self, llm: Any) -> None:
        """Record every batch llama.cpp decodes on ``llm``, so tokens_evaluated is measured
        rather than inferred from prefix arithmetic."""
        original_eval = llm.eval

        def counting_eval(tokens: Sequence[int]) -> None:
            self._eval_log.append(len(tokens))
            original_eval(tokens)

        llm.eval = counting_eval

    # -- prompt evaluation ---------------------------------------------------------------------

    def _prefill(self, llm: Any, prompt: list[int]) -> int:
        """Bring the KV state to exactly ``prompt``, reusing what it can; return tokens evaluated.

        llama.cpp's CPU kernels give bitwise-different results for a one-token batch than for
        the same token inside a larger batch. For most models (the kernel probe says which),
        any split into batches of two or more tokens gives identical bits. So a position is
        reused only if it was evaluated in such a batch (``_canonical``), the last batch
        always holds at least two tokens, and no batch is ever a single token. For a model
        whose splits change bits (``_grid``), batches end at multiples of the grid and at the
        prompt's end, and only whole grid batches are reused, so every prompt's cells come
        from the same decode calls. Either way the logits, and so greedy text and choice
        scores, do not depend on what the provider was asked before.
        """
        n = len(prompt)
        cached = llm.input_ids[: min(int(llm.n_tokens), self._canonical)]
        shared = shared_length([int(t) for t in cached], prompt)
        reuse = self._reusable(shared, n)
        restored = self._restore(llm, prompt, reuse)
        if restored:
            reuse = restored
        elif reuse >= MIN_TOKENS and reuse == self._aligned(shared):
            # A prefix this prompt shares with the one before: worth keeping for later runs.
            self._keep(llm, prompt[:reuse])
        llm.n_tokens = reuse
        size = self._grid or int(llm.n_batch)
        pos = reuse
        while pos < n:
            step = min(size, n - pos)
            if not self._grid and n - pos - step == 1:
                step -= 1
            llm.eval(prompt[pos : pos + step])
            pos += step
        self._canonical = n
        return n - reuse

    def _aligned(self, positions: int) -> int:
        """The leading ``positions`` that whole batches cover: all of them, or on a grid, down
        to its last boundary."""
        return positions // self._grid * self._grid if self._grid else positions

    def _reusable(self, shared: int, n: int) -> int:
        """How many of ``shared`` leading positions a prompt of ``n`` tokens may reuse: all but
        the last two, or on a grid, the whole grid batches before its last batch."""
        if self._grid:
            return min(self._aligned(shared), self._aligned(n - 1))
        return max(0, min(shared, n - 2))

    def _restore(self, llm: Any, prompt: list[int], reuse: int) -> int:
        """Load the stored prefix that spares the most evaluation of ``prompt`` into the KV
        state, when it spares :data:`STORE_GAIN` tokens more than ``reuse``; return how many
        positions are then reused (0 when nothing was loaded)."""
        store = self._prefixes()
        entry, length = store.best(prompt)
        length = self._reusable(length, len(prompt))
        if entry is None or length < reuse + STORE_GAIN:
            return 0
        data = store.read(entry)
        if data is None:
            return 0
        clear_kv(llm)
        self._canonical = 0
        if not restore_seq(context_of(llm), 0, data):
            clear_kv(llm)
            llm.n_tokens = 0
            store.remove(entry)
            return 0
        llm.input_ids[: len(entry.tokens)] = entry.tokens
        llm.n_tokens = len(entry.tokens)
        self._canonical = len(entry.tokens)
        return length

    def _keep(self, llm: Any, prefix: list[int]) -> None:
        """Store the KV cells of ``prefix`` (the state's leading positions, evaluated as a
        prompt) unless they are stored already."""
        store = self._prefixes()
        if store.has(prefix):
            return
        drop_kv(llm, 0, len(prefix))
        llm.n_tokens = len(prefix)
        store.write(prefix, seq_state(context_of(llm), 0))

    # -- free and schema-constrained generation -----------------------------------------------

    def _generate(self, llm: Any, prompt: list[int], request: Request) -> Completion:
        grammar = None
        if request.json_schema is not None:
            check_schema(request.json_schema)
            grammar = self._grammar(request.json_schema)
        sampled = request.temperature > 0
        processors = None
        road: GreedyGrammar | None = None
        if grammar is not None and not sampled:
            # The library's grammar stage judges the whole vocabulary at every token; this
            # picks the same greedy tokens judging one token in most steps.
            from llama_cpp import LogitsProcessorList  # lazy: start-up time

            closing = closing_token(llm) if guards_loops(request) else None
            judge = LlamaGrammarJudge(vocab_of(llm), grammar, int(llm.n_vocab()))
            road = GreedyGrammar(judge, closing)
            processors = LogitsProcessorList([GrammarProcessor(road)])
            grammar = None
        recorder, processors = watch_logprobs(request, processors, greedy=not sampled)
        start = time.perf_counter()
        evaluated = self._prefill(llm, prompt)
        # The library finds the whole prompt in the KV state and samples straight from the
        # logits _prefill left; the first eval it records is whatever it still had to decode.
        self._eval_log.clear()
        try:
            out = llm.create_chat_completion(
                messages=self.template().conversation(request.messages),
                temperature=float(request.temperature) if sampled else 0.0,
                top_p=float(request.top_p) if sampled else 1.0,
                # Only temperature and top_p shape sampling; llama.cpp's other filters are off.
                top_k=0,
                min_p=0.0,
                typical_p=1.0,
                repeat_penalty=1.0,
                seed=native_seed(request.seed),
                max_tokens=request.max_tokens,
                grammar=grammar,
                logits_processor=processors,
            )
        except (ValueError, RuntimeError) as exc:
            raise ProviderError(f"llama.cpp failed: {one_line(exc)}") from None
        finally:
            if road is not None:
                road.close()
        latency_ms = (time.perf_counter() - start) * 1000.0
        self._busy_s += latency_ms / 1000.0

        choice = out["choices"][0]
        text = choice["message"]["content"] or ""
        finish_reason = choice["finish_reason"] or "stop"
        usage = out["usage"]
        self._generated += int(usage["completion_tokens"])
        library_evaluated = self._eval_log[0] if self._eval_log else 0
        if library_evaluated:
            # The library rendered a different prompt and decoded part of it its own way;
            # trust none of the KV state for reuse.
            self._canonical = 0
        completion = Completion(
            text=text,
            finish_reason=finish_reason,
            prompt_tokens=int(usage["prompt_tokens"]),
            completion_tokens=int(usage["completion_tokens"]),
            latency_ms=latency_ms,
            tokens_evaluated=evaluated + library_evaluated,
            token_logprobs=recorder.result(int(usage["completion_tokens"])) if recorder else None,
        )
        if request.json_schema is not None and not completion.truncated:
            validate_json(text, request.json_schema)
        return completion

    def _grammar(self, schema: Mapping[str, Any]) -> Any:
        from llama_cpp.llama_grammar import LlamaGrammar

        canonical = json.dumps(schema, sort_keys=True, default=dict)
        with _GRAMMARS:
            grammar = self._grammars.get(canonical)
            if grammar is None:
                try:
                    grammar = LlamaGrammar.from_json_schema(
                        json.dumps(schema, default=dict), verbose=False
                    )
                except Exception as exc:
                    # The converter raises bare Exceptions and ValueErrors for unsupported
                    # schemas.
                    raise ProviderError(
                        f"json_schema cannot be turned into a grammar: {one_line(exc)}"
                    ) from None
                self._grammars[canonical] = grammar
        return grammar

    # -- constrained choice by log-probability -------------------------------------------------

    def _choose(self, llm: Any, prompt: list[int], request: Request) -> Completion:
        import numpy as np  # lazy: start-up time

        assert request.choices is not None
        eos = self.template().turn_end
        n_vocab = int(llm.n_vocab())

        def logprobs() -> Any:
            from llama_cpp import llama_get_logits_ith  # lazy: start-up time

            return log_softmax(
                np.ctypeslib.as_array(llama_get_logits_ith(context_of(llm), -1), shape=(n_vocab,))
            )

        start = time.perf_counter()
        evaluated = self._prefill(llm, prompt)
        first = logprobs()

        scores: dict[str, float] = {}
        lengths: dict[str, int] = {}
        for option in request.choices:
            tokens = [int(t) for t in llm.tokenize(option.encode("utf-8"), add_bos=False)]
            lengths[option] = len(tokens)
            sequence = [*tokens, eos]
            total = float(first[sequence[0]])
            llm.n_tokens = len(prompt)
            for current, following in itertools.pairwise(sequence):
                llm.eval([current])
                total += float(logprobs()[following])
            scores[option] = round(total, SCORE_DIGITS)
        latency_ms = (time.perf_counter() - start) * 1000.0

        picked = pick(scores, request)
        return Completion(
            text=picked,
            finish_reason="stop",
            prompt_tokens=len(prompt),
            completion_tokens=lengths[picked],
            latency_ms=latency_ms,
            choice_scores=scores,
            tokens_evaluated=evaluated,
        )
