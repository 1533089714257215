"""Greedy decoding under a grammar, the short way.

llama.cpp's sampler chain lets a grammar judge every token of the vocabulary at every step
(about 12 ms a token for a 49k vocabulary, on one core, between decode steps), then greedy
sampling takes the first highest logit among the tokens allowed. When the first highest
logit overall is allowed, that is the token. So :class:`GreedyGrammar` shows the grammar
that one token, and the whole vocabulary only when it is refused. With a neutral penalty
stage and greedy sampling (no random draw), the tokens are the chain's own, bit for bit.

Both decoding paths use it: the batched one samples with :meth:`GreedyGrammar.pick`, and the
one-at-a-time path, which runs llama-cpp-python's completion loop, gives it to that loop as a
logits processor (:class:`GrammarProcessor`) in place of the grammar stage.

It can also guard against a loop (a judge's reply only: ``closing``). A small model grading
an output sometimes falls into a cycle inside a free-text field, ``1.1.1.1.…``, and writes it
to the field's length bound: 264 tokens, the longest call of a run. When the greedy token
would make the reply's last tokens one cycle of at most :data:`LOOP_PERIOD` tokens repeated
:data:`LOOP_REPEATS` times, the guard takes the closing token (``"``, which ends the text)
if the grammar allows it there, else the best allowed token that breaks the cycle. Both paths
see the same tokens, so they still agree.

What the grammar allows is asked of a :class:`GrammarJudge`: llama.cpp's grammar sampler
(:class:`LlamaGrammarJudge`) on a real model, a scripted grammar in the tests, which drive the
guard and both paths with scripted logits on any machine.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any, Protocol

from skilleval.engine.base import Request
from skilleval.engine.llama_adapter import grammar_sampler

__all__ = [
    "LOOP_GUARD",
    "LOOP_PERIOD",
    "LOOP_REPEATS",
    "GrammarJudge",
    "GrammarProcessor",
    "GreedyGrammar",
    "LlamaGrammarJudge",
    "closing_token",
    "continues_loop",
    "guards_loops",
]

LOOP_GUARD = 1
"""The loop guard's version: part of a judge reply's cache key and of the judge-fitness memo's."""

LOOP_PERIOD = 4
"""The longest cycle, in tokens, the loop guard looks for."""
LOOP_REPEATS = 8
"""How many times a cycle repeats before the loop guard breaks it."""


def guards_loops(request: Request) -> bool:
    """Whether ``request`` decodes with the loop guard: a judge's schema-held reply."""
    return request.purpose == "judge" and request.json_schema is not None


def closing_token(llm: Any) -> int | None:
    """The token that is ``"`` alone in ``llm``'s vocabulary, if there is one."""
    tokens = llm.tokenize(b'"', add_bos=False, special=False)
    return int(tokens[0]) if len(tokens) == 1 else None


def continues_loop(tokens: Sequence[int], token: int) -> bool:
    """Whether ``token`` after ``tokens`` ends them with one cycle of at most
    :data:`LOOP_PERIOD` tokens repeated :data:`LOOP_REPEATS` times."""
    for period in range(1, LOOP_PERIOD + 1):
        span = period * LOOP_REPEATS
        if len(tokens) + 1 < span:
            return False
        tail = [*tokens[len(tokens) - span + 1 :], token]
        if all(tail[i] == tail[i - period] for i in range(period, span)):
            return True
    return False


class GrammarJudge(Protocol):
    """What a grammar says about the next token: llama.cpp's grammar sampler
    (:class:`LlamaGrammarJudge`), or a scripted one in tests."""

    def allows(self, token: int, logit: float) -> bool:
        """Whether the grammar allows ``token`` next."""
        ...

    def best_allowed(self, logits: Any) -> int:
        """The first highest-logit token the grammar allows next."""
        ...

    def accept(self, token: int) -> None:
        """Advance the grammar past ``token``."""
        ...

    def close(self) -> None: ...


class LlamaGrammarJudge:
    """llama.cpp's grammar sampler for one request, asked about one token or all of them.

    Args:
        vocab: The model's ``llama_vocab`` pointer (:func:`~skilleval.engine.llama_adapter.vocab_of`).
        grammar: A ``llama_cpp.LlamaGrammar``.
        n_vocab: The vocabulary's size.
    """

    def __init__(self, vocab: Any, grammar: Any, n_vocab: int) -> None:
        import llama_cpp  # lazy: start-up time

        self._lib = llama_cpp
        self.n_vocab = n_vocab
        self._sampler: Any = grammar_sampler(vocab, grammar)
        self._one_data = (llama_cpp.llama_token_data * 1)()
        self._one = llama_cpp.llama_token_data_array(
            data=ctypes.cast(self._one_data, llama_cpp.llama_token_data_p), size=1
        )
        self._all: Any = None

    def allows(self, token: int, logit: float) -> bool:
        entry: Any = self._one_data[0]
        entry.id, entry.logit, entry.p = token, logit, 0.0
        one: Any = self._one
        one.data = ctypes.cast(self._one_data, self._lib.llama_token_data_p)
        one.size = 1
        one.selected = -1
        one.sorted = False
        self._lib.llama_sampler_apply(self._sampler, ctypes.byref(one))
        return bool(one.size == 1 and one.data[0].logit != float("-inf"))

    def best_allowed(self, logits: Any) -> int:
        import numpy as np  # lazy: start-up time

        if self._all is None:
            data = (self._lib.llama_token_data * self.n_vocab)()
            self._all = (data, np.ctypeslib.as_array(data), self._lib.llama_token_data_array())
        data, view, array = self._all
        view["id"] = np.arange(self.n_vocab, dtype=view["id"].dtype)
        view["logit"] = logits
        view["p"] = 0.0
        array.data = ctypes.cast(data, self._lib.llama_token_data_p)
        array.size = self.n_vocab
        array.selected = -1
        array.sorted = False
        self._lib.llama_sampler_apply(self._sampler, ctypes.byref(array))
        kept = np.ctypeslib.as_array(array.data, shape=(int(array.size),))
        return int(kept["id"][int(kept["logit"].argmax())])

    def accept(self, token: int) -> None:
        self._lib.llama_sampler_accept(self._sampler, token)

    def close(self) -> None:
        if self._sampler is not None:
            self._lib.llama_sampler_free(self._sampler)
            self._sampler = None


class GreedyGrammar:
    """One request's grammar state, for greedy decoding.

    Args:
        judge: The request's grammar (:class:`LlamaGrammarJudge` on a real model).
        closing: The token that ends a looping text (the loop guard is on when given).
    """

    def __init__(self, judge: GrammarJudge, closing: int | None = None) -> None:
        self.judge = judge
        self._closing = closing
        self._taken: list[int] = []
        self.refused = 0
        """How many picks had to judge the whole vocabulary."""

    @property
    def taken(self) -> Sequence[int]:
        """The tokens accepted so far."""
        return self._taken

    def pick(self, logits: Any) -> int:
        """The first highest-logit token the grammar allows next (``logits``: float32 array
        over the vocabulary, in token order). Does not advance the grammar: see
        :meth:`accept`."""
        token = int(logits.argmax())  # the first highest, as llama.cpp's greedy sampler picks
        if self._closing is not None and continues_loop(self._taken, token):
            return self._break_loop(logits, token, self._closing)
        if self.judge.allows(token, float(logits[token])):
            return token
        self.refused += 1
        return self.judge.best_allowed(logits)

    def accept(self, token: int) -> None:
        """Advance the grammar past ``token``."""
        self._taken.append(token)
        self.judge.accept(token)

    def _break_loop(self, logits: Any, token: int, closing: int) -> int:
        """The closing token when the grammar allows it, else the best allowed token but
        ``token`` (``token`` itself when nothing else is allowed)."""
        import numpy as np  # lazy: start-up time

        if closing != token and self.judge.allows(closing, float(logits[closing])):
            return closing
        others = np.array(logits, dtype=np.float32, copy=True)
        others[token] = -np.inf
        picked = self.judge.best_allowed(others)
        return picked if np.isfinite(others[picked]) else token

    def close(self) -> None:
        self.judge.close()


class GrammarProcessor:
    """:class:`GreedyGrammar` as a llama-cpp-python logits processor, for a greedy completion
    run without the library's own grammar stage.

    Called before each token is sampled with the tokens so far (the prompt, then each token
    the loop took), it first advances the grammar past the tokens it has not seen, then
    leaves the logits as they are when the greedy pick is allowed, or keeps only the allowed
    pick's logit when it is not.
    """

    def __init__(self, grammar: GreedyGrammar) -> None:
        self.grammar = grammar
        self._seen: int | None = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import numpy as np  # lazy: start-up time

        if self._seen is not None:
            for token in input_ids[self._seen :]:
                self.grammar.accept(int(token))
        self._seen = len(input_ids)
        token = self.grammar.pick(scores)
        if token == int(scores.argmax()):
            return scores
        kept = np.full_like(scores, -np.inf)
        kept[token] = scores[token]
        return kept
