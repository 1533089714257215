"""Each generated token's log-probability, recorded while llama.cpp generates.

llama-cpp-python reports log-probabilities only for a model loaded with ``logits_all``,
which keeps the logits of every prompt position too. Instead, two logits processors watch
the library's sampling loop without changing a logit: the first (:meth:`TokenLogprobs.before`)
keeps the log-softmax of the model's raw logits at each step, and learns at the next step
which token was chosen (it is then the last token evaluated); the last
(:meth:`TokenLogprobs.after`) notes which token the constrained logits favour, which is the
choice when decoding is greedy. So the final token, never evaluated, is known too under
greedy decoding; under sampling a reply cut by ``max_tokens`` lacks its last value and gets
none at all.
"""

from __future__ import annotations

from typing import Any

from skilleval.engine.base import Request
from skilleval.engine.batch_llama import log_softmax


class TokenLogprobs:
    """Records, during one generation, the log-probability of each token chosen."""

    def __init__(self, *, greedy: bool) -> None:
        self.greedy = greedy
        self.values: list[float] = []
        self._pending: Any = None
        self._favoured: int | None = None

    def before(self, input_ids: Any, scores: Any) -> Any:
        """Resolve the previous step with the token just evaluated; keep this step's
        log-softmax. Returns ``scores`` unchanged."""
        if self._pending is not None:
            self.values.append(float(self._pending[int(input_ids[-1])]))
        import numpy as np  # lazy: start-up time

        self._pending = log_softmax(np.asarray(scores))
        return scores

    def after(self, input_ids: Any, scores: Any) -> Any:
        """Note the token the final logits favour (greedy's choice). Returns them unchanged."""
        import numpy as np  # lazy: start-up time

        self._favoured = int(np.argmax(scores))
        return scores

    def result(self, generated: int) -> tuple[float, ...] | None:
        """The values of the ``generated`` tokens the reply counts, or None when they are not
        all known (see the module docstring)."""
        values = list(self.values)
        last = self._favoured
        if (
            len(values) < generated
            and self._pending is not None
            and self.greedy
            and last is not None
        ):
            values.append(float(self._pending[last]))
        if len(values) < generated:
            return None
        return tuple(values[:generated])


def watch_logprobs(
    request: Request, processors: Any, *, greedy: bool
) -> tuple[TokenLogprobs | None, Any]:
    """A recorder and the logits processors that feed it around ``processors``, when the
    request asks for log-probabilities; else None and ``processors`` as they are."""
    if not request.logprobs:
        return None, processors
    from llama_cpp import LogitsProcessorList  # lazy: start-up time

    recorder = TokenLogprobs(greedy=greedy)
    return recorder, LogitsProcessorList([recorder.before, *(processors or []), recorder.after])
