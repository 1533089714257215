"""Embeddings from a GGUF model: a second ``llama_cpp.Llama`` on the same file, in embedding mode.

Generation and embedding need different contexts (embedding mode pools the hidden states of
every token instead of sampling the next one), so :class:`GgufEmbedder` keeps its own
instance, created on the first call and never when a run embeds nothing. Each text is
embedded on its own, so its vector does not depend on what else was asked at the same time.

A model made for embeddings pools its token vectors the way its GGUF says. A chat model
declares no pooling; its token vectors are then averaged here, which is what llama.cpp's
mean pooling computes (asking llama.cpp for it instead prints a warning on every load). A text
longer than the context is refused rather than cut.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from skilleval.engine.llama_build import warn_without_gpu
from skilleval.engine.llama_canary import Canary
from skilleval.engine.llama_checks import check_gguf, one_line
from skilleval.engine.wait_policy import choose as choose_wait_policy
from skilleval.errors import ProviderError

POOLING: Final = "model-or-mean"
"""How token vectors become one vector (the model's pooling, else their mean); part of the
cache salt."""


class GgufEmbedder:
    """Texts to vectors with a GGUF model.

    Args:
        path: The GGUF file (the one the generator runs).
        n_ctx: The longest text, in tokens, that can be embedded.
        threads: CPU threads; None lets llama.cpp choose.
        install_hint: What to say when llama-cpp-python is missing.
        gpu_layers: Layers offloaded to a GPU (``model.gpu_layers``; None: none).
        canary: Called before llama.cpp first runs in this process; raises
            :class:`~skilleval.errors.InstallationError` when the build crashes on this CPU
            (:func:`~skilleval.engine.llama_canary.ensure_runs`).
    """

    def __init__(
        self,
        path: Path,
        n_ctx: int,
        threads: int | None,
        install_hint: str,
        *,
        gpu_layers: int | None = None,
        canary: Callable[[], Canary] | None = None,
    ) -> None:
        self.path = path
        self.n_ctx = n_ctx
        self.threads = threads
        self.install_hint = install_hint
        self.gpu_layers = gpu_layers
        self.canary = canary
        self._llm: Any = None
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One mean-pooled vector per text.

        Raises:
            ProviderError: The model cannot be loaded in embedding mode, or a text is longer
                than the context.
        """
        with self._lock:
            llm = self._load()
            out = []
            for text in texts:
                tokens = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
                if len(tokens) > self.n_ctx:
                    raise ProviderError(
                        f"a text to embed is {len(tokens)} tokens but the embedding context "
                        f"holds {self.n_ctx}; raise model.n_ctx"
                    )
                try:
                    vector = llm.embed(text, truncate=False)
                except (ValueError, RuntimeError) as exc:
                    raise ProviderError(
                        f"llama.cpp could not embed a text: {one_line(exc)}"
                    ) from None
                out.append(_pooled(vector))
            return out

    def _load(self) -> Any:
        if self._llm is not None:
            return self._llm
        check_gguf(self.path)
        # As for generation (engine/llama.py): spinning threads on a busy machine made
        # embedding 15 times slower here (12 s a sentence against 0.8 s, 2 cores, load 16).
        choose_wait_policy()
        # As for generation: a build that crashes on this CPU stops here with one line.
        found = self.canary() if self.canary is not None else None
        warn_without_gpu(self.gpu_layers, found.gpu_offload if found is not None else None)
        try:
            import llama_cpp  # lazy: start-up time
        except ImportError:
            raise ProviderError(f"llama-cpp-python is not installed; {self.install_hint}") from None
        try:
            # The whole text is one batch: pooling needs every token of it at once.
            self._llm = llama_cpp.Llama(
                model_path=str(self.path),
                embedding=True,
                n_ctx=self.n_ctx,
                n_batch=self.n_ctx,
                n_ubatch=self.n_ctx,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                n_gpu_layers=self.gpu_layers if self.gpu_layers is not None else 0,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ProviderError(
                f"could not load {self.path} for embeddings: {one_line(exc)}"
            ) from None
        return self._llm

    def close(self) -> None:
        """Free the embedding model; the next call loads it again."""
        with self._lock:
            if self._llm is not None:
                self._llm.close()
                self._llm = None


def _pooled(vector: Any) -> list[float]:
    """One vector: the model's pooled one, or the mean of its token vectors (no pooling)."""
    if vector and isinstance(vector[0], list):
        count = len(vector)
        return [float(sum(column)) / count for column in zip(*vector, strict=True)]
    return [float(x) for x in vector]
