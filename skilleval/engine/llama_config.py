"""The ``gguf`` provider's settings: how a GGUF model is loaded, and the schema of its
``model:`` block (the provider itself is in ``engine/llama.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skilleval.engine.hf import is_hub_ref, problem_with
from skilleval.plugins.markers import ConfigContext

__all__ = ["GGUF_SCHEMA", "N_BATCH", "N_CTX", "LlamaConfig"]

N_CTX = 4096
N_BATCH = 512


@dataclass(frozen=True, slots=True)
class LlamaConfig:
    """How to load a GGUF model: ``model: {provider: gguf, path, n_ctx, threads, n_batch}``."""

    path: str = "default"
    """``default`` (the embedded model), an ``hf:`` reference (fetched when a run starts), or a
    .gguf file, made absolute against the suite."""
    n_ctx: int = N_CTX
    threads: int | None = None
    """CPU threads; None lets llama.cpp choose."""
    n_batch: int = N_BATCH
    label: str = "default"
    """The path as written, for messages."""

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
            label=written,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "n_ctx": self.n_ctx,
            "threads": self.threads,
            "n_batch": self.n_batch,
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
    },
}
