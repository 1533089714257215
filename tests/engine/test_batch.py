"""Batched decoding's logic (engine/batch.py) over a fake llama.cpp: slots, the shared
prefix, per-request budgets and stop strings. The real model is in test_llama.py."""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from pathlib import Path

import pytest

from skilleval.engine.batch import (
    STORE_GAIN,
    BatchDecoder,
    BatchJob,
    BatchResult,
    ListFeed,
    Token,
    common_prefix,
    prefill_chunks,
)
from skilleval.engine.prefix_store import STATE_MAGIC, PrefixStore

EOG = 0


class FakeBackend:
    """A model that answers from a script: the reply to a prompt is fixed token by token.

    It keeps each sequence's cells and checks that every token lands at the next position,
    so a wrong position, a missing copy or a stale cell fails the test.
    """

    def __init__(self, script: dict[tuple[int, ...], Sequence[int]], fail_after: int = -1) -> None:
        self.script = script
        self.cells: dict[int, list[int]] = {}
        self.rows: list[tuple[int, ...]] = []
        self.batches: list[list[Token]] = []
        self.fail_after = fail_after
        self.refuse_restore = False
        self.restored = 0

    def decode(self, items: Sequence[Token]) -> None:
        if self.fail_after == len(self.batches):
            self.batches.append(list(items))
            raise RuntimeError("llama_decode returned 1")
        self.batches.append(list(items))
        seqs = [seq for _, _, seq, _ in items]
        self.rows = []
        for token, pos, seq, _ in items:
            cells = self.cells.setdefault(seq, [])
            assert pos == len(cells), f"seq {seq}: token at {pos}, expected {len(cells)}"
            cells.append(token)
            self.rows.append(tuple(cells))
        assert len(seqs) == len(items)

    def clear(self, seq: int, start: int = 0) -> None:
        del self.cells.setdefault(seq, [])[start:]

    def copy(self, src: int, dst: int) -> None:
        self.cells[dst] = list(self.cells.get(src, []))

    def is_eog(self, token: int) -> bool:
        return token == EOG

    def logprobs(self, index: int) -> dict[int, float]:
        # A made-up but history-dependent distribution: token t after a history h scores
        # -(t + len(h)) / 10, so a score shows exactly which positions were decoded.
        history = self.rows[index]
        return {t: -(t + len(history)) / 10 for t in range(100)}

    def detokenize(self, tokens: Sequence[int], prev: Sequence[int]) -> bytes:
        return b"".join(PIECES.get(t, bytes([96 + t % 26])) for t in tokens)

    def state(self, seq: int) -> bytes:
        # Laid out as llama.cpp lays out one sequence's state (the store checks the cell
        # count), with the cells as JSON after the header.
        cells = self.cells.get(seq, [])
        return struct.pack("<IiII", STATE_MAGIC, seq, 1, len(cells)) + json.dumps(cells).encode()

    def restore(self, seq: int, data: bytes) -> bool:
        if self.refuse_restore:
            return False
        assert not self.cells.get(seq), "a state is restored into an empty sequence only"
        self.cells[seq] = json.loads(data[16:])
        self.restored += 1
        return True

    def next_token(self, history: tuple[int, ...]) -> int:
        for prompt, reply in self.script.items():
            if history[: len(prompt)] == prompt:
                done = len(history) - len(prompt)
                return reply[done] if done < len(reply) else EOG
        raise AssertionError(f"no script for {history}")


PIECES = {50: b"\xe2", 51: b"\x82", 52: b"\xac", 60: b"STOP"}


class FakeSampler:
    def __init__(self, backend: FakeBackend, log: list[str]) -> None:
        self.backend = backend
        self.log = log
        self.log.append("open")

    def sample(self, index: int) -> int:
        return self.backend.next_token(self.backend.rows[index])

    def close(self) -> None:
        self.log.append("close")


SYSTEM = (1, 2, 3, 4, 5, 6)
PROMPTS = [(*SYSTEM, 10 + i, 11 + i, 12) for i in range(5)]
REPLIES = [[3, 4, 5], [7], [8, 9, 10, 11, 12, 13], [14, 15], [16, 17, 18]]


def jobs_for(
    backend: FakeBackend, max_tokens: int = 16, stop: tuple[bytes, ...] = ()
) -> tuple[list[BatchJob], list[str]]:
    log: list[str] = []
    jobs = [
        BatchJob(prompt, max_tokens, lambda: FakeSampler(backend, log), stop) for prompt in PROMPTS
    ]
    return jobs, log


def decode(width: int, order: Sequence[int] = range(5)) -> list[BatchResult]:
    backend = FakeBackend(dict(zip(PROMPTS, REPLIES, strict=True)))
    jobs, _ = jobs_for(backend)
    results = BatchDecoder(backend, width, 64, 4).run([jobs[i] for i in order])
    return [results[list(order).index(i)] for i in range(5)]


@pytest.mark.parametrize("width", [1, 2, 3, 8])
def test_every_request_gets_its_own_reply_whatever_the_width(width: int) -> None:
    results = decode(width)
    for result, reply in zip(results, REPLIES, strict=True):
        assert result.error is None
        assert result.finish_reason == "stop"
        assert result.completion_tokens == len(reply)
        assert result.text == FakeBackend({}).detokenize(reply, ())


def test_results_do_not_depend_on_order_or_width() -> None:
    def key(rs: list[BatchResult]) -> list[tuple[bytes, str, int]]:
        return [(r.text, r.finish_reason, r.completion_tokens) for r in rs]

    assert key(decode(3)) == key(decode(1)) == key(decode(2, [4, 2, 0, 3, 1]))


def test_each_step_decodes_one_token_per_live_sequence_and_never_more_than_width() -> None:
    backend = FakeBackend(dict(zip(PROMPTS, REPLIES, strict=True)))
    jobs, log = jobs_for(backend)
    BatchDecoder(backend, 2, 64, 4).run(jobs)
    steps = [b for b in backend.batches if all(logits for *_, logits in b)]
    assert steps
    # A batch of one token is only ever a decode step, never part of a prompt.
    assert all(b[0][1] >= len(PROMPTS[0]) for b in backend.batches if len(b) == 1)
    for step in steps:
        seqs = [seq for _, _, seq, _ in step]
        assert len(seqs) == len(set(seqs)) <= 2
    # Every sampler opened is closed.
    assert log.count("open") == log.count("close") == len(jobs)


def test_the_shared_prefix_is_evaluated_once_and_kept_for_the_next_call() -> None:
    backend = FakeBackend(dict(zip(PROMPTS, REPLIES, strict=True)))
    jobs, _ = jobs_for(backend)
    decoder = BatchDecoder(backend, 2, 64, 4)
    first = decoder.run(jobs)

    def system_tokens(batches: list[list[Token]]) -> int:
        return sum(1 for b in batches for _, pos, _, _ in b if pos < len(SYSTEM))

    # The system prompt once, in the first request's slot, inside the decode steps; the
    # prefix sequence takes a copy of it from there and evaluates nothing itself.
    assert system_tokens(backend.batches) == len(SYSTEM)
    assert not any(seq == decoder.prefix_seq for b in backend.batches for _, _, seq, _ in b)
    # Each token is counted once, with the request that first needed it.
    assert [r.evaluated for r in first] == [len(SYSTEM) + 3, 3, 3, 3, 3]
    assert sum(r.evaluated for r in first) == sum(len(b) for b in backend.batches) - sum(
        r.completion_tokens - 1 for r in first
    ) - sum(1 for r in first if r.finish_reason == "stop")
    before = len(backend.batches)
    decoder.run(jobs[:2])
    assert system_tokens(backend.batches[before:]) == 0


def test_no_prompt_batch_is_a_single_token() -> None:
    assert prefill_chunks(0, 9, 4) == [(0, 4), (4, 7), (7, 9)]
    assert prefill_chunks(3, 5, 512) == [(3, 5)]
    assert all(b - a >= 2 for a, b in prefill_chunks(0, 1025, 512))


def test_common_prefix_leaves_each_prompt_two_tokens() -> None:
    assert common_prefix([(1, 2, 3, 4), (1, 2, 3, 5)]) == 2
    assert common_prefix([(1, 2, 3, 4, 5, 6), (1, 2, 3, 7, 8, 9)]) == 3
    assert common_prefix([(1, 2, 3)]) == 1
    assert common_prefix([(9,), (9,)]) == 0
    assert common_prefix([]) == 0


def test_max_tokens_is_per_request() -> None:
    backend = FakeBackend(dict(zip(PROMPTS, REPLIES, strict=True)))
    log: list[str] = []
    budgets = [1, 16, 3, 1, 2]
    jobs = [
        BatchJob(p, n, lambda: FakeSampler(backend, log))
        for p, n in zip(PROMPTS, budgets, strict=True)
    ]
    results = BatchDecoder(backend, 3, 64, 4).run(jobs)
    got = [(r.finish_reason, r.completion_tokens) for r in results]
    assert got == [("length", 1), ("stop", 1), ("length", 3), ("length", 1), ("length", 2)]


def test_a_stop_string_ends_the_reply_before_it() -> None:
    prompt = (*SYSTEM, 30, 31)
    backend = FakeBackend({prompt: [3, 60, 4, 5]})
    log: list[str] = []
    job = BatchJob(prompt, 16, lambda: FakeSampler(backend, log), (b"STOP",))
    (result,) = BatchDecoder(backend, 2, 64, 4).run([job])
    assert (result.text, result.finish_reason, result.completion_tokens) == (b"c", "stop", 2)


def test_a_split_character_holds_the_budget_as_llama_cpp_python_does() -> None:
    # The euro sign arrives in three tokens after "cd"; with a budget of three tokens the
    # length check waits for its last byte.
    prompt = (*SYSTEM, 30, 31)
    backend = FakeBackend({prompt: [3, 4, 50, 51, 52, 5]})
    log: list[str] = []
    job = BatchJob(prompt, 3, lambda: FakeSampler(backend, log))
    (result,) = BatchDecoder(backend, 2, 64, 4).run([job])
    assert result.text == "cd€".encode()
    assert (result.finish_reason, result.completion_tokens) == ("length", 5)


def test_a_prompt_too_long_fails_alone() -> None:
    long_prompt = (*SYSTEM, *range(20, 80))
    backend = FakeBackend({PROMPTS[0]: REPLIES[0], long_prompt: [3]})
    log: list[str] = []
    jobs = [BatchJob(p, 8, lambda: FakeSampler(backend, log)) for p in (long_prompt, PROMPTS[0])]
    bad, good = BatchDecoder(backend, 2, 32, 4).run(jobs)
    assert bad.error is not None
    assert "raise model.n_ctx" in bad.error
    assert good.error is None
    assert good.completion_tokens == 3


def test_a_llama_cpp_failure_fails_what_is_unfinished_and_the_next_call_starts_clean() -> None:
    backend = FakeBackend(dict(zip(PROMPTS, REPLIES, strict=True)), fail_after=4)
    jobs, _ = jobs_for(backend)
    decoder = BatchDecoder(backend, 2, 64, 4)
    results = decoder.run(jobs)
    assert all(r.error == "llama.cpp failed: llama_decode returned 1" for r in results[2:])
    backend.fail_after = -1
    again = decoder.run(jobs)
    assert [r.completion_tokens for r in again] == [len(r) for r in REPLIES]


def expected_score(prompt: tuple[int, ...], option: tuple[int, ...]) -> float:
    # The first token follows the prompt; each later one follows the tokens before it.
    return sum(-(t + len(prompt) + k) / 10 for k, t in enumerate(option))


def test_choices_are_scored_as_one_at_a_time_would_each_start_of_an_option_once() -> None:
    backend = FakeBackend({})
    options = ((3, 4, EOG), (5, EOG), (3, 7, 8, EOG), (9, EOG))
    jobs = [BatchJob.choice(PROMPTS[0], options), BatchJob.choice(PROMPTS[1], options[:2])]
    decoder = BatchDecoder(backend, 3, 64, 4)
    first, second = decoder.run(jobs)
    assert first.scores == pytest.approx([expected_score(PROMPTS[0], o) for o in options])
    assert second.scores == pytest.approx([expected_score(PROMPTS[1], o) for o in options[:2]])
    assert (first.evaluated, second.evaluated) == (len(SYSTEM) + 3, 3)
    # After the prompt, one token a step in the choice's own slot: (3), (3, 4), (3, 7),
    # (3, 7, 8), (5), (9) for the first, (3), (3, 4), (5) for the second; the shared start
    # (3) is decoded once.
    option_rows = [
        (seq, pos) for b in backend.batches for _, pos, seq, _ in b if pos >= len(PROMPTS[0])
    ]
    assert len(option_rows) == 6 + 3
    assert decoder.generated == 0
    # Each slot is left holding its bare prompt, to be copied by the next request.
    assert [tuple(backend.cells[slot]) for slot in (0, 1)] == [PROMPTS[0], PROMPTS[1]]


def test_choices_decode_beside_generations_in_the_same_steps() -> None:
    backend = FakeBackend({PROMPTS[2]: REPLIES[2]})
    log: list[str] = []
    generation = BatchJob(PROMPTS[2], 16, lambda: FakeSampler(backend, log))
    choice = BatchJob.choice(PROMPTS[3], ((3, 4, EOG), (5, 6, EOG)))
    results = BatchDecoder(backend, 2, 64, 4).run([generation, choice])
    assert results[0].text == b"".join(bytes([96 + t % 26]) for t in REPLIES[2])
    assert results[1].scores == pytest.approx(
        [expected_score(PROMPTS[3], o) for o in ((3, 4, EOG), (5, 6, EOG))]
    )
    # A batch carried both a generation's token and an option's.
    assert any(len({seq for _, _, seq, _ in b}) == 2 for b in backend.batches)


def test_a_choice_at_width_one_is_scored_in_its_slot() -> None:
    backend = FakeBackend({})
    options = ((3, EOG), (4, 5, EOG))
    (result,) = BatchDecoder(backend, 1, 64, 4).run([BatchJob.choice(PROMPTS[0], options)])
    assert result.scores == pytest.approx([expected_score(PROMPTS[0], o) for o in options])


def test_a_choice_whose_options_do_not_fit_the_context_gets_an_error() -> None:
    prompt = (*SYSTEM, *range(20, 30))
    (result,) = BatchDecoder(FakeBackend({}), 2, 18, 4).run(
        [BatchJob.choice(prompt, ((3, EOG), (4, 5, 6, EOG)))]
    )
    assert result.error is not None
    assert "raise model.n_ctx" in result.error


def test_prompts_too_long_for_the_context_do_not_stop_the_others() -> None:
    long_prompt = (*SYSTEM, *range(20, 80))
    backend = FakeBackend({PROMPTS[0]: REPLIES[0]})
    log: list[str] = []
    jobs = [BatchJob(long_prompt, 8, lambda: FakeSampler(backend, log))] * 2
    results = BatchDecoder(backend, 2, 32, 4).run(jobs)
    assert all(r.error is not None and "raise model.n_ctx" in r.error for r in results)
    # No cell was ever written for them, the shared prefix included.
    assert backend.batches == []


def test_a_slot_that_holds_a_longer_start_of_the_prompt_is_copied_instead_of_evaluating() -> None:
    # Two kinds of request alternate (generations under a skill, judge calls under a rubric):
    # the prefix sequence follows each request's neighbour, so it keeps losing the other
    # kind's prefix. A slot still holds the last prompt of each kind.
    skill = tuple(range(20, 40))
    rubric = tuple(range(60, 80))
    prompts = [(*(skill if i % 2 == 0 else rubric), 90 + i, 91, 92) for i in range(8)]
    script = {p: [5 + i] for i, p in enumerate(prompts)}
    backend = FakeBackend(script)
    log: list[str] = []
    jobs = [BatchJob(p, 4, lambda: FakeSampler(backend, log)) for p in prompts]
    results = BatchDecoder(backend, 2, 64, 64).run(jobs)
    assert [r.text for r in results] == [bytes([96 + (5 + i) % 26]) for i in range(8)]
    # Each prefix is evaluated once; every later prompt evaluates only its own three tokens
    # (the last one too: its slot evaluates its whole tail and the prefix sequence takes a
    # copy, so no token is evaluated twice to keep a batch from being a single token).
    assert [r.evaluated for r in results[2:]] == [3] * 6
    assert sum(r.evaluated for r in results) == len(skill) + len(rubric) + 3 * 8


def test_slots_that_scored_a_choice_are_reused_with_their_prompt_only() -> None:
    backend = FakeBackend(dict(zip(PROMPTS, REPLIES, strict=True)))
    jobs, _ = jobs_for(backend)
    decoder = BatchDecoder(backend, 2, 64, 4)
    decoder.run(jobs[:2])
    decoder.run([BatchJob.choice((*SYSTEM, 77, 78), ((1, EOG), (2, 3, EOG)))])

    # FakeBackend checks every cell's position and token: a stale option cell copied here
    # fails.
    def key(rs: list[BatchResult]) -> list[tuple[bytes, str, int]]:
        return [(r.text, r.finish_reason, r.completion_tokens) for r in rs]

    assert key(decoder.run(jobs)) == key(decode(2))


# -- prefixes kept from run to run -------------------------------------------------------------

LONG_SYSTEM = tuple(range(100, 140))
LONG_PROMPTS = [(*LONG_SYSTEM, 10 + i, 11 + i, 12) for i in range(5)]


class ArrivingFeed(ListFeed):
    """Requests that arrive one at a time: only the next one is waiting when a slot frees
    (a queue whose callers ask again only once they have their reply)."""

    def waiting(self) -> Sequence[tuple[int, ...]]:
        return list(super().waiting())[:1]


def stored_run(
    store: PrefixStore,
    prompts: Sequence[tuple[int, ...]] = LONG_PROMPTS,
    refuse: bool = False,
    arriving: bool = False,
) -> tuple[list[BatchResult], FakeBackend]:
    backend = FakeBackend(dict(zip(prompts, REPLIES, strict=True)))
    backend.refuse_restore = refuse
    log: list[str] = []
    jobs = [BatchJob(p, 16, lambda: FakeSampler(backend, log)) for p in prompts]
    feed = (ArrivingFeed if arriving else ListFeed)(jobs)
    BatchDecoder(backend, 2, 128, 16, store).drain(feed)
    return feed.results, backend


def replies_and_cost(results: Sequence[BatchResult]) -> tuple[list[bytes], int]:
    return [r.text for r in results], sum(r.evaluated for r in results)


def test_a_new_decoder_restores_the_prefix_an_earlier_one_stored(tmp_path: Path) -> None:
    first, _ = stored_run(PrefixStore(tmp_path))
    store = PrefixStore(tmp_path)  # a later run
    second, backend = stored_run(store)
    assert backend.restored == 1
    assert replies_and_cost(second)[0] == replies_and_cost(first)[0]
    # The shared system prompt is not evaluated again.
    assert replies_and_cost(second)[1] <= replies_and_cost(first)[1] - len(LONG_SYSTEM) + 2


def test_an_edited_prompt_restores_the_stored_prefix_up_to_the_edit(tmp_path: Path) -> None:
    stored_run(PrefixStore(tmp_path))
    edited = [
        (*LONG_SYSTEM[:30], 99, *LONG_SYSTEM[31:], *p[len(LONG_SYSTEM) :]) for p in LONG_PROMPTS
    ]
    cold, _ = stored_run(PrefixStore(tmp_path / "elsewhere"), edited)
    warm, backend = stored_run(PrefixStore(tmp_path), edited)
    assert backend.restored == 1
    assert replies_and_cost(warm)[0] == replies_and_cost(cold)[0]
    assert replies_and_cost(warm)[1] == replies_and_cost(cold)[1] - 30


def test_a_damaged_or_refused_entry_is_a_miss_and_is_removed(tmp_path: Path) -> None:
    cold, _ = stored_run(PrefixStore(tmp_path))
    [kv] = tmp_path.glob("*.kv")
    kv.write_bytes(kv.read_bytes().replace(b"1", b"2", 1))
    damaged, backend = stored_run(PrefixStore(tmp_path))
    assert backend.restored == 0
    assert replies_and_cost(damaged) == replies_and_cost(cold)
    # The run stored the prefix afresh; a backend that refuses it evaluates it instead.
    refused, backend = stored_run(PrefixStore(tmp_path), refuse=True)
    assert backend.restored == 0
    assert replies_and_cost(refused) == replies_and_cost(cold)


def test_short_prefixes_are_not_stored(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path)
    backend = FakeBackend(dict(zip(PROMPTS, REPLIES, strict=True)))
    jobs, _ = jobs_for(backend)
    BatchDecoder(backend, 2, 64, 4, store).run(jobs)
    assert store.saved == 0
    assert len(SYSTEM) < STORE_GAIN


def test_a_request_between_others_of_another_kind_restores_into_its_own_slot(
    tmp_path: Path,
) -> None:
    # A judge call that arrives between generations shares nothing with what is waiting,
    # so the prefix sequence holds nothing of it; the stored prefix goes straight into its
    # slot.
    stored_run(PrefixStore(tmp_path))
    other = [tuple(range(200 + 10 * i, 205 + 10 * i)) for i in range(3)]
    mixed = [other[0], LONG_PROMPTS[0], other[1], LONG_PROMPTS[1], other[2]]
    cold, _ = stored_run(PrefixStore(tmp_path / "elsewhere"), mixed, arriving=True)
    warm, backend = stored_run(PrefixStore(tmp_path), mixed, arriving=True)
    # Each of the two, since the first's slot went to another request before the second came.
    assert backend.restored == 2
    assert replies_and_cost(warm)[0] == replies_and_cost(cold)[0]
    # Nothing of the stored system prompt is evaluated again: only each prompt's own tail.
    own = sum(len(p) for p in other) + 2 * (len(LONG_PROMPTS[0]) - len(LONG_SYSTEM))
    assert replies_and_cost(warm)[1] == own < replies_and_cost(cold)[1]


def test_the_prefix_goes_to_a_waiting_request_of_its_kind_past_one_of_another_kind(
    tmp_path: Path,
) -> None:
    # Generations under a skill and judge calls under a rubric, queued alternately: each
    # request's neighbour is of the other kind, but one of its own kind waits behind it.
    skill = tuple(range(20, 60))
    rubric = tuple(range(60, 100))
    prompts = [(*(skill if i % 2 == 0 else rubric), 120 + i, 121, 122) for i in range(8)]
    replies = [[5 + i] * (1 + (3 * i) % 5) for i in range(8)]  # slots free out of order
    backend = FakeBackend(dict(zip(prompts, replies, strict=True)))
    log: list[str] = []
    jobs = [BatchJob(p, 8, lambda: FakeSampler(backend, log)) for p in prompts]
    store = PrefixStore(tmp_path)
    results = BatchDecoder(backend, 2, 128, 64, store).run(jobs)
    assert [r.text for r in results] == [bytes(96 + t for t in r) for r in replies]
    # Each shared start is evaluated once, copied into the prefix sequence, and so kept: when
    # neither the prefix sequence nor a slot holds it any more, it is loaded, not evaluated
    # again. Every later prompt evaluates its own three tokens.
    assert (store.saved, backend.restored) == (2, 1)
    assert [r.evaluated for r in results] == [len(skill) + 3, len(rubric) + 3] + [3] * 6
