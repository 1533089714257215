"""The ``gguf`` provider's settings: how a GGUF model is loaded, and the schema of its
``model:`` block (the provider itself is in ``engine/llama.py``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skilleval.engine.hf_ref import is_hub_ref, problem_with
from skilleval.plugins.markers import ConfigContext

__all__ = [
    "DEFAULT_PARALLEL",
    "GGUF_SCHEMA",
    "N_BATCH",
    "N_CTX",
    "LlamaConfig",
    "batch_width",
    "default_threads",
]

N_CTX = 4096
N_BATCH = 512
DEFAULT_PARALLEL = 1
"""Requests decoded together when neither ``model.parallel`` nor ``--jobs`` says otherwise
and lanes are not faster (``engine/lane_probe.py``): batching all threads' work in one
decoder did not beat one at a time on this project's 2-core machine (bench/README.md)."""


@dataclass(frozen=True, slots=True)
class LlamaConfig:
    """How to load a GGUF model:
    ``model: {provider: gguf, path, n_ctx, threads, n_batch, parallel, gpu_layers}``."""

    path: str = "default"
    """``default`` (the embedded model), an ``hf:`` reference (fetched when a run starts), or a
    .gguf file, made absolute against the suite."""
    n_ctx: int = N_CTX
    threads: int | None = None
    """CPU threads; None uses every usable core (see :func:`default_threads`)."""
    n_batch: int = N_BATCH
    parallel: int | None = None
    """Requests decoded at once; None means ``--jobs`` when above 1, else one a core in
    lanes where the lane probe found them faster (``engine/lane_probe.py``), else
    :data:`DEFAULT_PARALLEL` (one at a time)."""
    gpu_layers: int | None = None
    """Layers offloaded to a GPU (llama.cpp's ``n_gpu_layers``; -1: all of them); None keeps
    the model on the CPU."""
    label: str = "default"
    """The path as written, for messages."""

    @property
    def n_gpu_layers(self) -> int:
        """What llama.cpp is given: ``gpu_layers``, or 0 when it is not set."""
        return self.gpu_layers if self.gpu_layers is not None else 0

    @classmethod
    def configure(cls, raw: Mapping[str, Any], ctx: ConfigContext) -> LlamaConfig:
        written = str(raw.get("path", "default"))
        path = written
        if is_hub_ref(written):
            problem = problem_with(written)
            if problem is not None:
                ctx.error(problem, "path")
        elif written != "default":
            p = Path(written).expanduser()
            path = str(p if p.is_absolute() else ctx.base_dir / p)
        return cls(
            path=path,
            n_ctx=int(raw.get("n_ctx", N_CTX)),
            threads=raw.get("threads"),
            n_batch=int(raw.get("n_batch", N_BATCH)),
            parallel=raw.get("parallel"),
            gpu_layers=raw.get("gpu_layers"),
            label=written,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "n_ctx": self.n_ctx,
            "threads": self.threads,
            "n_batch": self.n_batch,
            # Only when set, so that the results of suites without it keep their shape.
            **({"parallel": self.parallel} if self.parallel is not None else {}),
            **({"gpu_layers": self.gpu_layers} if self.gpu_layers is not None else {}),
        }


GGUF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "minLength": 1,
            "description": "`default`, a .gguf file, or hf:OWNER/REPO/FILE.gguf or hf:OWNER/REPO:QUANT (a file on a Hugging Face hub, optionally @REVISION).",
        },
        "n_ctx": {"type": "integer", "minimum": 256},
        "threads": {"type": "integer", "minimum": 1},
        "n_batch": {"type": "integer", "minimum": 1},
        "parallel": {
            "type": "integer",
            "minimum": 1,
            "maximum": 64,
            "description": "Requests decoded at once (1: one at a time). Unset: --jobs when above 1, else one a core in lanes where the lane probe measured them faster, else 1.",
        },
        "gpu_layers": {
            "type": "integer",
            "minimum": -1,
            "description": "Layers offloaded to a GPU (llama.cpp's n_gpu_layers; -1: all, 0: none). Needs llama-cpp-python built with a GPU backend.",
        },
    },
}


def default_threads() -> int:
    """Every core this process may use, for generation and prompts alike, when ``threads``
    is not set: on this project's 2-core bench machine, quiet, 2 threads took 0.68-0.80 of the
    time 1 thread took at every batch width (bench/README.md, Threads), where
    llama-cpp-python's own default generates on half the cores."""
    usable = getattr(os, "sched_getaffinity", None)
    cores = len(usable(0)) if callable(usable) else (os.cpu_count() or 1)
    return max(cores, 1)


def batch_width(config: LlamaConfig, jobs: int) -> int:
    """How many requests decode together: ``parallel``, else ``--jobs`` above 1, else the
    default."""
    if config.parallel is not None:
        return max(1, int(config.parallel))
    return jobs if jobs > 1 else DEFAULT_PARALLEL
