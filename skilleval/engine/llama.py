"""In-process GGUF inference through llama-cpp-python.

One :class:`LlamaProvider` owns one ``llama_cpp.Llama``, loaded on the first call and used
by one call at a time. Prompts are rendered with the model's own chat template (the GGUF's
``tokenizer.chat_template``), so what is scored is what the model was trained to see.

Three kinds of request:

* free text: ``create_chat_completion``; greedy when ``temperature == 0``, otherwise
  temperature/top_p sampling seeded with ``request.seed``;
* ``json_schema``: the same call, constrained by a grammar that llama-cpp-python derives from
  the schema; the reply is then parsed and validated with ``jsonschema``;
* ``choices``: no free generation at all. Every option is scored by the total log-probability
  of its tokens followed by the end-of-turn token, given the prompt; the highest score wins
  (or, when sampling, an option is drawn from the softmax of the scores).

Nothing here writes to stdout: it is reserved for ``--json`` output.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from skilleval.engine.base import (
    Completion,
    Message,
    ModelIdentity,
    ModelSpec,
    ProviderContext,
    Request,
)
from skilleval.engine.embedded import default_model_path
from skilleval.engine.identity import file_identity
from skilleval.errors import InvalidReplyError, ProviderError
from skilleval.plugins.markers import ConfigContext, ProviderType, provider, registration_of

INSTALL_HINT = "install with pip install 'skilleval[llama]'"
GGUF_MAGIC = b"GGUF"
SCORING_VERSION = 1
"""Part of the cache salt: bump when choice scoring changes so stale scores are not reused."""

SCORE_DIGITS = 6
"""Choice scores are rounded so they print and compare stably."""

# llama.cpp treats this seed value as "pick one at random"; it must never reach it.
_RANDOM_SEED = 0xFFFFFFFF

# Used when a GGUF carries no chat template of its own.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def _native_seed(seed: int) -> int:
    return seed % _RANDOM_SEED


def _runtime_version() -> str:
    try:
        return metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        return "missing"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


N_CTX = 4096
N_BATCH = 512


@dataclass(frozen=True, slots=True)
class LlamaConfig:
    """How to load a GGUF model: ``model: {provider: gguf, path, n_ctx, threads, n_batch}``."""

    path: str = "default"
    """``default`` (the embedded model) or a .gguf file, made absolute against the suite."""
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
        if written != "default":
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
        "path": {"type": "string", "minLength": 1, "description": "`default` or a .gguf file."},
        "n_ctx": {"type": "integer", "minimum": 256},
        "threads": {"type": "integer", "minimum": 1},
        "n_batch": {"type": "integer", "minimum": 1},
    },
}


@provider("gguf", schema=GGUF_SCHEMA, configure=LlamaConfig.configure, implied_by="path")
def gguf(config: LlamaConfig, context: ProviderContext) -> LlamaProvider:
    """A GGUF model run in this process by llama-cpp-python (the embedded one by default)."""
    return LlamaProvider(config, context.home)


def gguf_spec(config: LlamaConfig | None = None) -> ModelSpec:
    """A spec for the embedded model (or ``config``), for callers that have no suite."""
    config = config or LlamaConfig()
    reg = registration_of(gguf)
    assert isinstance(reg, ProviderType)  # the mark @provider put there
    return ModelSpec(reg, config, config.label)


class LlamaProvider:
    """A GGUF model run in this process.

    Args:
        config: How to load the model. ``path`` ``"default"`` means the embedded model.
        memo_dir: Where the model file's SHA-256 is remembered (see
            :func:`~skilleval.engine.identity.file_identity`).

    Attributes:
        load_ms: How long loading took, once loaded.
    """

    max_concurrency: int = 1

    def __init__(self, config: LlamaConfig, memo_dir: Path | str) -> None:
        self.config = config
        self.memo_dir = Path(memo_dir)
        self.load_ms: float | None = None
        self._path: Path | None = None
        self._identity: ModelIdentity | None = None
        self._llm: Any = None
        self._formatter: Any = None
        self._grammars: dict[str, Any] = {}
        self._eval_log: list[int] = []
        self._canonical = 0
        """How many leading KV positions were evaluated in batches of two or more tokens."""
        self._lock = threading.Lock()

    # -- Provider protocol -------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The GGUF file this provider runs (the embedded model for ``default``)."""
        if self._path is None:
            raw = self.config.path
            if raw == "default":
                self._path = default_model_path()
            else:
                self._path = Path(raw).expanduser()
        return self._path

    def identity(self) -> ModelIdentity:
        """File name, size and SHA-256 of the GGUF; does not load the model.

        Raises:
            ProviderError: The file is missing or unreadable.
        """
        if self._identity is None:
            self._identity = file_identity(self.path, self.memo_dir)
        return self._identity

    def cache_salt(self, request: Request) -> str:
        """The runtime version and scoring method, which can change replies for the same file."""
        return f"llama-cpp-python={_runtime_version()};scoring={SCORING_VERSION}"

    def complete(self, request: Request) -> Completion:
        """Answer one request.

        Raises:
            ProviderError: The model cannot be loaded, the prompt does not fit the context, the
                request is malformed, or a constrained reply does not validate.
        """
        _check_request(request)
        with self._lock:
            llm = self._load()
            prompt = self._prompt_tokens(request.messages)
            n_ctx = int(llm.n_ctx())
            if len(prompt) >= n_ctx:
                raise ProviderError(
                    f"prompt is {len(prompt)} tokens but the context holds {n_ctx}; "
                    "raise model.n_ctx"
                )
            try:
                if request.choices is not None:
                    return self._choose(llm, prompt, request)
                return self._generate(llm, prompt, request)
            except BaseException:
                # The KV state may be half-written; the next call starts from scratch.
                self._canonical = 0
                llm.n_tokens = 0
                raise

    def close(self) -> None:
        """Free the model; the next call loads it again."""
        with self._lock:
            if self._llm is not None:
                self._llm.close()
                self._llm = None
                self._formatter = None
                self._canonical = 0

    # -- loading -------------------------------------------------------------------------------

    def _load(self) -> Any:
        if self._llm is not None:
            return self._llm
        path = self.path
        _check_gguf(path)
        # llama.cpp's OpenMP threads spin while they wait. On a machine whose cores are busy
        # (a shared CI runner, parallel test workers) that makes inference 2-4 times slower
        # and erratic, against a few per cent gained on an idle one (bench/README.md).
        if hasattr(os, "getloadavg") and os.getloadavg()[0] >= (os.cpu_count() or 1) - 1:
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            from llama_cpp import Llama
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError:
            raise ProviderError(f"llama-cpp-python is not installed; {INSTALL_HINT}") from None

        # n_ubatch == n_batch, so llama.cpp never splits a batch that _prefill has shaped.
        n_batch = max(2, self.config.n_batch)
        start = time.perf_counter()
        try:
            llm: Any = Llama(
                model_path=str(path),
                n_ctx=self.config.n_ctx,
                n_batch=n_batch,
                n_ubatch=n_batch,
                n_threads=self.config.threads,
                n_threads_batch=self.config.threads,
                seed=0,
                logits_all=False,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ProviderError(
                f"could not load {path}: llama.cpp rejected it, so it is probably truncated or "
                f"corrupt ({_one_line(exc)})"
            ) from None
        self.load_ms = (time.perf_counter() - start) * 1000.0

        eos_id = int(llm.token_eos())
        bos_id = int(llm.token_bos())
        template = llm.metadata.get("tokenizer.chat_template") or CHATML_TEMPLATE
        self._formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=_token_text(llm, eos_id),
            bos_token=_token_text(llm, bos_id),
            stop_token_ids=[eos_id],
        )
        # The same formatter renders prompts for counting and scoring and for generation, so
        # the token counts reported are exactly those the model saw.
        llm.chat_handler = self._formatter.to_chat_handler()

        original_eval = llm.eval

        def counting_eval(tokens: Sequence[int]) -> None:
            # Every batch llama.cpp decodes is recorded, so tokens_evaluated is measured rather
            # than inferred from prefix arithmetic.
            self._eval_log.append(len(tokens))
            original_eval(tokens)

        llm.eval = counting_eval
        self._llm = llm
        return llm

    def _prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        try:
            rendered = self._formatter(messages=[m.to_json() for m in messages])
        except Exception as exc:
            # Templates can raise anything (jinja2 errors, raise_exception's ValueError).
            raise ProviderError(
                f"the model's chat template rejected the messages: {_one_line(exc)}"
            ) from None
        tokens = self._llm.tokenize(
            rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True
        )
        return [int(t) for t in tokens]

    # -- prompt evaluation ---------------------------------------------------------------------

    def _prefill(self, llm: Any, prompt: list[int]) -> int:
        """Bring the KV state to exactly ``prompt``, reusing what it can; return tokens evaluated.

        llama.cpp's CPU kernels give bitwise-different results for a one-token batch than for
        the same token inside a larger batch, while any split into batches of two or more
        tokens gives identical bits. So a position is reused only if it was evaluated in such
        a batch (``_canonical``), the last batch always holds at least two tokens, and no
        batch is ever a single token. The logits, and so greedy text and choice scores, then
        do not depend on what the provider was asked before.
        """
        n = len(prompt)
        cached = llm.input_ids[: min(int(llm.n_tokens), self._canonical)]
        reuse = 0
        for a, b in zip(cached, prompt, strict=False):
            if int(a) != b:
                break
            reuse += 1
        reuse = max(0, min(reuse, n - 2))
        llm.n_tokens = reuse
        size = int(llm.n_batch)
        pos = reuse
        while pos < n:
            step = min(size, n - pos)
            if n - pos - step == 1:
                step -= 1
            llm.eval(prompt[pos : pos + step])
            pos += step
        self._canonical = n
        return n - reuse

    # -- free and schema-constrained generation -----------------------------------------------

    def _generate(self, llm: Any, prompt: list[int], request: Request) -> Completion:
        grammar = None
        if request.json_schema is not None:
            _check_schema(request.json_schema)
            grammar = self._grammar(request.json_schema)
        sampled = request.temperature > 0
        start = time.perf_counter()
        evaluated = self._prefill(llm, prompt)
        # The library finds the whole prompt in the KV state and samples straight from the
        # logits _prefill left; the first eval it records is whatever it still had to decode.
        self._eval_log.clear()
        try:
            out = llm.create_chat_completion(
                messages=[m.to_json() for m in request.messages],
                temperature=float(request.temperature) if sampled else 0.0,
                top_p=float(request.top_p) if sampled else 1.0,
                # Only temperature and top_p shape sampling; llama.cpp's other filters are off.
                top_k=0,
                min_p=0.0,
                typical_p=1.0,
                repeat_penalty=1.0,
                seed=_native_seed(request.seed),
                max_tokens=request.max_tokens,
                grammar=grammar,
            )
        except (ValueError, RuntimeError) as exc:
            raise ProviderError(f"llama.cpp failed: {_one_line(exc)}") from None
        latency_ms = (time.perf_counter() - start) * 1000.0

        choice = out["choices"][0]
        text = choice["message"]["content"] or ""
        finish_reason = choice["finish_reason"] or "stop"
        usage = out["usage"]
        library_evaluated = self._eval_log[0] if self._eval_log else 0
        if library_evaluated:
            # The library rendered a different prompt and decoded part of it its own way;
            # trust none of the KV state for reuse.
            self._canonical = 0
        completion = Completion(
            text=text,
            finish_reason=finish_reason,
            prompt_tokens=int(usage["prompt_tokens"]),
            completion_tokens=int(usage["completion_tokens"]),
            latency_ms=latency_ms,
            tokens_evaluated=evaluated + library_evaluated,
        )
        if request.json_schema is not None and not completion.truncated:
            _validate_json(text, request.json_schema)
        return completion

    def _grammar(self, schema: Mapping[str, Any]) -> Any:
        from llama_cpp.llama_grammar import LlamaGrammar

        canonical = json.dumps(schema, sort_keys=True, default=dict)
        grammar = self._grammars.get(canonical)
        if grammar is None:
            try:
                grammar = LlamaGrammar.from_json_schema(
                    json.dumps(schema, default=dict), verbose=False
                )
            except Exception as exc:
                # The converter raises bare Exceptions and ValueErrors for unsupported schemas.
                raise ProviderError(
                    f"json_schema cannot be turned into a grammar: {_one_line(exc)}"
                ) from None
            self._grammars[canonical] = grammar
        return grammar

    # -- constrained choice by log-probability -------------------------------------------------

    def _choose(self, llm: Any, prompt: list[int], request: Request) -> Completion:
        import numpy as np

        assert request.choices is not None
        eos = int(llm.token_eos())
        n_vocab = int(llm.n_vocab())

        def logprobs() -> Any:
            from llama_cpp import llama_get_logits_ith

            raw = np.ctypeslib.as_array(llama_get_logits_ith(llm.ctx, -1), shape=(n_vocab,))
            x = raw.astype(np.float64)
            x -= x.max()
            return x - math.log(float(np.exp(x).sum()))

        start = time.perf_counter()
        evaluated = self._prefill(llm, prompt)
        first = logprobs()

        scores: dict[str, float] = {}
        lengths: dict[str, int] = {}
        for option in request.choices:
            tokens = [int(t) for t in llm.tokenize(option.encode("utf-8"), add_bos=False)]
            lengths[option] = len(tokens)
            sequence = [*tokens, eos]
            total = float(first[sequence[0]])
            llm.n_tokens = len(prompt)
            for current, following in itertools.pairwise(sequence):
                llm.eval([current])
                total += float(logprobs()[following])
            scores[option] = round(total, SCORE_DIGITS)
        latency_ms = (time.perf_counter() - start) * 1000.0

        picked = _pick(scores, request)
        return Completion(
            text=picked,
            finish_reason="stop",
            prompt_tokens=len(prompt),
            completion_tokens=lengths[picked],
            latency_ms=latency_ms,
            choice_scores=scores,
            tokens_evaluated=evaluated,
        )


def _pick(scores: Mapping[str, float], request: Request) -> str:
    """Greedy: the best score, earliest option on ties. Sampled: softmax(score/T), top_p, seed."""
    options = list(scores)
    if request.temperature <= 0:
        return max(options, key=lambda o: (scores[o], -options.index(o)))
    top = max(scores.values())
    weights = {o: math.exp((scores[o] - top) / request.temperature) for o in options}
    norm = sum(weights.values())
    ranked = sorted(options, key=lambda o: (-weights[o], options.index(o)))
    kept: list[str] = []
    mass = 0.0
    for option in ranked:
        kept.append(option)
        mass += weights[option] / norm
        if mass >= request.top_p:
            break
    rng = random.Random(_native_seed(request.seed))
    return rng.choices(kept, weights=[weights[o] for o in kept])[0]


def _token_text(llm: Any, token: int) -> str:
    if token < 0:
        return ""
    return bytes(llm.detokenize([token], special=True)).decode("utf-8", errors="replace")


def _check_gguf(path: Path) -> None:
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except FileNotFoundError:
        raise ProviderError(f"model file not found: {path}") from None
    except IsADirectoryError:
        raise ProviderError(f"model path is a directory, not a GGUF file: {path}") from None
    except OSError as exc:
        raise ProviderError(f"cannot read model file {path}: {exc.strerror or exc}") from None
    if magic != GGUF_MAGIC:
        raise ProviderError(f"{path} is not a GGUF file (it does not start with 'GGUF')")


def _check_request(request: Request) -> None:
    if request.max_tokens < 1:
        raise ProviderError(f"max_tokens must be at least 1, not {request.max_tokens}")
    if request.choices is not None:
        if request.json_schema is not None:
            raise ProviderError("a request can constrain to choices or to a json_schema, not both")
        if not request.choices:
            raise ProviderError("choices is empty")
        if any(not c for c in request.choices):
            raise ProviderError("choices must be non-empty strings")
        if len(set(request.choices)) != len(request.choices):
            raise ProviderError("choices must be distinct")


def _check_schema(schema: Mapping[str, Any]) -> None:
    import jsonschema  # type: ignore[import-untyped,unused-ignore]

    try:
        jsonschema.validators.validator_for(schema).check_schema(dict(schema))
    except jsonschema.SchemaError as exc:
        raise ProviderError(f"json_schema is not a valid JSON Schema: {exc.message}") from None


def _validate_json(text: str, schema: Mapping[str, Any]) -> None:
    import jsonschema  # type: ignore[import-untyped,unused-ignore]

    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidReplyError(f"constrained reply is not valid JSON: {exc}") from None
    validator = jsonschema.validators.validator_for(schema)(dict(schema))
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise InvalidReplyError(
            f"constrained reply does not match its schema at {where}: {error.message} "
            "(the grammar cannot enforce minimum/maximum and similar keywords; use enum)"
        )
