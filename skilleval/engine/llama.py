"""In-process GGUF inference through llama-cpp-python.

One :class:`LlamaProvider` owns one ``llama_cpp.Llama``, loaded on the first call and used
by one call at a time. Prompts are rendered with the model's own chat template (the GGUF's
``tokenizer.chat_template``), so what is scored is what the model was trained to see.

Requests are free text (greedy, or seeded sampling), held to a ``json_schema`` by a grammar,
or ``choices`` scored by their tokens' log-probability. One-at-a-time calls are
``engine/llama_single.py``; batched ones ``engine/llama_batched.py``, in lanes
(``engine/llama_lanes.py``).
Nothing here writes to stdout: it is reserved for ``--json`` output.
"""

from __future__ import annotations

import contextlib
import importlib.util
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skilleval.api import Capabilities
from skilleval.engine.base import (
    Completion,
    Message,
    ModelIdentity,
    ModelSpec,
    ProviderContext,
    Request,
    clean_reply,
)
from skilleval.engine.greedy_grammar import LOOP_GUARD, guards_loops
from skilleval.engine.kernel_policy import KernelPolicy, Kernels
from skilleval.engine.lane_probe import LanePolicy, lane_count
from skilleval.engine.llama_adapter import check_installed, require_supported
from skilleval.engine.llama_batched import MIN_CELLS, BatchedLlama
from skilleval.engine.llama_build import warn_without_gpu
from skilleval.engine.llama_canary import Canary, canary, canary_model, ensure_runs
from skilleval.engine.llama_checks import (
    GGUF_MAGIC,
    SCORE_DIGITS,
    check_batched,
    check_gguf,
    check_request,
    runtime_version,
)
from skilleval.engine.llama_config import (
    GGUF_SCHEMA,
    N_BATCH,
    N_CTX,
    LlamaConfig,
    batch_width,
    default_threads,
)
from skilleval.engine.llama_embed import POOLING, GgufEmbedder
from skilleval.engine.llama_file import ModelFile
from skilleval.engine.llama_lanes import Lanes
from skilleval.engine.llama_single import SingleCalls, open_model, prefix_store
from skilleval.engine.llama_template import CHATML_TEMPLATE, ModelTemplate
from skilleval.engine.prefix_store import PrefixStore
from skilleval.engine.wait_policy import ThreadCount, WaitPolicy, thread_count
from skilleval.engine.wait_policy import choose as choose_wait_policy
from skilleval.errors import ProviderError
from skilleval.plugins.markers import ProviderType, provider, registration_of

__all__ = [
    "CHATML_TEMPLATE",
    "GGUF_MAGIC",
    "GGUF_SCHEMA",
    "INSTALL_HINT",
    "N_BATCH",
    "N_CTX",
    "SCORE_DIGITS",
    "SCORING_VERSION",
    "LlamaConfig",
    "LlamaProvider",
    "gguf",
    "gguf_spec",
]

INSTALL_HINT = "install with pip install 'skilleval[llama]'"
SCORING_VERSION = 2
"""Part of the cache salt, bumped when choice scoring changes (2: options end at end-of-turn)."""

IN_FLIGHT = 2
"""Calls a batching provider takes at once, per slot."""


@provider(
    "gguf",
    schema=GGUF_SCHEMA,
    configure=LlamaConfig.configure,
    implied_by="path",
    capabilities=Capabilities(timed=True, keep_loaded=True, measured=True, scores=True),
)
def gguf(config: LlamaConfig, context: ProviderContext) -> LlamaProvider:
    """A GGUF model run in this process by llama-cpp-python (the embedded one by default)."""
    return LlamaProvider(config, context.home, jobs=context.jobs)


def gguf_spec(config: LlamaConfig | None = None) -> ModelSpec:
    """A spec for the embedded model (or ``config``), for callers that have no suite."""
    config = config or LlamaConfig()
    reg = registration_of(gguf)
    assert isinstance(reg, ProviderType)  # the mark @provider put there
    return ModelSpec(reg, config, config.label)


class LlamaProvider(SingleCalls):
    """A GGUF model run in this process.

    Args:
        config: How to load the model. ``path`` ``"default"`` means the embedded model.
        memo_dir: Where the model file's SHA-256 (and other memos) are remembered.
        jobs: ``--jobs``; above 1 it sets the batch width unless ``parallel`` is set.

    Attributes:
        load_ms: How long loading took, once loaded.
        batch_width: How many requests decode together, whether they come as a list
            (:meth:`complete_batch`) or as calls from several threads.
        threads: The CPU threads llama.cpp generates with.
    """

    def __init__(self, config: LlamaConfig, memo_dir: Path | str, *, jobs: int = 1) -> None:
        self.config = config
        self.memo_dir = Path(memo_dir)
        self.load_ms: float | None = None
        self.batch_width = batch_width(config, jobs)
        self._auto = config.parallel is None and jobs <= 1  # lanes if they win (_settle_lanes)
        self.threads = config.threads or default_threads()
        self._lanes = Lanes(self._lane, self.batch_width)
        self._busy_s = 0.0
        self._generated = 0
        self._file = ModelFile(config.path, self.memo_dir)
        self._llm: Any = None
        self._template: ModelTemplate | None = None
        self._grammars: dict[str, Any] = {}
        self._eval_log: list[int] = []
        self._canonical = 0
        """How many leading KV positions were evaluated in batches of two or more tokens."""
        self._kernels = KernelPolicy(self.memo_dir, self.batch_width, config, self._build_of)
        self._lane_policy = LanePolicy(self.memo_dir, config.n_gpu_layers, self._build_of)
        self._lock = threading.Lock()
        self._once = threading.RLock()  # around the width, lanes and store threads share
        self._embedder: GgufEmbedder | None = None
        self._store: PrefixStore | None = None
        self.wait_policy: WaitPolicy | None = None
        """How llama.cpp's threads wait, decided when the model first loads."""
        self.thread_count: ThreadCount | None = None
        """How many threads llama.cpp got and why, decided when the model first loads."""

    @property
    def max_concurrency(self) -> int:
        """Calls taken at once: two a slot when batching (a freed slot finds one), else one."""
        return self.batch_width * IN_FLIGHT if self.batch_width > 1 else 1

    # -- Provider protocol -------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The GGUF file this provider runs (engine/llama_file.py; an ``hf:`` one is fetched
        on first use).

        Raises:
            ProviderError: The embedded model is not installed, or a hub file cannot be
                fetched (:class:`~skilleval.errors.ModelDownloadError`).
        """
        return self._file.path

    def identity(self) -> ModelIdentity:
        """File name, size and SHA-256 of the GGUF (and where a hub file came from); does not
        load the model.

        Raises:
            ProviderError: The file is missing or unreadable, or cannot be fetched.
        """
        return self._file.identity()

    def check(self) -> None:
        """Whether the model can be loaded at all, without loading it.

        Raises:
            ProviderError: The embedded model or llama-cpp-python is not installed, the
                installed llama-cpp-python lacks what the engine uses, or the file is missing
                or is not a GGUF.
        """
        check_gguf(self.path)
        if importlib.util.find_spec("llama_cpp") is None:
            raise ProviderError(f"llama-cpp-python is not installed; {INSTALL_HINT}")
        # A library that crashes is the deeper problem: say that first.
        self._canary()
        check_installed(self.memo_dir)
        with contextlib.suppress(ProviderError):  # a file llama.cpp rejects fails at its call
            self._settle_width()  # before the run's wrappers copy the width

    def cache_salt(self, request: Request) -> str:
        """The runtime version, the features its build was compiled with (docs/engine.md,
        "Determinism and its scope") and the scoring method, which can change replies for the
        same file, and for a judge's reply the loop guard's version."""
        built = ",".join(self._canary().features)
        salt = f"llama-cpp-python={runtime_version()};build={built};scoring={SCORING_VERSION}"
        with contextlib.suppress(ProviderError):  # a model that cannot load has no verdict
            salt += self._kernels.salt(self._verdict())
        return f"{salt};loop-guard={LOOP_GUARD}" if guards_loops(request) else salt

    def complete(self, request: Request) -> Completion:
        """Answer one request.

        Raises:
            ProviderError: The model cannot be loaded, the prompt does not fit the context, the
                request is malformed, or a constrained reply does not validate.
        """
        check_request(request)
        self._settle_width()
        if self.batch_width > 1 and not request.logprobs:
            self._loaded()
            return self._lanes.ask(request)
        with self._lock:
            llm = self._load()
            prompt = self._prompt_tokens(request.messages)
            n_ctx = int(llm.n_ctx())
            if len(prompt) >= n_ctx:
                fix = "raise model.n_ctx" if self.batch_width <= 1 else "run it with parallel: 1"
                raise ProviderError(
                    f"prompt is {len(prompt)} tokens but the context holds {n_ctx}; {fix}"
                )
            try:
                if request.choices is not None:
                    return clean_reply(self._choose(llm, prompt, request))
                return clean_reply(self._generate(llm, prompt, request))
            except BaseException:
                # The KV state may be half-written; the next call starts from scratch.
                self._canonical = 0
                llm.n_tokens = 0
                raise

    def complete_batch(self, requests: Sequence[Request]) -> list[Completion | ProviderError]:
        """Answer several requests, decoding them together (choice requests scored in the
        same steps as the generations); one that fails gets its :class:`ProviderError` in its
        place, the others unaffected."""
        self._settle_width()
        if self.batch_width > 1:
            self._loaded()
        return self._lanes.answer_all(
            requests, batches=self.batch_width > 1, check=check_batched, one=self.complete
        )

    def engine_busy(self) -> tuple[int, float]:
        """Tokens generated and seconds spent generating them (prompt evaluation included),
        over every call so far: the model's own throughput, free of any queueing."""
        with self._lock:
            generated, busy_s = self._lanes.busy()
            return self._generated + generated, self._busy_s + busy_s

    def engine_info(self) -> dict[str, Any]:
        """How the engine runs, for the run's environment block: threads, batch width, how
        conversations were laid out for the chat template (when that changed any), the layers
        offloaded to a GPU (when set) and the features llama.cpp was compiled with."""
        info: dict[str, Any] = {"threads": self.threads, "batch_width": self.batch_width}
        if self.thread_count is not None:
            info["threads_reason"] = self.thread_count.reason
        laid_out = self._template.laid_out() if self._template is not None else []
        if laid_out:
            info["chat_layout"] = laid_out
        if self.wait_policy is not None:
            info["wait_policy"] = self.wait_policy.to_json()
        if self.config.gpu_layers is not None:
            info["gpu_layers"] = self.config.gpu_layers
        known = canary(self.memo_dir, None, run=False)
        if known is not None and known.features:
            info["instruction_sets"] = list(known.features)
        lanes = self._lanes
        shape = (lanes.count, lanes.width, lanes.threads or self.threads)
        return info | self._kernels.info() | self._lane_policy.info(*shape)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of ``texts`` from the same GGUF, through a second instance in embedding mode
        (see :mod:`~skilleval.engine.llama_embed`), created on the first call."""
        with self._lock:
            config, threads = self.config, self._settle_threads()
            self._embedder = self._embedder or GgufEmbedder(
                self.path, config.n_ctx, threads, INSTALL_HINT, gpu_layers=config.gpu_layers,
                canary=self._canary,
            )  # fmt: skip
            embedder = self._embedder
        return embedder.embed(texts)

    def embed_salt(self) -> str:
        """The runtime version and pooling, which can change a vector for the same file."""
        return f"llama-cpp-python={runtime_version()};pooling={POOLING}"

    def close(self) -> None:
        """Free the model; the next call loads it again."""
        if self._embedder is not None:
            self._embedder.close()
        self._lanes.close()
        with self._lock:
            if self._llm is not None:
                self._llm.close()
                self._llm = None
                self._template = None
                self._canonical = 0

    # -- loading -------------------------------------------------------------------------------

    def _load(self) -> Any:
        if self._llm is not None:
            return self._llm
        path = self.path
        check_gguf(path)
        # How llama.cpp's threads wait, from what the other processes do now (before OpenMP
        # is loaded, which reads it once): engine/wait_policy.py.
        self.wait_policy = choose_wait_policy()
        self._settle_threads()
        # Before llama.cpp runs in this process: a build that crashes on this CPU is found in
        # a child process, and stops the run with one line (engine/llama_canary.py).
        found = self._canary()
        warn_without_gpu(self.config.gpu_layers, found.gpu_offload)
        try:
            import llama_cpp  # noqa: F401  (OpenMP reads the wait policy as the library loads)
        except ImportError:
            raise ProviderError(f"llama-cpp-python is not installed; {INSTALL_HINT}") from None
        require_supported()

        # Batching (asked, or in lanes by default), the model's own context only tokenizes, so
        # it is small, unless the kernel probe forbids batching (kernel_policy.py).
        small = self._kernels.may_batch() or self._auto_lanes()
        n_ctx = min(self.config.n_ctx, MIN_CELLS) if small else self.config.n_ctx
        start = time.perf_counter()
        llm = open_model(path, self.config, n_ctx, self.threads)
        require_supported(llm)
        if self._kernels.found is None:
            self._kernels.measure(llm)
        if small and not (self._kernels.batches() or self._auto_lanes()):
            llm.close()  # one at a time after all: the model's own context decodes
            llm = open_model(path, self.config, self.config.n_ctx, self.threads)
        self.load_ms = (time.perf_counter() - start) * 1000.0
        self._grid = self._kernels.grid
        self._template = ModelTemplate(llm)
        self._count_evals(llm)
        self._llm = llm
        return llm

    def _auto_lanes(self) -> bool:
        """Whether a model with no width asked is known to decode in lanes (one a core)."""
        found = self._lane_policy.recall(*self._lane_shape()) if self._auto else None
        kernels = self._kernels.recall()
        return bool(found and found.use_lanes and (not kernels or kernels.batching_identical))

    def _loaded(self) -> None:
        """The model loaded (once, before lanes that would each load it ask at once)."""
        with self._lock:
            self._load()

    def _settle_threads(self) -> int:
        """``threads`` as set, else chosen once from what the machine does now (fewer when
        other processes keep cores busy: engine/wait_policy.py)."""
        if self.thread_count is None:
            self.thread_count = thread_count(self.config.threads, default_threads())
            self.threads = self.thread_count.count
        return self.threads

    def _build_of(self) -> tuple[str, str, tuple[str, ...]]:  # what the probe's verdict is kept by
        return self.identity().sha256 or "", runtime_version(), self._canary().features

    def _verdict(self) -> Kernels:
        """The kernel probe's verdict: remembered, or measured now (loading the model)."""
        if self._kernels.recall() is None:
            with self._lock:
                self._load()  # measures it
        return self._kernels.known()

    def _settle_width(self) -> None:
        """Batch only where that gives the bytes one at a time gives (engine/kernel_policy.py),
        and in one-thread lanes where those are faster (engine/lane_probe.py)."""
        with self._once:  # the first calls may come from several threads at once
            if not self._kernels.settled:
                self.batch_width = self._kernels.width(self._verdict(), self.path.name)
                self._settle_lanes()

    def _settle_lanes(self) -> None:
        """Lanes where the lane probe's verdict plans them, for the width asked or one request a
        lane with none asked (the model's own context then only tokenizes, as batching)."""
        threads, lanes = self._lane_shape()
        auto = self._auto and self._kernels.known().batching_identical
        if (self.batch_width <= 1 and not auto) or lanes <= 1:
            return  # nothing to split: no verdict could change the decoder
        found = self._lane_policy.recall(threads, lanes)
        if found is None:
            with self._lock:
                found = self._lane_policy.measure(self._load(), threads, lanes)
        shape = found.plan(self.batch_width, threads, auto) if found is not None else None
        if shape is None:
            return
        self.batch_width = shape[0] if auto else self.batch_width
        self._lanes.split(*shape)
        if auto and self._llm is not None and int(self._llm.n_ctx()) > MIN_CELLS:
            with self._lock:  # measured now: the own context made small, as in _load
                self._llm.close()
                self._llm = None
                self._load()

    def _lane_shape(self) -> tuple[int, int]:
        """The threads, and the one-thread lanes they may become (engine/lane_probe.py)."""
        threads = self._settle_threads()
        return threads, lane_count(threads, self.config.threads, default_threads())

    def _lane(self, width: int, threads: int | None) -> BatchedLlama:
        """One lane's decoder (engine/llama_lanes.py) on this model."""
        config, turn_end = self.config, self.turn_end
        return BatchedLlama(
            width, config.n_ctx, config.n_batch, load=self._load, threads=threads,
            prompt_tokens=self._prompt_tokens, grammar=self._grammar, stops=self._stops,
            store=self._prefixes, turn_end=turn_end,
        )  # fmt: skip

    def _canary(self) -> Canary:
        """The canary's verdict for this llama.cpp build and CPU, decoding with the embedded
        model (or this one); raises :class:`~skilleval.errors.InstallationError` if it crashed."""
        return ensure_runs(self.memo_dir, canary_model(self.path), self.threads)

    def template(self) -> ModelTemplate:
        """The loaded model's chat template (loads the model)."""
        self._load()
        assert self._template is not None  # set by _load
        return self._template

    def turn_end(self) -> int:
        """The end-of-turn token choice scoring appends to every option (loads the model)."""
        return self.template().turn_end

    def _prefixes(self) -> PrefixStore:
        """The prompt prefixes evaluated by earlier runs of this model file on this runtime and
        build, kept under the home (``engine/prefix_store.py``)."""
        with self._once:  # lanes ask for it at once
            if self._store is None:
                features = self._canary().features
                key, llm = self.identity().key(), self._load()  # _load sets the grid
                self._store = prefix_store(self.memo_dir, key, llm, features, self._grid)
            return self._store

    def _prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        return self.template().tokens(messages)

    def _stops(self) -> list[str]:
        return self.template().stops()
