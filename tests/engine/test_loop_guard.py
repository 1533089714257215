"""The loop guard of a judge's reply (engine/greedy_grammar.py): which tails it calls a loop;
a scripted model that loops to its bound, which the guard ends early alike on both decoding
paths; and, on the embedded model, the properties that hold whatever this CPU's model writes.

Whether the embedded model loops on a given request depends on the build and the CPU (greedy
bytes repeat on one machine, not across them), so the looping comes from a script here."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from skilleval.engine.base import Completion, Message, Request
from skilleval.engine.batch import BatchDecoder, BatchJob, BatchResult, Token
from skilleval.engine.greedy_grammar import (
    LOOP_GUARD,
    LOOP_PERIOD,
    LOOP_REPEATS,
    GrammarProcessor,
    GreedyGrammar,
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


# -- a scripted model that loops, on both decoding paths ---------------------------------------

EOS, OPEN, ONE, DOT, LETTER, CLOSE, TAIL = range(7)
PIECES = {
    EOS: b"",
    OPEN: b'{"reason": "',
    ONE: b"1",
    DOT: b".",
    LETTER: b"a",
    CLOSE: b'"',
    TAIL: b', "score": 3}',
}
BOUND = 40
"""The reason's length bound, in characters (one per text token)."""
PROMPT = (7, 8, 9, 10)


class ScriptedGrammar:
    """``{"reason": "TEXT", "score": 3}`` then the end, TEXT at most :data:`BOUND` characters:
    a :class:`~skilleval.engine.greedy_grammar.GrammarJudge` over :data:`PIECES`."""

    def __init__(self) -> None:
        self.state = "open"
        self.chars = 0
        self.closed = False

    def allowed(self) -> set[int]:
        if self.state == "open":
            return {OPEN}
        if self.state == "text":
            return {CLOSE} | ({ONE, DOT, LETTER} if self.chars < BOUND else set())
        return {TAIL} if self.state == "tail" else {EOS}

    def allows(self, token: int, logit: float) -> bool:
        return token in self.allowed()

    def best_allowed(self, logits: Any) -> int:
        return max(sorted(self.allowed()), key=lambda t: float(logits[t]))

    def accept(self, token: int) -> None:
        assert token in self.allowed(), f"{token} taken where the grammar refuses it"
        if token == OPEN:
            self.state = "text"
        elif token == CLOSE:
            self.state = "tail"
        elif token == TAIL:
            self.state = "end"
        else:
            self.chars += 1

    def close(self) -> None:
        self.closed = True


def looping_logits(reply: Sequence[int]) -> Any:
    """A model that, given its reply so far, would write ``1.1.1.…`` forever: the next loop
    token is far ahead, and the rest rank by id (the end first)."""
    logits = -np.arange(len(PIECES), dtype=np.float32)
    logits[DOT if reply and reply[-1] == ONE else ONE] = 10.0
    return logits


class ScriptedSampler:
    """The batched path's greedy sampler under a grammar, on the scripted model."""

    def __init__(self, closing: int | None) -> None:
        self.road = GreedyGrammar(ScriptedGrammar(), closing)

    def sample(self, index: int) -> int:
        token = self.road.pick(looping_logits(self.road.taken))
        self.road.accept(token)
        return token

    def close(self) -> None:
        self.road.close()


class ScriptedBackend:
    """Just enough of llama.cpp for the batch decoder: cells per sequence, and text."""

    def __init__(self) -> None:
        self.cells: dict[int, list[int]] = {}

    def decode(self, items: Sequence[Token]) -> None:
        for token, pos, seq, _ in items:
            cells = self.cells.setdefault(seq, [])
            assert pos == len(cells)
            cells.append(token)

    def clear(self, seq: int, start: int = 0) -> None:
        del self.cells.setdefault(seq, [])[start:]

    def copy(self, src: int, dst: int) -> None:
        self.cells[dst] = list(self.cells.get(src, []))

    def is_eog(self, token: int) -> bool:
        return token == EOS

    def logprobs(self, index: int) -> Sequence[float]:
        raise AssertionError("nothing is scored here")

    def detokenize(self, tokens: Sequence[int], prev: Sequence[int]) -> bytes:
        return b"".join(PIECES[t] for t in tokens)

    def state(self, seq: int) -> bytes:
        return b""

    def restore(self, seq: int, data: bytes) -> bool:
        return False


def batched(guarded: bool, unguarded: bool) -> list[BatchResult]:
    """Replies of the batched path, decoded side by side: one per flag, guard on or off."""
    jobs = [
        BatchJob(PROMPT, 4 * BOUND, lambda on=on: ScriptedSampler(CLOSE if on else None))
        for on in (guarded, unguarded)
    ]
    return BatchDecoder(ScriptedBackend(), 2, 4 * BOUND + 16, 8).run(jobs)


def one_at_a_time(guarded: bool) -> tuple[bytes, str, int]:
    """The one-at-a-time path: llama-cpp-python's completion loop as it calls a logits
    processor (the tokens so far, then the scores), then takes the greedy token."""
    road = GreedyGrammar(ScriptedGrammar(), CLOSE if guarded else None)
    processor = GrammarProcessor(road)
    ids = list(PROMPT)
    reply: list[int] = []
    finish = "length"
    while len(reply) < 4 * BOUND:
        scores = processor(np.array(ids, dtype=np.intc), looping_logits(reply))
        token = int(np.argmax(scores))
        if token == EOS:
            finish = "stop"
            break
        ids.append(token)
        reply.append(token)
    road.close()
    return b"".join(PIECES[t] for t in reply), finish, len(reply)


def as_key(result: BatchResult) -> tuple[bytes, str, int]:
    return result.text, result.finish_reason, result.completion_tokens


def test_unguarded_the_scripted_reply_loops_to_its_bound() -> None:
    (_, free) = batched(True, False)
    loop = ("1." * BOUND)[:BOUND]
    assert free.text == f'{{"reason": "{loop}", "score": 3}}'.encode()
    assert (free.finish_reason, free.completion_tokens) == ("stop", BOUND + 3)


def test_the_guard_ends_the_scripted_loop_at_its_last_repeat() -> None:
    guarded, free = batched(True, False)
    # The 2-token cycle "1." is allowed LOOP_REPEATS - 1 whole repeats and one more "1";
    # the token that would complete the last repeat is the closing quote instead.
    loop = ("1." * LOOP_REPEATS)[:-1]
    assert guarded.text == f'{{"reason": "{loop}", "score": 3}}'.encode()
    assert guarded.finish_reason == "stop"
    assert guarded.completion_tokens == len(loop) + 3 < free.completion_tokens
    assert json.loads(guarded.text)["reason"] == loop


@pytest.mark.parametrize("guarded", [True, False])
def test_both_decoding_paths_give_the_scripted_reply_alike(guarded: bool) -> None:
    side_by_side = batched(guarded, not guarded)
    assert as_key(side_by_side[0]) == one_at_a_time(guarded)
    assert as_key(side_by_side[1]) == one_at_a_time(not guarded)


def test_when_the_text_cannot_end_there_the_guard_takes_the_best_other_token() -> None:
    class LongText(ScriptedGrammar):
        def allowed(self) -> set[int]:
            allowed = super().allowed()
            return allowed - {CLOSE} if self.state == "text" and self.chars < BOUND else allowed

    road = GreedyGrammar(LongText(), CLOSE)
    while len(road.taken) <= 2 * LOOP_REPEATS:
        road.accept(road.pick(looping_logits(road.taken)))
    # The reply so far is OPEN and the cycle, one token short of its last repeat. DOT would
    # complete it and the quote may not end the text yet, so the best other allowed token
    # (ONE, by the scripted logits) is taken, and the cycle is broken.
    assert road.taken[1:-1] == [ONE, DOT] * (LOOP_REPEATS - 1) + [ONE]
    assert road.taken[-1] == ONE
    assert not continues_loop(road.taken[:-1], road.taken[-1])


def test_the_guard_is_in_a_judge_reply_s_cache_salt_only(tmp_path: Path) -> None:
    from skilleval.engine.llama import LlamaConfig, LlamaProvider

    provider = LlamaProvider(LlamaConfig(), tmp_path)
    guard = f"loop-guard={LOOP_GUARD}"
    assert guard in provider.cache_salt(_request("judge"))
    assert guard not in provider.cache_salt(_request("generate"))
    assert provider.cache_salt(_request("judge")).startswith(
        provider.cache_salt(_request("generate"))
    )


# -- the embedded model: what holds on any CPU ----------------------------------------------------


@pytest.mark.model
def test_a_scripted_loop_on_the_embedded_model_s_grammar_ends_early_alike_on_both_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The model's own logits are replaced, at every greedy pick under a grammar, by a
    # script that writes "1.1.1.…" wherever the judge's schema lets it and otherwise takes
    # the allowed token of lowest id that is not blank. So the tokens depend on the
    # tokenizer and the grammar only, and both real decoding paths run on them.
    from skilleval.engine.llama import LlamaConfig, LlamaProvider

    real_pick = GreedyGrammar.pick
    script: dict[str, Any] = {}

    def scripted_pick(road: GreedyGrammar, logits: Any) -> int:
        fake = -np.arange(len(logits), dtype=np.float32) * 1e-4
        fake[script["blank"]] = -1000.0
        taken = road.taken
        fake[script["dot"] if taken and taken[-1] == script["one"] else script["one"]] = 10.0
        return real_pick(road, fake)

    monkeypatch.setattr(GreedyGrammar, "pick", scripted_pick)
    replies: dict[int, tuple[Completion, Completion]] = {}
    for parallel in (1, 2):
        provider = LlamaProvider(LlamaConfig(parallel=parallel), tmp_path / str(parallel))
        try:
            if not script:
                llm = provider._load()
                (script["one"],) = llm.tokenize(b"1", add_bos=False)
                (script["dot"],) = llm.tokenize(b".", add_bos=False)
                script["blank"] = [
                    t for t in range(int(llm.n_vocab())) if not llm.detokenize([t]).strip()
                ]
            replies[parallel] = (
                provider.complete(_request("judge")),
                provider.complete(_request("generate")),
            )
        finally:
            provider.close()
    (one, one_free), (wide, wide_free) = replies[1], replies[2]
    assert key(one) == key(wide)
    assert key(one_free) == key(wide_free)
    # Unguarded, the reason loops until the reply runs out of tokens.
    budget = _request("generate").max_tokens
    assert (one_free.finish_reason, one_free.completion_tokens) == ("length", budget)
    assert '"reason":"1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1' in one_free.text.replace(" ", "")
    # Guarded, the token that would complete the cycle's last repeat closes the text.
    assert one.finish_reason == "stop"
    assert json.loads(one.text)["reason"] == ("1." * LOOP_REPEATS)[:-1]
    assert one.completion_tokens < 64


def key(answer: Completion) -> tuple[str, str, int]:
    return answer.text, answer.finish_reason, answer.completion_tokens


@pytest.mark.model
def test_on_the_embedded_model_a_judge_reply_is_alike_on_both_paths_and_never_longer_guarded(
    tmp_path: Path,
) -> None:
    # A real judge call from the benchmark. On the machine it came from, the embedded model
    # wrote {"reason": "1.1.1.1.… to the reason's bound, 264 tokens; elsewhere it may not
    # loop at all. What must hold either way is compared on this machine.
    from skilleval.engine.llama import LlamaConfig, LlamaProvider

    replies: dict[int, tuple[Completion, Completion]] = {}
    for parallel in (1, 2):
        provider = LlamaProvider(LlamaConfig(parallel=parallel), tmp_path / str(parallel))
        try:
            replies[parallel] = (
                provider.complete(_request("judge")),
                provider.complete(_request("generate")),
            )
        finally:
            provider.close()
    (one, one_free), (wide, wide_free) = replies[1], replies[2]
    assert key(one) == key(wide)
    assert key(one_free) == key(wide_free)
    # The guard only ever replaces a token that would complete a loop by the closing quote.
    assert one.completion_tokens <= one_free.completion_tokens
    reply = json.loads(one.text)
    assert list(reply) == ["reason", "score", "pass"]
    if one.text != one_free.text:
        # It fired: the replies agree up to the token the guard replaced, which was the
        # closing quote (the grammar allows it anywhere in a free-text field).
        shared = next(
            (i for i, (a, b) in enumerate(zip(one.text, one_free.text, strict=False)) if a != b),
            min(len(one.text), len(one_free.text)),
        )
        assert one.text[shared] == '"', (one.text, one_free.text)
