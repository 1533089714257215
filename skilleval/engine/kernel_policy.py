"""What the kernel probe's verdict (``engine/kernel_probe.py``) changes for one in-process model.

* **Splits agree** (the embedded Q4_1 model, Q4_0, Q8_0): nothing. Prompts are evaluated one at
  a time as before, reusing any prefix evaluated in batches of two or more tokens.
* **Splits differ** (K-quants with llama.cpp's weight repacking): one at a time, every prompt
  is evaluated on a fixed grid: its batches end at absolute positions that are multiples of
  :data:`PROMPT_GRID` (the last one at the prompt's end), and the KV state and stored prefixes
  are reused only up to a grid boundary. A prompt's cells then come from the same decode calls
  whatever was evaluated or stored before, so a reply does not depend on it.
* **Batching differs** (either measurement): the batched engine would evaluate prompts in other
  splits, or decode a sequence beside others with other bits, so a run asked for
  ``parallel``/``--jobs`` above 1 decodes one at a time instead, said once on stderr and
  recorded in the run's environment block.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from skilleval.engine.kernel_probe import Kernels, keep, probe, probe_key, recall
from skilleval.engine.llama_config import LlamaConfig

Facts = Callable[[], tuple[str, str, Sequence[str]]]
"""The model file's SHA-256, llama-cpp-python's version and its build's features."""

__all__ = ["PROMPT_GRID", "KernelPolicy", "Kernels"]

PROMPT_GRID = 64
"""Where prompt batches end when splits change bits: a multiple of 64 tokens. Reuse is lost
for up to 63 tokens a call (32 on average), little beside prompts of hundreds of tokens, while
batches of 64 keep prompt evaluation close to batches of 512: on the 2-core machine these docs
were measured on, a 512-token prompt of the Q4_K_M model took about 1.3 times as long in
batches of 64 as in one batch (and about 1.5 times in batches of 32). Smaller than the default
``n_batch`` (512), so llama.cpp never cuts a grid batch itself; with ``n_batch`` below it, the
grid is ``n_batch``."""

_warned: list[str] = []
"""Models whose batching was turned off in this process, so each is said once."""


class KernelPolicy:
    """The probe's verdict for one provider, and what follows from it.

    Args:
        home: Where the verdict is remembered.
        asked: The batch width the run asked for (``parallel`` or ``--jobs``).
        config: The model's settings (``n_batch``; ``gpu_layers`` is part of the key).
        facts: What else the verdict is kept under (asked when it is first needed).
    """

    def __init__(self, home: Path, asked: int, config: LlamaConfig, facts: Facts) -> None:
        self.home = home
        self.asked = asked
        self.n_batch = max(2, config.n_batch)
        self.gpu_layers = config.n_gpu_layers
        self._facts = facts
        self.settled = False
        """Whether the batch width was decided (:meth:`width`)."""
        self.found: Kernels | None = None
        """The verdict, once recalled or measured."""
        self.reason: str | None = None
        """Why the batch width was lowered, when it was."""

    def _key(self) -> str:
        sha256, version, features = self._facts()
        return probe_key(sha256, version, features, self.gpu_layers)

    def recall(self) -> Kernels | None:
        """The verdict remembered for this model file and build, if any (kept once found)."""
        if self.found is None:
            self.found = recall(self.home, self._key())
        return self.found

    def known(self) -> Kernels:
        """The verdict, once recalled or measured."""
        assert self.found is not None  # asked only after recall() or measure()
        return self.found

    def batches(self) -> bool:
        """Whether the model batches: asked to, and known to give the same bits batched."""
        found = self.recall() if self.asked > 1 else None
        return found is not None and found.batching_identical

    def may_batch(self) -> bool:
        """Whether the model may batch: asked to, and not known to change bits batched (a
        model not yet probed is opened for batching, and again for one at a time if the
        probe says so, rather than hold both contexts' memory at once)."""
        found = self.recall() if self.asked > 1 else None
        return self.asked > 1 and (found is None or found.batching_identical)

    def measure(self, llm: Any) -> Kernels:
        """Probe the loaded ``llm`` and remember the verdict. A probe llama.cpp refuses proves
        nothing: the model is then treated as one whose splits and batches change bits (the
        safe way), and nothing is remembered."""
        try:
            self.found = probe(llm)
        except RuntimeError:
            self.found = Kernels(splits=False, batches=False)
            return self.found
        keep(self.home, self._key(), self.found)
        return self.found

    @property
    def grid(self) -> int:
        """The prompt grid one at a time (0: none, the splits agree or nothing is known)."""
        if self.found is None or self.found.splits:
            return 0
        return min(PROMPT_GRID, self.n_batch)

    def salt(self, found: Kernels) -> str:
        """What the cache salt adds: replies evaluated on a grid are computed another way than
        before it existed (nothing for a model whose splits agree)."""
        self.found = found
        return f";prompt-grid={self.grid}" if self.grid else ""

    def width(self, found: Kernels, model: str) -> int:
        """The batch width to use: the one asked, or 1 when batching would change bits (said
        once per model on stderr, and kept in :attr:`reason`)."""
        self.found, self.settled = found, True
        if self.asked <= 1 or found.batching_identical:
            return self.asked
        what = []
        if not found.splits:
            what.append(
                f"a prompt split into other batches gives other logits (by up to "
                f"{found.split_diff:.2g})"
            )
        if not found.batches:
            what.append(
                f"a sequence decoded beside others gives other logits than alone (by up to "
                f"{found.batch_diff:.2g})"
            )
        self.reason = (
            f"{self.asked} asked, but on this build {' and '.join(what)}, so batched replies "
            "would differ from one-at-a-time ones"
        )
        if model not in _warned:
            _warned.append(model)
            sys.stderr.write(
                f"warning: {model}: {' and '.join(what)} on this llama.cpp build, so its "
                f"requests are decoded one at a time instead of {self.asked} together "
                "(batched replies would differ from one-at-a-time ones; Q4_0 and Q8_0 files "
                'batch identically: docs/engine.md, "Same bytes as one at a time")\n'
            )
        return 1

    def info(self) -> dict[str, Any]:
        """The verdict and its consequences, for the run's environment block (empty until
        known)."""
        found = self.found
        if found is None:
            return {}
        kernels: dict[str, Any] = {"splits": found.splits, "batches": found.batches}
        if self.grid:
            kernels["prompt_grid"] = self.grid
        out: dict[str, Any] = {"kernels": kernels}
        if self.reason:
            out["batch_width_reason"] = self.reason
        return out
