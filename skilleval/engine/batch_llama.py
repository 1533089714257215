"""The llama.cpp side of batched decoding: a context of its own over an already loaded model.

The context shares the model's weights with the provider's ``llama_cpp.Llama`` and has
``width + 1`` KV streams (one per slot, one for the shared prefix), each ``n_ctx`` cells, with
``kv_unified`` off so a sequence's attention reads only its own stream. Samplers are built
exactly as llama-cpp-python builds them for ``create_completion`` (a neutral penalty stage,
the grammar when there is one, then greedy or top-p/temperature sampling seeded per request),
so a sequence samples what the one-at-a-time path would sample from the same logits.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from typing import Any

from skilleval.engine.batch import Token
from skilleval.engine.greedy_grammar import GreedyGrammar, LlamaGrammarJudge
from skilleval.engine.llama_adapter import (
    free_chain,
    model_of,
    sample_chain,
    sampler_chain,
    vocab_of,
)
from skilleval.engine.prefix_store import with_streams

__all__ = ["LAST_N", "LlamaBackend", "LlamaSampler", "log_softmax", "restore_seq", "seq_state"]

LAST_N = 64
"""The penalty window llama-cpp-python gives its sampler (``last_n_tokens_size``)."""


def log_softmax(logits: Any) -> Any:
    """Log-probabilities of a row of raw logits, in float64: choice scores, batched or one at
    a time, are computed by this one function so they agree to the bit."""
    import numpy as np  # lazy: start-up time

    x = logits.astype(np.float64)
    x -= x.max()
    return x - math.log(float(np.exp(x).sum()))


def seq_state(ctx: Any, seq: int) -> bytes:
    """Sequence ``seq``'s cells in context ``ctx``, as llama.cpp serializes them."""
    import llama_cpp  # lazy: start-up time

    size = int(llama_cpp.llama_state_seq_get_size(ctx, seq))
    buffer = (ctypes.c_uint8 * size)()
    written = int(llama_cpp.llama_state_seq_get_data(ctx, buffer, size, seq))
    return bytes(buffer)[:written]


def restore_seq(ctx: Any, seq: int, data: bytes) -> bool:
    """Load :func:`seq_state`'s bytes into the empty sequence ``seq``, from a context of any
    width (:func:`~skilleval.engine.prefix_store.with_streams`); False if refused."""
    import llama_cpp  # lazy: start-up time

    # An empty sequence's state is its header and one empty count per stream.
    streams = (int(llama_cpp.llama_state_seq_get_size(ctx, seq)) - 12) // 4
    fitted = with_streams(data, streams)
    if fitted is None:
        return False
    data = fitted
    source = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
    return int(llama_cpp.llama_state_seq_set_data(ctx, source, len(data), seq)) > 0


class LlamaSampler:
    """One sequence's sampler chain, as llama-cpp-python builds it; a greedy request with a
    grammar samples the short way instead (:mod:`~skilleval.engine.greedy_grammar`), with
    the same tokens.
    """

    def __init__(
        self,
        backend: LlamaBackend,
        *,
        temperature: float,
        top_p: float,
        seed: int,
        grammar: Any = None,
        closing: int | None = None,
    ) -> None:
        self._backend = backend
        self._ctx = backend.ctx
        self._chain: Any = None
        self._grammar: GreedyGrammar | None = None
        if grammar is not None and temperature == 0.0:
            judge = LlamaGrammarJudge(backend.vocab, grammar, backend.n_vocab)
            self._grammar = GreedyGrammar(judge, closing)
            return
        self._chain = sampler_chain(
            n_vocab=backend.n_vocab,
            penalty_last_n=LAST_N,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            vocab=backend.vocab,
            grammar=grammar,
        )

    def sample(self, index: int) -> int:
        if self._grammar is None:
            return sample_chain(self._chain, self._ctx, index)
        token = self._grammar.pick(self._backend.logits(index))
        self._grammar.accept(token)
        return token

    def close(self) -> None:
        if self._chain is not None:
            free_chain(self._chain)
            self._chain = None
        if self._grammar is not None:
            self._grammar.close()
            self._grammar = None


class LlamaBackend:
    """A llama.cpp context for batched decoding over ``llm``'s model.

    Args:
        llm: A loaded ``llama_cpp.Llama``; its tokenizer and weights are shared.
        width: Decoding slots.
        n_ctx: Cells per sequence.
        n_batch: Largest batch (and micro-batch).
        threads: CPU threads; by default ``llm``'s own, so both contexts run alike.

    Raises:
        RuntimeError: llama.cpp could not create the context.
    """

    def __init__(
        self, llm: Any, width: int, n_ctx: int, n_batch: int, threads: int | None = None
    ) -> None:
        import llama_cpp  # lazy: start-up time

        self._lib = llama_cpp
        self.llm = llm
        params = llama_cpp.llama_context_default_params()
        base = llm.context_params
        for name in ("type_k", "type_v", "flash_attn_type", "offload_kqv", "swa_full"):
            if hasattr(base, name):
                setattr(params, name, getattr(base, name))
        params.n_seq_max = width + 1
        params.kv_unified = False
        params.n_ctx = n_ctx * (width + 1)
        params.n_batch = n_batch
        params.n_ubatch = n_batch
        params.n_threads = base.n_threads if threads is None else threads
        params.n_threads_batch = base.n_threads_batch if threads is None else threads
        self.ctx = llama_cpp.llama_init_from_model(model_of(llm), params)
        if not self.ctx:
            raise RuntimeError("llama.cpp could not create a batched context")
        self.threads = int(params.n_threads)
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        self.n_vocab = int(llm.n_vocab())
        self.vocab = vocab_of(llm)
        self._capacity = max(n_batch, width)
        self._batch = llama_cpp.llama_batch_init(self._capacity, 0, 1)

    def decode(self, items: Sequence[Token]) -> None:
        batch = self._batch
        batch.n_tokens = len(items)
        for i, (token, pos, seq, logits) in enumerate(items):
            batch.token[i] = token
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq
            batch.logits[i] = 1 if logits else 0
        code = self._lib.llama_decode(self.ctx, batch)
        if code != 0:
            raise RuntimeError(f"llama_decode returned {code}")

    def clear(self, seq: int, start: int = 0) -> None:
        self._lib.llama_memory_seq_rm(self.memory, seq, start, -1)

    def copy(self, src: int, dst: int) -> None:
        self._lib.llama_memory_seq_cp(self.memory, src, dst, -1, -1)

    def is_eog(self, token: int) -> bool:
        return bool(self._lib.llama_vocab_is_eog(self.vocab, token))

    def logits(self, index: int) -> Any:
        """Output ``index``'s raw logits, a float32 view valid until the next decode."""
        import numpy as np  # lazy: start-up time

        return np.ctypeslib.as_array(
            self._lib.llama_get_logits_ith(self.ctx, index), shape=(self.n_vocab,)
        )

    def logprobs(self, index: int) -> Any:
        """Log-softmax of one output's logits, as the one-at-a-time scoring computes it."""
        return log_softmax(self.logits(index))

    def detokenize(self, tokens: Sequence[int], prev: Sequence[int]) -> bytes:
        return bytes(self.llm.detokenize(list(tokens), prev_tokens=list(prev)))

    def state(self, seq: int) -> bytes:
        return seq_state(self.ctx, seq)

    def restore(self, seq: int, data: bytes) -> bool:
        return restore_seq(self.ctx, seq, data)

    def sampler(
        self,
        *,
        temperature: float,
        top_p: float,
        seed: int,
        grammar: Any = None,
        closing: int | None = None,
    ) -> LlamaSampler:
        """One sequence's sampler; ``closing`` turns the loop guard on (greedy with a grammar
        only, :mod:`~skilleval.engine.greedy_grammar`)."""
        return LlamaSampler(
            self, temperature=temperature, top_p=top_p, seed=seed, grammar=grammar, closing=closing
        )

    def close(self) -> None:
        if self._batch is not None:
            self._lib.llama_batch_free(self._batch)
            self._batch = None
        if self.ctx:
            self._lib.llama_free(self.ctx)
            self.ctx = None
