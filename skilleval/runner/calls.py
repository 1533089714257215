"""What the model calls cost: one record's stats, and the run's ``calls`` block."""

from __future__ import annotations

from collections.abc import Sequence

from skilleval.api import Judge
from skilleval.engine.base import Completion, Provider
from skilleval.results.codec import decode
from skilleval.results.model import Calls
from skilleval.results.records import CallStats, Record


def record_stats(
    completion: Completion, *, steps: int | None = None, tool_calls: int | None = None
) -> CallStats:
    """The cost of the call (or agent run) that produced one record."""
    base: CallStats = decode(CallStats, completion.to_json())
    if steps is None and tool_calls is None:
        return base
    return CallStats(
        finish_reason=base.finish_reason,
        prompt_tokens=base.prompt_tokens,
        completion_tokens=base.completion_tokens,
        latency_ms=base.latency_ms,
        tokens_per_s=base.tokens_per_s,
        cached=base.cached,
        tokens_evaluated=base.tokens_evaluated,
        steps=steps,
        tool_calls=tool_calls,
        replaced_chars=base.replaced_chars,
    )


def _count(source: object, name: str, default: int = 0) -> int:
    return int(getattr(source, name, default))


def calls(
    provider: Provider, records: Sequence[Record], timed: bool, judge: Judge | None = None
) -> Calls:
    """Calls made and tokens spent, by the model under test and by the judge.

    Args:
        provider: The model under test; its counters include routing calls.
        records: The run's records (their stats, where the provider keeps no counters).
        timed: Whether the provider's timing means anything (a real model, not echo).
        judge: The grader, whose provider keeps its own counters.
    """
    gen = [r.stats for r in records if r.stats is not None]
    fresh = [s for s in gen if not s.cached]
    busy = getattr(provider, "engine_busy", None)
    if callable(busy):
        tokens, seconds = busy()
    else:
        # A bare provider keeps no clock: its calls' latencies, which only a provider
        # answering one call at a time makes equal to its busy time.
        tokens = sum(s.completion_tokens for s in fresh)
        seconds = sum(s.latency_ms for s in fresh) / 1000.0
    judged = getattr(judge, "provider", None)
    return Calls(
        judge_calls=_count(judged, "calls"),
        judge_cache_hits=_count(judged, "hits"),
        judge_prompt_tokens=_count(judged, "prompt_tokens"),
        judge_completion_tokens=_count(judged, "completion_tokens"),
        judge_tokens_evaluated=_count(judged, "tokens_evaluated"),
        model_calls=_count(provider, "calls", len(fresh)),
        cache_hits=_count(provider, "hits", len(gen) - len(fresh)),
        prompt_tokens=sum(s.prompt_tokens for s in gen),
        completion_tokens=sum(s.completion_tokens for s in gen),
        tokens_evaluated=sum(s.tokens_evaluated for s in fresh),
        generation_tokens_per_s=round(tokens / seconds, 2) if seconds > 0 and timed else None,
        busy_s=round(seconds, 3) if seconds > 0 and timed else None,
    )
