"""The lane probe: is a model faster decoded in one-thread lanes than batched on all threads?

A run asked to decode several requests at once (``parallel``/``--jobs`` above 1), or left
to the default, can use its T threads two ways: one context whose steps use all T threads
(batching, or one request at a time), or L contexts of one thread each, decoding at the same
time (``engine/llama_lanes.py``). Which is faster depends on the model and the machine: a small model
whose kernels multiply one row at a time (the embedded Q4_1 model) spends much of a
multi-threaded step waiting at barriers and shares little between the sequences of a batch,
while a large model bound by memory bandwidth reads its weights once a step for every
sequence in it. So when such a model first loads with two lanes or more (asked to batch, or
left to the default), this module measures, on the loaded weights, after a prompt of
:data:`POSITION` tokens evaluated once and copied to every context:

* **one**: single-token steps of one sequence, T threads;
* **batched**: steps of max(T, 2) sequences together, T threads (per token);
* **lanes**: L one-thread contexts, one sequence each, stepping at the same time (per token);
* **same bits**: a step's logits with one thread and with T are bitwise the same.

L is T when ``threads`` is set, and every usable core when the machine chose T
(:func:`lane_count`): a busy machine gets fewer threads because a thread without a core of its
own holds the others back at every step's barriers, and one-thread lanes have no barriers to
hold.

Lanes are used when their bits agree and they take at most :data:`GAIN` of the faster of the
other two (:data:`OUTNUMBERED_GAIN` when L > T); :meth:`LaneVerdict.plan` gives the split. The
verdict is kept in ``<home>/lane-probe.json`` under the model file's SHA-256,
llama-cpp-python's version, its build's features, the GPU layers, T, L and this probe's
version, sealed as the kernel probe's verdicts are (``engine/kernel_probe.py``).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skilleval.engine.kernel_probe import probe_tokens
from skilleval.util.memo import recall_sealed, remember_sealed

__all__ = [
    "GAIN",
    "MEMO_FILE",
    "OUTNUMBERED_GAIN",
    "POSITION",
    "LanePolicy",
    "LaneVerdict",
    "lane_count",
    "probe_lanes",
]

MEMO_FILE = "lane-probe.json"
LANE_VERSION = 2
"""Part of the key: bumped when what is measured changes (2: the lanes' count, L)."""

POSITION = 160
"""Where the measured steps start (a prompt this long is evaluated first)."""
STEPS = 12
"""Steps timed in each case, each round."""
ROUNDS = 2
"""Rounds; each case keeps its fastest."""
CELLS = 256
"""KV cells per sequence of the probe's contexts."""
GAIN = 0.85
"""Lanes are used when a token costs at most this share of the faster other way: a margin for
what the probe does not see (prompts, Python's share of each step, a noisy machine)."""
OUTNUMBERED_GAIN = 1.0
"""The margin when the lanes outnumber the threads (other processes kept cores busy, so the
run got fewer threads than cores): lanes then evaluate prompts with more of the machine too,
which the probe does not time, so any gain in its steps is enough. On the 2-core machine with
one busy process per core, the probe's steps gave lanes 0.71-0.94 of one alone while whole demo
runs in lanes took 0.54-0.77 of one at a time (bench/README.md)."""

Facts = Callable[[], tuple[str, str, Sequence[str]]]
"""The model file's SHA-256, llama-cpp-python's version and its build's features."""


@dataclass(frozen=True, slots=True)
class LaneVerdict:
    """What the probe found for one model file, build and thread count (milliseconds per
    generated token, each case's fastest round)."""

    threads: int
    one_ms: float
    batched_ms: float
    lanes_ms: float
    same_bits: bool
    probe_ms: float = 0.0
    remembered: bool = field(default=False, compare=False)
    lanes: int = 0
    """One-thread lanes measured, and decoding when they win (0 given: as many as
    ``threads``)."""

    def __post_init__(self) -> None:
        if self.lanes < 1:
            object.__setattr__(self, "lanes", self.threads)

    @property
    def use_lanes(self) -> bool:
        """Whether to decode in one-thread lanes."""
        best = min(self.one_ms, self.batched_ms)
        margin = OUTNUMBERED_GAIN if self.lanes > self.threads else GAIN
        return self.same_bits and self.lanes > 1 and self.lanes_ms <= margin * best

    def lane_width(self, asked: int, lanes: int) -> int:
        """Requests one of ``lanes`` lanes holds at once when ``asked`` are decoded together:
        the asked width shared among the lanes where a batch of sequences costs less a token
        than one alone (measured with every thread: kernels that share a step's weights among
        its sequences do so with one thread too), else one, so that no lane's step carries
        sequences that cost as much as in steps of their own."""
        if self.batched_ms <= GAIN * self.one_ms:
            return max(1, -(-asked // max(1, lanes)))
        return 1

    def plan(self, asked: int, threads: int, auto: bool) -> tuple[int, int, int] | None:
        """How a model with ``threads`` threads decodes ``asked`` requests at once (with
        ``auto``, none asked: one a lane where lanes win): the lanes' count, each one's width
        and each one's threads; None to leave one decoder with every thread, batching
        ``asked`` (one at a time with ``auto``)."""
        if not self.use_lanes:
            return None
        wanted = self.lanes if auto else asked
        count = min(self.lanes, wanted)
        return count, self.lane_width(wanted, count), max(1, threads // count)

    def to_json(self) -> dict[str, Any]:
        """The memo's entry (without ``remembered``)."""
        return {
            "threads": self.threads,
            "lanes": self.lanes,
            "one_ms": self.one_ms,
            "batched_ms": self.batched_ms,
            "lanes_ms": self.lanes_ms,
            "same_bits": self.same_bits,
            "probe_ms": self.probe_ms,
        }

    @classmethod
    def from_json(cls, entry: dict[str, Any]) -> LaneVerdict | None:
        """An entry :meth:`to_json` wrote; None for any other shape."""
        times = [entry.get(k) for k in ("one_ms", "batched_ms", "lanes_ms", "probe_ms")]
        threads, lanes = _count(entry.get("threads")), _count(entry.get("lanes"))
        same = entry.get("same_bits")
        if (
            threads is None
            or lanes is None
            or not isinstance(same, bool)
            or any(isinstance(x, bool) or not isinstance(x, int | float) for x in times)
            or not all(0 < float(x) < 1e9 for x in times[:3])  # type: ignore[arg-type]
        ):
            return None
        one, batched, took, spent = (float(x) for x in times)  # type: ignore[arg-type]
        return cls(threads, one, batched, took, same, spent, True, lanes)


def _count(value: object) -> int | None:
    """``value`` when it is a whole number of at least one (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return None
    return value


def lane_count(threads: int, configured: int | None, cores: int) -> int:
    """The one-thread lanes a model with ``threads`` threads may decode in: as many as the
    ``configured`` threads when set, else one for each of the ``cores`` (see the module's
    docstring)."""
    return threads if configured else max(threads, cores, 1)


def probe_lanes(llm: Any, threads: int, lanes: int | None = None) -> LaneVerdict:
    """Measure ``llm`` with ``threads`` threads against ``lanes`` one-thread lanes (default:
    as many as the threads), as the module's docstring says, in contexts of :data:`CELLS`
    cells freed at the end.

    Raises:
        RuntimeError: llama.cpp could not create a context or refused a batch.
    """
    from skilleval.engine.batch_llama import LlamaBackend  # lazy: start-up time

    start = time.perf_counter()
    count = lanes or threads
    width = max(2, threads)  # with one thread, batched is a step of two against two of one
    tokens = probe_tokens(llm, POSITION + STEPS * width + 1)
    prompt, extra = tokens[:POSITION], tokens[POSITION:]
    contexts: list[Any] = []
    try:
        whole = LlamaBackend(llm, width, CELLS, POSITION, threads)
        contexts.append(whole)
        whole.decode([(t, p, 0, p == POSITION - 1) for p, t in enumerate(prompt)])
        state = whole.state(0)
        for seq in range(1, width):
            whole.copy(0, seq)
        singles = []
        for _ in range(count):
            lane = LlamaBackend(llm, 1, CELLS, POSITION, 1)
            contexts.append(lane)
            if not lane.restore(0, state):
                raise RuntimeError("llama.cpp refused a sequence's state")
            singles.append(lane)
        same = _bits(whole, extra[-1]) == _bits(singles[0], extra[-1])
        cases: dict[str, list[float]] = {"one": [], "batched": [], "lanes": []}
        for _ in range(ROUNDS):
            cases["one"].append(_steps(whole, 1, extra))
            cases["batched"].append(_steps(whole, width, extra) / width)
            cases["lanes"].append(_together(singles, extra) / count)
    finally:
        for context in contexts:
            context.close()
    best = {name: round(min(seconds) * 1000.0 / STEPS, 3) for name, seconds in cases.items()}
    return LaneVerdict(
        threads,
        best["one"],
        best["batched"],
        best["lanes"],
        same,
        round((time.perf_counter() - start) * 1000.0, 1),
        lanes=count,
    )


def _bits(backend: Any, token: int) -> bytes:
    """The raw logits of one step of sequence 0 at :data:`POSITION` (then undone)."""
    backend.decode([(token, POSITION, 0, True)])
    row = bytes(backend.logits(0).tobytes())
    backend.clear(0, POSITION)
    return row


def _steps(backend: Any, width: int, extra: Sequence[int]) -> float:
    """Seconds for :data:`STEPS` steps of ``width`` sequences at :data:`POSITION` on."""
    began = time.perf_counter()
    for k in range(STEPS):
        backend.decode([(extra[k * width + s], POSITION + k, s, True) for s in range(width)])
    spent = time.perf_counter() - began
    for seq in range(width):
        backend.clear(seq, POSITION)
    return spent


def _together(lanes: Sequence[Any], extra: Sequence[int]) -> float:
    """Seconds until every lane has made :data:`STEPS` one-sequence steps, all at once."""
    gate = threading.Barrier(len(lanes) + 1)
    failed: list[BaseException] = []

    def work(lane: Any) -> None:
        gate.wait()
        try:
            _steps(lane, 1, extra)
        except BaseException as exc:  # raised on the caller's thread below
            failed.append(exc)

    workers = [threading.Thread(target=work, args=(lane,)) for lane in lanes]
    for worker in workers:
        worker.start()
    gate.wait()
    began = time.perf_counter()
    for worker in workers:
        worker.join()
    spent = time.perf_counter() - began
    if failed:
        raise failed[0]
    return spent


class LanePolicy:
    """The probe's verdict for one provider: recalled, or measured and remembered.

    Args:
        home: Where the verdict is remembered.
        gpu_layers: Layers offloaded to a GPU (part of the key).
        facts: What else the verdict is kept under (asked when it is first needed).
    """

    def __init__(self, home: Path, gpu_layers: int, facts: Facts) -> None:
        self.home = home
        self.gpu_layers = gpu_layers
        self._facts = facts
        self.found: LaneVerdict | None = None

    def _key(self, threads: int, lanes: int) -> str:
        sha256, version, features = self._facts()
        facts = {
            "model": sha256,
            "llama-cpp-python": version,
            "build": list(features),
            "gpu_layers": self.gpu_layers,
            "threads": threads,
            "lanes": lanes,
            "probe": LANE_VERSION,
        }
        return hashlib.sha256(json.dumps(facts, sort_keys=True).encode("utf-8")).hexdigest()

    def recall(self, threads: int, lanes: int | None = None) -> LaneVerdict | None:
        """The verdict kept for ``threads`` threads and ``lanes`` lanes (default: as many as
        the threads), if any."""
        count = lanes or threads
        found = self.found
        if found is None or (found.threads, found.lanes) != (threads, count):
            entry = recall_sealed(self.home / MEMO_FILE, self._key(threads, count))
            found = LaneVerdict.from_json(entry) if entry is not None else None
            ok = found is not None and (found.threads, found.lanes) == (threads, count)
            self.found = found if ok else None
        return self.found

    def measure(self, llm: Any, threads: int, lanes: int | None = None) -> LaneVerdict | None:
        """Probe the loaded ``llm`` and remember the verdict; None (lanes unused, nothing
        remembered) when llama.cpp refuses the probe."""
        try:
            found = probe_lanes(llm, threads, lanes)
        except RuntimeError:
            return None
        self.keep(found)
        return found

    def keep(self, found: LaneVerdict) -> None:
        """Remember ``found`` for its thread and lane counts, sealed."""
        key = self._key(found.threads, found.lanes)
        remember_sealed(self.home / MEMO_FILE, key, found.to_json())
        self.found = found

    def info(self, count: int, width: int, threads: int) -> dict[str, Any]:
        """The lanes in use (``count`` decoders of ``width`` requests and ``threads``
        threads) and the verdict that chose them, for the run's environment block (empty
        until a verdict is known)."""
        found = self.found
        if found is None:
            return {}
        keys = ("one_ms", "batched_ms", "lanes_ms", "same_bits")
        measured = {k: v for k, v in found.to_json().items() if k in keys}
        return {"lanes": {"count": count, "width": width, "threads": threads, **measured}}
