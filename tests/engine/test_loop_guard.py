"""The loop guard of a judge's reply (engine/greedy_grammar.py): which tails it calls a loop,
and, on the embedded model, a judge reply that looped to its bound before the guard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skilleval.engine.base import Message, Request
from skilleval.engine.greedy_grammar import (
    LOOP_PERIOD,
    LOOP_REPEATS,
    continues_loop,
    guards_loops,
)

DATA = Path(__file__).parents[1] / "data" / "judge-loop-request.json"


@pytest.mark.parametrize("period", range(1, LOOP_PERIOD + 1))
def test_a_cycle_is_a_loop_at_its_last_repeat_and_not_before(period: int) -> None:
    cycle = [10 + i for i in range(period)]
    tokens = [1, 2, 3] + cycle * LOOP_REPEATS
    *before, last = tokens
    assert continues_loop(before, last)
    *shorter, last = tokens[:-1]
    assert not continues_loop(shorter, last)


def test_a_longer_cycle_or_a_break_in_the_cycle_is_no_loop() -> None:
    cycle = list(range(LOOP_PERIOD + 1))
    *before, last = cycle * LOOP_REPEATS
    assert not continues_loop(before, last)
    almost = [7, 8] * LOOP_REPEATS
    almost[3] = 9
    *before, last = almost
    assert not continues_loop(before, last)
    assert not continues_loop([], 5)


def _request(purpose: str) -> Request:
    raw = json.loads(DATA.read_text(encoding="utf-8"))
    return Request(
        messages=tuple(Message(m["role"], m["content"]) for m in raw["messages"]),
        max_tokens=raw["max_tokens"],
        temperature=0.0,
        seed=raw["seed"],
        json_schema=raw["json_schema"],
        purpose=purpose,
    )


def test_only_a_judge_s_schema_held_reply_is_guarded() -> None:
    judge = _request("judge")
    assert guards_loops(judge)
    assert not guards_loops(_request("generate"))
    assert not guards_loops(Request(messages=judge.messages, purpose="judge"))


@pytest.mark.model
def test_a_judge_reply_that_looped_to_its_bound_ends_early_and_alike_on_both_paths(
    tmp_path: Path,
) -> None:
    # A real judge call from the benchmark: the embedded model wrote
    # {"reason": "1.1.1.1.… to the reason's 240-character bound, 264 tokens.
    from skilleval.engine.llama import LlamaConfig, LlamaProvider

    replies = []
    for parallel in (1, 2):
        provider = LlamaProvider(LlamaConfig(parallel=parallel), tmp_path / str(parallel))
        try:
            replies.append(provider.complete(_request("judge")))
            if parallel == 1:
                unguarded = provider.complete(_request("generate"))
        finally:
            provider.close()
    one, batched = replies
    assert one.text == batched.text
    assert one.completion_tokens == batched.completion_tokens < 64
    reply = json.loads(one.text)
    assert reply["reason"].startswith("1.1.1.1")
    assert {"score", "pass"} <= reply.keys()
    # The same request, not a judge's, is left to loop: the guard is what ended it.
    assert unguarded.completion_tokens > 200
    assert unguarded.text.startswith(one.text[: one.text.index('"', 13)])
