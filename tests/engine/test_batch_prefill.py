"""Chunked prefill: a new request's prompt is evaluated inside the decode steps of the others."""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from pathlib import Path

from skilleval.engine.batch import BatchDecoder, BatchJob, ListFeed, Token
from skilleval.engine.prefix_store import STATE_MAGIC, PrefixStore


class RecordingBackend:
    """Records every batch and checks that each sequence's tokens land at the next position."""

    def __init__(self) -> None:
        self.batches: list[list[Token]] = []
        self.cells: dict[int, list[int]] = {}

    def decode(self, items: Sequence[Token]) -> None:
        self.batches.append(list(items))
        for token, pos, seq, _ in items:
            cells = self.cells.setdefault(seq, [])
            assert pos == len(cells), f"seq {seq}: token at {pos}, expected {len(cells)}"
            cells.append(token)

    def clear(self, seq: int, start: int = 0) -> None:
        del self.cells.setdefault(seq, [])[start:]

    def copy(self, src: int, dst: int) -> None:
        self.cells[dst] = list(self.cells.get(src, []))

    def is_eog(self, token: int) -> bool:
        return token == 0

    def logprobs(self, index: int) -> Sequence[float]:
        raise AssertionError("not scoring")

    def detokenize(self, tokens: Sequence[int], prev: Sequence[int]) -> bytes:
        return bytes(65 + t % 26 for t in tokens)

    def state(self, seq: int) -> bytes:
        raise AssertionError("no store")

    def restore(self, seq: int, data: bytes) -> bool:
        raise AssertionError("no store")


class CountingSampler:
    """Answers ``length`` tokens, then the end of the turn."""

    def __init__(self, length: int) -> None:
        self.left = length

    def sample(self, index: int) -> int:
        self.left -= 1
        return 0 if self.left < 0 else 7

    def close(self) -> None:
        pass


def job(prompt: tuple[int, ...], length: int) -> BatchJob:
    return BatchJob(prompt, 64, lambda: CountingSampler(length))


def run(jobs: list[BatchJob], n_batch: int) -> tuple[RecordingBackend, ListFeed]:
    backend = RecordingBackend()
    feed = ListFeed(jobs)
    BatchDecoder(backend, 2, 256, n_batch).drain(feed)
    return backend, feed


def test_a_long_prompt_is_filled_between_the_steps_of_a_reply_that_keeps_decoding() -> None:
    # A short request generates a long reply; the second slot's 40-token prompt is filled in
    # chunks of at most n_batch tokens, one chunk a step, and every step also decodes the
    # first request's next token: it never waits for the whole prompt.
    backend, feed = run([job((1, 2, 3), 30), job(tuple(range(100, 140)), 2)], n_batch=8)
    assert all(r.error is None for r in feed.results)
    assert feed.results[0].completion_tokens == 30
    kinds = ["chunk" if all(seq == 1 for _, _, seq, _ in b) else "step" for b in backend.batches]
    chunks = [i for i, kind in enumerate(kinds) if kind == "chunk"]
    assert len(chunks) >= 5
    assert all(kinds[i + 1] == "step" for i in chunks[:-1]), kinds
    assert max(len(b) for b in backend.batches) <= 8


def test_no_prompt_chunk_is_a_single_token() -> None:
    prompts = [tuple(range(10 * i + 100, 10 * i + 100 + n)) for i, n in enumerate((3, 9, 5, 12))]
    backend, feed = run([job(p, 3 + i) for i, p in enumerate(prompts)], n_batch=4)
    assert all(r.error is None for r in feed.results)
    for batch in backend.batches:
        for seq in {s for _, _, s, _ in batch}:
            # A sequence's entries in one batch are one generated token, or a prompt chunk.
            mine = [item for item in batch if item[2] == seq]
            assert len(mine) != 1 or mine[0][3], f"a one-token prompt chunk in {batch}"


def test_a_prompt_chunk_never_shares_a_batch_with_other_sequences() -> None:
    # llama.cpp splits a batch of several sequences into micro-batches of its own making, and
    # a prompt evaluated so gave other bits: a chunk has its batch to itself.
    prompts = [tuple(range(100 + 20 * i, 100 + 20 * i + n)) for i, n in enumerate((3, 4, 5, 9))]
    for n_batch in (3, 4, 5, 8, 64):
        backend, feed = run([job(p, 6) for p in prompts], n_batch=n_batch)
        assert all(r.error is None for r in feed.results)
        for batch in backend.batches:
            chunk = [item for item in batch if item[0] != 7]
            if chunk:
                assert len(chunk) == len(batch) >= 2, batch
                assert len({seq for _, _, seq, _ in batch}) == 1, batch


def test_every_prompt_token_is_evaluated_once_and_counted() -> None:
    prompts = [tuple(range(50, 50 + n)) for n in (6, 20)]
    backend, feed = run([job(p, 4) for p in prompts], n_batch=6)
    # The two prompts share 6 tokens at most two short of the first; what each evaluated is
    # what the decode batches carried for it, nothing twice.
    prompt_items = sum(1 for b in backend.batches for _, _, _, logits in b if not logits)
    assert sum(r.evaluated for r in feed.results) >= prompt_items
    assert [r.completion_tokens for r in feed.results] == [4, 4]


class DeferredCopyBackend(RecordingBackend):
    """Copies between sequences as llama.cpp copies between KV streams: which positions a
    sequence holds changes at once, their contents only at the next decode. A state read
    before then is what the sequence held before the copy."""

    def __init__(self) -> None:
        super().__init__()
        self.data: dict[int, list[int]] = {}
        self.queued: list[tuple[int, int]] = []

    def decode(self, items: Sequence[Token]) -> None:
        for src, dst in self.queued:
            self.data[dst] = list(self.data.get(src, []))
        self.queued.clear()
        super().decode(items)
        for token, pos, seq, _ in items:
            data = self.data.setdefault(seq, [])
            del data[pos:]
            data.append(token)

    def copy(self, src: int, dst: int) -> None:
        super().copy(src, dst)
        self.queued.append((src, dst))

    def state(self, seq: int) -> bytes:
        held = len(self.cells.get(seq, []))
        cells = (self.data.get(seq, []) + [-1] * held)[:held]
        return struct.pack("<IiII", STATE_MAGIC, seq, 1, held) + json.dumps(cells).encode()

    def restore(self, seq: int, data: bytes) -> bool:
        self.cells[seq] = self.data[seq] = json.loads(data[16:])
        return True


def test_a_prefix_copied_from_a_slot_is_stored_once_the_copy_is_done(tmp_path: Path) -> None:
    # The prefix sequence takes the shared prompt from the slot that evaluated it; what is
    # stored for later runs must be those cells, not what the sequence held before the copy.
    shared = tuple(range(100, 160))
    prompts = [(*shared, 200 + i, 201, 202) for i in range(3)]
    store = PrefixStore(tmp_path)
    backend = DeferredCopyBackend()
    feed = ListFeed([job(p, 3) for p in prompts])
    BatchDecoder(backend, 2, 256, 512, store).drain(feed)
    assert all(r.error is None for r in feed.results)
    entries = list(tmp_path.glob("*"))
    assert entries, "the shared prefix was stored"
    for tokens in (shared, prompts[2][:-2]):
        entry, length = store.best(tokens)
        if entry is not None and length == len(entry.tokens):
            data = store.read(entry)
            assert data is not None
            assert json.loads(data[16:]) == list(entry.tokens)
