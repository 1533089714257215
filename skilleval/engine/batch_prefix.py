"""The shared prompt prefix of batched decoding: which cells a new sequence starts from.

A slot about to take a request starts from the longest start of its prompt that is already
evaluated somewhere: the prefix sequence (brought to what the prompt shares with the waiting
request that shares the most of it), another slot's kept prompt, or a prefix stored on disk by
an earlier run (``engine/prefix_store.py``). Only the rest is evaluated in the slot. Every
copied cell was evaluated as a prompt is (in batches of two or more tokens), so the reply
does not depend on where its start came from (docs/engine.md, "Batched decoding").
"""

from __future__ import annotations

from collections.abc import Sequence

from skilleval.engine.batch_types import (
    STORE_GAIN,
    Backend,
    Token,
    closest,
    common_prefix,
    prefill_chunks,
)
from skilleval.engine.prefix_store import MIN_TOKENS, PrefixStore, shared_length

__all__ = ["SharedPrefix"]


class SharedPrefix:
    """The prefix sequence and what each slot keeps, over ``width`` slots of ``backend``.

    Args:
        backend: The context, with ``width + 1`` sequences: slots ``0..width-1`` and the
            shared prefix at ``width``.
        width: How many sequences decode together.
        n_ctx: Cells per sequence; a prompt plus its reply must fit.
        n_batch: The largest batch llama.cpp accepts in one decode.
        store: The prefixes kept from earlier runs, if any.
    """

    def __init__(
        self,
        backend: Backend,
        width: int,
        n_ctx: int,
        n_batch: int,
        store: PrefixStore | None = None,
    ) -> None:
        self.backend = backend
        self.store = store
        self.width = max(1, width)
        self.n_ctx = n_ctx
        self.n_batch = max(2, n_batch)
        self.prefix_seq = self.width
        self._held: tuple[int, ...] = ()
        self._kept: list[tuple[int, ...]] = [() for _ in range(self.width)]
        """The prompt whose cells each slot still holds (evaluated as a prompt is, so they
        can be copied into another slot as if evaluated there)."""
        self._unbilled = 0
        self._copying: set[int] = set()
        """Sequences a copy is queued into or out of: llama.cpp copies between KV streams at
        the next decode, so nothing may be written into them directly until then."""
        self._unstored: tuple[tuple[int, ...], int] | None = None
        """A prefix copied into the prefix sequence, to store once the copy is done."""
        self._pending: dict[int, tuple[tuple[int, ...], int]] = {}
        """For a slot filling its prompt: the prefix the prefix sequence is to take from it
        once filled that far, and from which position the slot evaluates it."""

    def _decode(self, items: Sequence[Token]) -> None:
        """Decode one batch; the copies queued before it are then done."""
        self.backend.decode(items)
        self._copying.clear()
        unstored, self._unstored = self._unstored, None
        if unstored is not None and self._held == unstored[0]:
            self._keep_stored(*unstored)

    def _copy(self, src: int, dst: int) -> None:
        """Make ``dst`` hold what ``src`` holds (done by llama.cpp at the next decode)."""
        self.backend.copy(src, dst)
        self._copying.update((src, dst))

    def _slot_start(
        self, slot: int, prompt: tuple[int, ...], waiting: Sequence[tuple[int, ...]]
    ) -> int:
        """Give ``slot`` the longest start of ``prompt`` it can have without evaluating it
        there (see the module's docstring); return its length. What the prefix sequence
        evaluated meanwhile is left in ``_unbilled``, to be counted with this request."""
        after = closest(prompt, [p for p in waiting if len(p) < self.n_ctx])
        self._unbilled = 0
        target = prompt[: common_prefix([prompt, *after])]
        held = max(0, min(shared_length(self._held, prompt), len(prompt) - 2))
        # The prefix sequence, or a slot holding a longer start of this prompt (an earlier
        # request of its kind, when the prefix sequence went to a request of another kind).
        source, found = self._slot_source(prompt)
        if after and (len(target) < held or found >= len(target)):
            # What the waiting requests share with this prompt is already held, by the prefix
            # sequence or by a slot: keep the prefix sequence for the next request of its
            # kind rather than cut it to this short shared start.
            shared = held
        else:
            shared = self._prepare_prefix(target, defer_to=slot)
        self._kept[slot] = ()
        # Or the store, when it holds more of this prompt than the model does.
        start = self._restore_slot(slot, prompt, max(shared, found))
        if start == 0:
            start = self._copy_start(slot, source, found, shared, len(prompt))
        self._filled(slot, start)
        return start

    def _awaits(self, slot: int, prompt: tuple[int, ...]) -> bool:
        """Whether another slot is filling a prefix the prefix sequence will take (see
        :meth:`_filled`) that holds at least two more tokens of ``prompt`` than are held
        anywhere now: then ``slot`` waits for it rather than evaluate them a second time."""
        have = max(shared_length(self._held, prompt), self._slot_source(prompt)[1])
        return any(
            min(shared_length(target, prompt), len(prompt) - 2) >= have + 2
            for other, (target, _) in self._pending.items()
            if other != slot
        )

    def _filled(self, slot: int, end: int) -> None:
        """``slot`` now holds its prompt up to ``end``: if the prefix sequence waits for a
        prefix from it that it now holds, copy it there (and keep it for later runs)."""
        pending = self._pending.get(slot)
        if pending is None or end < len(pending[0]):
            return
        target, evaluated_from = self._pending.pop(slot)
        self.backend.clear(self.prefix_seq)
        self._copy(slot, self.prefix_seq)
        self.backend.clear(self.prefix_seq, len(target))
        self._held = target
        # Its cells are there once the copy is done, at the next decode.
        self._unstored = (target, evaluated_from)

    def _keep_stored(self, target: tuple[int, ...], evaluated_from: int) -> None:
        store = self.store
        if (
            store is not None
            and len(target) >= MIN_TOKENS
            and len(target) - evaluated_from >= STORE_GAIN
            and not store.has(target)
        ):
            store.write(target, self.backend.state(self.prefix_seq))

    def _prepare_prefix(self, target: tuple[int, ...], defer_to: int | None = None) -> int:
        """Make the prefix sequence hold ``target`` (or as much as can be kept); return its
        length, evaluating only what neither it nor a slot's kept prompt held already.

        With ``defer_to``, what is left to evaluate is not evaluated here: that slot evaluates
        it with its own prompt, inside the decode steps, and the prefix sequence takes a copy
        once the slot holds it (:meth:`_filled`); the length returned is what the prefix
        sequence holds now."""
        keep = shared_length(self._held, target)
        slot, found = self._slot_source(target)
        restored = self._restore(target, max(keep, found))
        keep = shared_length(self._held, target)  # the prefix sequence may have changed
        if not restored and found > keep + 1:
            # A slot holds more of it: start from a copy of that slot.
            self.backend.clear(self.prefix_seq)
            self._copy(slot, self.prefix_seq)
            self._held = self._kept[slot]
            keep = found
        if len(target) - keep == 1:
            keep -= 1  # never extend by a single token
        if keep < 0 or len(target) < 2:
            self.backend.clear(self.prefix_seq)
            self._held = ()
            return 0
        self.backend.clear(self.prefix_seq, keep)
        self._held = target[:keep]
        if defer_to is not None and keep < len(target):
            self._pending[defer_to] = (target, keep)
            return keep
        for a, b in prefill_chunks(keep, len(target), self.n_batch):
            self._decode([(target[p], p, self.prefix_seq, False) for p in range(a, b)])
        self._held = target
        # Counted once, with the request being admitted.
        self._unbilled = len(target) - keep
        self._keep_stored(target, keep)
        return len(target)

    def _restore(self, target: tuple[int, ...], held: int) -> bool:
        """Load the stored prefix that shares the most with ``target`` into the prefix
        sequence, when it shares at least :data:`STORE_GAIN` tokens more than ``held``."""
        store = self.store
        if store is None or len(target) < MIN_TOKENS or self.prefix_seq in self._copying:
            return False
        entry, length = store.best(target)
        if entry is None or min(length, len(target)) < held + STORE_GAIN:
            return False
        data = store.read(entry)
        if data is None:
            return False
        self.backend.clear(self.prefix_seq)
        if not self.backend.restore(self.prefix_seq, data):
            self.backend.clear(self.prefix_seq)
            self._held = ()
            store.remove(entry)
            return False
        self._held = entry.tokens
        return True

    def _copy_start(self, slot: int, source: int, found: int, shared: int, length: int) -> int:
        """Give ``slot`` the longest start it can copy, from ``source`` (holding ``found``
        tokens of the prompt) or from the prefix sequence (``shared``); return its length."""
        if found > shared and length - found >= 2:
            if source != slot:
                self.backend.clear(slot)
                self._copy(source, slot)
            self.backend.clear(slot, found)
            return found
        self.backend.clear(slot)
        if shared and length - shared >= 2:
            self._copy(self.prefix_seq, slot)
            self.backend.clear(slot, shared)  # the prefix sequence may hold more than shared
            return shared
        return 0

    def _restore_slot(self, slot: int, prompt: tuple[int, ...], held: int) -> int:
        """Load into ``slot`` the stored prefix that shares the most with ``prompt``, when it
        spares at least :data:`STORE_GAIN` tokens more than the ``held`` ones; return how
        many of the prompt's tokens the slot then holds (0 when nothing was loaded).

        The prefix sequence follows what consecutive requests share; a request whose
        neighbours are of another kind (a judge call between generations) still starts from
        the store."""
        store = self.store
        if store is None or len(prompt) < MIN_TOKENS or slot in self._copying:
            return 0
        entry, length = store.best(prompt)
        usable = min(length, len(prompt) - 2)
        if entry is None or usable < held + STORE_GAIN:
            return 0
        data = store.read(entry)
        if data is None:
            return 0
        self.backend.clear(slot)
        if not self.backend.restore(slot, data):
            self.backend.clear(slot)
            store.remove(entry)
            return 0
        self.backend.clear(slot, usable)
        return usable

    def _slot_source(self, tokens: tuple[int, ...]) -> tuple[int, int]:
        """The slot whose kept prompt shares the longest start with ``tokens``, and how long
        (cut so that ``tokens`` keeps two of its own)."""
        best, length = 0, 0
        for slot, kept in enumerate(self._kept):
            n = shared_length(kept, tokens)
            if n > length:
                best, length = slot, n
        return best, max(0, min(length, len(tokens) - 2))

    def _forget_slots(self) -> None:
        self._kept = [() for _ in range(self.width)]
        self._pending.clear()
