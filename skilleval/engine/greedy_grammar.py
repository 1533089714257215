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
"""

from __future__ import annotations

import ctypes
from typing import Any

__all__ = ["GrammarProcessor", "GreedyGrammar"]


class GreedyGrammar:
    """One request's grammar state, for greedy decoding.

    Args:
        vocab: The model's ``llama_vocab`` pointer.
        grammar: A ``llama_cpp.LlamaGrammar`` (its GBNF text and root rule are used).
        n_vocab: The vocabulary's size.
    """

    def __init__(self, vocab: Any, grammar: Any, n_vocab: int) -> None:
        import llama_cpp  # lazy: start-up time

        self._lib = llama_cpp
        self.n_vocab = n_vocab
        self._sampler: Any = llama_cpp.llama_sampler_init_grammar(
            vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        self._one_data = (llama_cpp.llama_token_data * 1)()
        self._one = llama_cpp.llama_token_data_array(
            data=ctypes.cast(self._one_data, llama_cpp.llama_token_data_p), size=1
        )
        self._all: Any = None
        self.refused = 0
        """How many picks had to judge the whole vocabulary."""

    def pick(self, logits: Any) -> int:
        """The first highest-logit token the grammar allows next (``logits``: float32 array
        over the vocabulary, in token order). Does not advance the grammar: see
        :meth:`accept`."""
        token = int(logits.argmax())  # the first highest, as llama.cpp's greedy sampler picks
        if self._allows(token, float(logits[token])):
            return token
        self.refused += 1
        return self._best_allowed(logits)

    def accept(self, token: int) -> None:
        """Advance the grammar past ``token``."""
        self._lib.llama_sampler_accept(self._sampler, token)

    def close(self) -> None:
        if self._sampler is not None:
            self._lib.llama_sampler_free(self._sampler)
            self._sampler = None

    def _allows(self, token: int, logit: float) -> bool:
        entry: Any = self._one_data[0]
        entry.id, entry.logit, entry.p = token, logit, 0.0
        one: Any = self._one
        one.data = ctypes.cast(self._one_data, self._lib.llama_token_data_p)
        one.size = 1
        one.selected = -1
        one.sorted = False
        self._lib.llama_sampler_apply(self._sampler, ctypes.byref(one))
        return bool(one.size == 1 and one.data[0].logit != float("-inf"))

    def _best_allowed(self, logits: Any) -> int:
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
