"""``perplexity`` and ``perplexity-score``: how sure the model was of its own reply.

Both read the reply's token log-probabilities (:attr:`~skilleval.api.Check.logprobs`),
which the in-process model records for a test that has one of these checks (one request at
a time, see ``engine/llama_logprobs.py``) and the scripted provider gives from its
``logprobs:``. With the mean log-probability L over the reply's tokens:

* ``perplexity`` is exp(−L); it passes when it is at most ``threshold``, or always when no
  threshold is given, and scores 1 or 0, as in promptfoo;
* ``perplexity-score`` is 1 / (1 + exp(−L)), between 0 and 1; it passes when it reaches
  ``threshold``, or always without one, and is its own score.

An OpenAI-compatible server is asked for them (``logprobs: true``) and they are read from
its reply. A provider that gives none (echo, a server that ignores or refuses the request, a
cached reply from before they were recorded) makes these checks an ``error`` saying which
case it is, as promptfoo errs.
"""

from __future__ import annotations

import math

from skilleval.api import Check, Verdict, assertion

NO_LOGPROBS = (
    "{name} needs the reply's token log-probabilities, and this provider gave none (the"
    " in-process GGUF model records them, and an OpenAI-compatible server is asked for them;"
    " a reply cached before they were recorded has none: run with --no-cache)"
)
NONE_RETURNED = (
    "{name} needs the reply's token log-probabilities: they were asked for (`logprobs: true`),"
    " and the provider's reply held none (a server that does not give them, or refused the"
    " request for them)"
)


def _mean(check: Check, name: str) -> float | Verdict:
    values = check.logprobs
    if not values:
        why = NO_LOGPROBS if values is None else NONE_RETURNED
        return Verdict.errored(why.format(name=name))
    return sum(values) / len(values)


@assertion("perplexity", value_required=False)
def perplexity(check: Check) -> Verdict:
    """exp(−mean token log-probability) is at most ``threshold`` (always passes without one)."""
    mean = _mean(check, "perplexity")
    if isinstance(mean, Verdict):
        return mean
    value = math.exp(-mean)
    if check.threshold is None:
        # Without a threshold promptfoo passes it, with `not-` too (the runner flips this).
        held = not check.negated
        return Verdict.of(held, f"perplexity {value:.2f} (no threshold)", score=float(held))
    passed = value <= check.threshold
    word = "at most" if passed else "greater than"
    return Verdict.of(
        passed,
        f"perplexity {value:.2f} is {word} threshold {check.threshold:g}",
        score=float(passed),
    )


@assertion("perplexity-score", value_required=False)
def perplexity_score(check: Check) -> Verdict:
    """1 / (1 + exp(−mean token log-probability)) reaches ``threshold`` (always passes without
    one); it is the score."""
    mean = _mean(check, "perplexity-score")
    if isinstance(mean, Verdict):
        return mean
    value = 1.0 / (1.0 + math.exp(-mean))
    if check.threshold is None:
        # Without a threshold promptfoo passes it, with `not-` too (the runner flips this).
        return Verdict.of(
            not check.negated, f"perplexity score {value:.2f} (no threshold)", score=value
        )
    passed = value >= check.threshold
    word = "reaches" if passed else "is below"
    return Verdict.of(
        passed, f"perplexity score {value:.2f} {word} threshold {check.threshold:g}", score=value
    )
