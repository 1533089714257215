"""The kernel probe: does a model's arithmetic depend on how its tokens are batched?

llama.cpp's CPU kernels may compute a token's logits with other bits depending on the batch
it was in. For the embedded model (Q4_1) they do not, as long as no batch is a single token:
a prompt evaluated whole or in any split into batches of two or more gives the same bits, and a
sequence decoded alone gives the same bits as beside other sequences. For K-quants (Q4_K_M)
with llama.cpp's weight repacking they do not hold: the repacked matrix kernels treat rows in
groups, so where a batch ends changes the sums. So when a GGUF model first loads, this module
measures, on the loaded weights and in a small context of its own shaped like the batched
engine's (``engine/batch_llama.py``):

* **splits**: a short prompt evaluated whole, and split into batches of two or more tokens
  (small trailing batches among them), gives bitwise the same logits at its last position;
* **batches**: a sequence decoded alone, and beside one, two and three other sequences, gives
  bitwise the same logits at every step.

The prompt is a fixed token sequence picked from the model's own vocabulary (no control or
end-of-generation token), so it needs no text and no template. The verdict is kept in
``<home>/kernel-probe.json`` under the model file's SHA-256, llama-cpp-python's version, the
features its llama.cpp build was compiled with (the canary's list), the GPU layers and this
probe's version; an entry is used only when its shape is the one written here and its digest
matches (``engine/llama_canary.py`` seals its verdicts the same way). What the verdict changes
is decided in ``engine/kernel_policy.py``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skilleval.engine.llama_adapter import vocab_of
from skilleval.util.memo import recall_sealed, remember_sealed

__all__ = [
    "MEMO_FILE",
    "PROBE_TOKENS",
    "PROBE_VERSION",
    "SPLITS",
    "WIDTHS",
    "Kernels",
    "keep",
    "probe",
    "probe_key",
    "probe_tokens",
    "recall",
]

MEMO_FILE = "kernel-probe.json"
"""The memo's file name under the home."""

PROBE_VERSION = 1
"""Part of the key: bumped when what is measured changes."""

PROBE_TOKENS = 40
"""Length of the probe's prompt."""

SPLITS: tuple[tuple[int, ...], ...] = ((38,), (37,), (29,), (14, 27))
"""Where the prompt is cut, besides evaluating it whole: trailing batches of 2, 3 and 11
tokens, and three uneven chunks; none on a multiple of 4 or 16, where some repacked kernels
happen to agree."""

WIDTHS = (2, 3, 4)
"""Sequences decoded together, besides one alone."""

STEPS = 8
"""Decode steps compared at each width (for a Q4_K_M file, the first four agreed and the
next four did not)."""

CELLS = 256
"""KV cells per sequence of the probe's context (llama.cpp pads attention to 256)."""


@dataclass(frozen=True, slots=True)
class Kernels:
    """What the probe found for one model file on one build.

    Attributes:
        splits: A prompt gives the same logits whole and split into batches of two or more.
        batches: A sequence gives the same logits decoded alone and beside others.
        split_diff: The largest logit difference seen between the prompt whole and split.
        batch_diff: The largest logit difference seen between alone and beside others.
        probe_ms: What the probe took when it ran.
        remembered: Read from the memo rather than measured now.
    """

    splits: bool
    batches: bool
    split_diff: float = 0.0
    batch_diff: float = 0.0
    probe_ms: float = 0.0
    remembered: bool = field(default=False, compare=False)

    @property
    def batching_identical(self) -> bool:
        """Whether batched decoding gives the bytes one at a time gives: its prompts are
        evaluated in other splits, and its sequences decoded beside each other."""
        return self.splits and self.batches

    def to_json(self) -> dict[str, Any]:
        """The memo's entry (without ``remembered``)."""
        return {
            "splits": self.splits,
            "batches": self.batches,
            "split_diff": self.split_diff,
            "batch_diff": self.batch_diff,
            "probe_ms": self.probe_ms,
        }


def probe_key(model_sha256: str, version: str, features: Sequence[str], gpu_layers: int) -> str:
    """What a verdict depends on: the model file's bytes, the library's version, its build's
    features, the layers offloaded to a GPU and the probe's own version."""
    facts = {
        "model": model_sha256,
        "llama-cpp-python": version,
        "build": list(features),
        "gpu_layers": gpu_layers,
        "probe": PROBE_VERSION,
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode("utf-8")).hexdigest()


# -- measuring ---------------------------------------------------------------------------------


def probe_tokens(llm: Any, count: int) -> list[int]:
    """``count`` token ids spread over ``llm``'s vocabulary by a fixed stride, skipping
    control and end-of-generation tokens: the same ids for the same model file."""
    import llama_cpp  # lazy: start-up time

    vocab = vocab_of(llm)
    n_vocab = int(llm.n_vocab())
    out: list[int] = []
    token = 101 % n_vocab
    for _ in range(n_vocab):
        if not (
            llama_cpp.llama_vocab_is_control(vocab, token)
            or llama_cpp.llama_vocab_is_eog(vocab, token)
        ):
            out.append(token)
            if len(out) == count:
                break
        token = (token + 7919) % n_vocab  # a prime stride visits every id
    return out


def probe(llm: Any) -> Kernels:
    """Measure ``llm``'s kernels (see the module's docstring); five evaluations of a 40-token
    prompt and 32 decode steps, in a context of four 256-cell sequences freed at the end.

    Raises:
        RuntimeError: llama.cpp could not create the context or refused a batch.
    """
    import numpy as np  # lazy: start-up time

    from skilleval.engine.batch_llama import LlamaBackend  # lazy: start-up time

    start = time.perf_counter()
    tokens = probe_tokens(llm, PROBE_TOKENS + STEPS * max(WIDTHS))
    prompt, extra = tokens[:PROBE_TOKENS], tokens[PROBE_TOKENS:]
    n = len(prompt)
    backend = LlamaBackend(llm, max(WIDTHS) - 1, CELLS, n)
    try:

        def evaluate(cuts: Sequence[int]) -> Any:
            backend.clear(0)
            bounds = [0, *cuts, n]
            for lo, hi in itertools.pairwise(bounds):
                backend.decode([(prompt[p], p, 0, p == n - 1) for p in range(lo, hi)])
            return np.array(backend.logits(n - bounds[-2] - 1), copy=True)

        whole = evaluate(())
        split_diffs = [_diff(whole, evaluate(cuts)) for cuts in SPLITS]

        # seq 0 holds the prompt (evaluated whole, last); the others get a copy of it.
        for seq in range(1, max(WIDTHS)):
            backend.clear(seq)
            backend.copy(0, seq)

        def steps(width: int) -> list[Any]:
            seen = []
            for k in range(STEPS):
                items = [(extra[k * max(WIDTHS) + s], n + k, s, True) for s in range(width)]
                backend.decode(items)
                seen.append(np.array(backend.logits(0), copy=True))
            for seq in range(width):
                backend.clear(seq, n)
            return seen

        alone = steps(1)
        batch_diffs = [
            _diff(a, b) for width in WIDTHS for a, b in zip(alone, steps(width), strict=True)
        ]
    finally:
        backend.close()
    return Kernels(
        splits=all(d == 0.0 for d in split_diffs),
        batches=all(d == 0.0 for d in batch_diffs),
        split_diff=max(split_diffs),
        batch_diff=max(batch_diffs),
        probe_ms=round((time.perf_counter() - start) * 1000.0, 1),
    )


def _diff(a: Any, b: Any) -> float:
    """0.0 when two rows of logits are the same bits, else their largest difference (at least
    a tiny positive number, so that a difference is never read as none)."""
    if a.tobytes() == b.tobytes():
        return 0.0
    import numpy as np  # lazy: start-up time

    gap = float(np.nanmax(np.abs(a.astype(np.float64) - b.astype(np.float64))))
    return gap if gap > 0.0 else 1e-30


# -- the memo ----------------------------------------------------------------------------------


def keep(home: Path, key: str, found: Kernels) -> None:
    """Remember ``found`` under ``key`` in ``<home>/kernel-probe.json``, sealed with a digest
    of the key and the entry."""
    remember_sealed(home / MEMO_FILE, key, found.to_json())


def recall(home: Path, key: str) -> Kernels | None:
    """The verdict kept under ``key``; None when there is none, or when it is damaged, edited
    or not of the shape :func:`keep` writes."""
    entry = recall_sealed(home / MEMO_FILE, key)
    if entry is None:
        return None
    flags = (entry.get("splits"), entry.get("batches"))
    numbers = (entry.get("split_diff"), entry.get("batch_diff"), entry.get("probe_ms"))
    if any(not isinstance(f, bool) for f in flags) or any(
        isinstance(x, bool) or not isinstance(x, int | float) or not x >= 0 for x in numbers
    ):
        return None
    if entry["splits"] != (entry["split_diff"] == 0) or entry["batches"] != (
        entry["batch_diff"] == 0
    ):
        return None
    return Kernels(
        splits=entry["splits"],
        batches=entry["batches"],
        split_diff=float(entry["split_diff"]),
        batch_diff=float(entry["batch_diff"]),
        probe_ms=float(entry["probe_ms"]),
        remembered=True,
    )
