"""Budgets on the call that produced the output: latency, completion tokens and cost.

``latency`` and ``cost`` take their limit from ``value:`` or, as in promptfoo, from
``threshold:``.
"""

from __future__ import annotations

from typing import Any

from skilleval.api import Check, Verdict, assertion

_LIMIT: dict[str, Any] = {"type": "number", "minimum": 0}


def _ms(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def _limit(check: Check) -> float | None:
    if check.value is not None:
        return float(check.value)
    if check.threshold is not None:
        return float(check.threshold)
    return None


@assertion("latency", value=_LIMIT, uses_threshold=True)
def latency(check: Check) -> Verdict:
    """The model call took at most this many milliseconds (value or threshold).

    A cached output keeps the latency measured when it was first generated, and the reason
    says so.
    """
    limit = _limit(check)
    if limit is None:
        return Verdict.errored("latency needs a limit in milliseconds as value or threshold")
    took = check.stats.latency_ms
    note = ", recorded when the output was first generated (served from cache)"
    return Verdict.of(
        took <= limit,
        f"latency was {_ms(took)} ms (max {_ms(limit)} ms){note if check.stats.cached else ''}",
    )


@assertion("max-tokens", value={"type": "integer", "minimum": 0})
def max_tokens(check: Check) -> Verdict:
    """The reply used at most this many completion tokens."""
    used = check.stats.completion_tokens
    noun = "token" if used == 1 else "tokens"
    return Verdict.of(
        used <= check.value, f"reply used {used} completion {noun} (max {check.value})"
    )


@assertion("cost", value=_LIMIT, uses_threshold=True)
def cost(check: Check) -> Verdict:
    """The model call cost at most this many US dollars (value or threshold).

    Local models cost 0. A provider that does not report cost gives an error verdict.
    """
    limit = _limit(check)
    if limit is None:
        return Verdict.errored("cost needs a limit in US dollars as value or threshold")
    spent = check.cost
    if spent is None:
        return Verdict.errored("cost is not known for this provider")
    return Verdict.of(float(spent) <= limit, f"cost was ${float(spent):.6g} (max ${limit:g})")
