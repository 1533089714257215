"""The one place that reaches inside llama-cpp-python.

The engine drives llama.cpp more closely than llama-cpp-python's public ``Llama`` class
allows: a second context for batched decoding, KV cells moved in and out of the prefix store,
a grammar judged one token at a time, sampler chains built as the library builds its own.
Some of that needs the library's private parts (its ``_internals`` module, a grammar's GBNF
text and root rule), which can change in any release. Every such use is a named function
here, so a new release is checked and adapted in one module, and ``tests/engine/
test_llama_adapter.py`` fails if any other module of skilleval touches a private attribute
of llama-cpp-python's objects.

:data:`SUPPORTED` is the range of versions this module is written and tested for (the
``llama`` extra in ``pyproject.toml`` declares the same). Rather than trust a version string,
it looks for every binding, field and private part used here and in the rest of the engine:
:func:`check_installed` before a run, once per installed library (the verdict is remembered
under the home), and :func:`require_supported` when a model loads. An installed library that
lacks one gets a one-line :class:`~skilleval.errors.ProviderError` naming the range.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skilleval.engine.wait_policy import choose as choose_wait_policy
from skilleval.errors import ProviderError
from skilleval.util.memo import read_memo, remember

__all__ = [
    "FUNCTIONS",
    "MEMO_FILE",
    "SUPPORTED",
    "TESTED",
    "add_grammar",
    "check_installed",
    "clear_kv",
    "context_of",
    "drop_kv",
    "free_chain",
    "grammar_sampler",
    "grammar_text",
    "installed_version",
    "is_control",
    "missing_api",
    "model_of",
    "require_supported",
    "sample_chain",
    "sampler_chain",
    "vocab_of",
]

SUPPORTED = ">=0.3.32,<0.3.37"
"""The llama-cpp-python versions the engine supports. Every binding it calls is there from
0.3.15 (the first whose context parameters have ``kv_unified``), but only from 0.3.32 does
``Llama`` sample straight from a prompt already in its KV state; before, it evaluated the
prompt's last token again, alone, whose logits then differ in their last bits from the
batched path's (and the prompt prefix could not be reused). The upper bound is the release
after :data:`TESTED`."""

TESTED = "0.3.36"
"""The newest llama-cpp-python the tests run on (the ``dev`` extra pins it)."""

FUNCTIONS = (
    "llama_batch_free",
    "llama_batch_init",
    "llama_context_default_params",
    "llama_decode",
    "llama_free",
    "llama_get_logits_ith",
    "llama_get_memory",
    "llama_init_from_model",
    "llama_memory_clear",
    "llama_memory_seq_cp",
    "llama_memory_seq_rm",
    "llama_model_get_vocab",
    "llama_vocab_is_control",
    "llama_vocab_is_eog",
    "llama_sampler_accept",
    "llama_sampler_apply",
    "llama_sampler_chain_add",
    "llama_sampler_free",
    "llama_sampler_init_grammar",
    "llama_sampler_sample",
    "llama_state_seq_get_data",
    "llama_state_seq_get_size",
    "llama_state_seq_set_data",
    "llama_token_data",
    "llama_token_data_array",
    "llama_token_data_p",
    "llama_vocab_is_eog",
)
"""The low-level bindings (``llama_cpp.llama_cpp``) the engine calls or builds."""

CONTEXT_FIELDS = (
    "n_ctx",
    "n_batch",
    "n_ubatch",
    "n_seq_max",
    "n_threads",
    "n_threads_batch",
    "kv_unified",
    "type_k",
    "type_v",
    "swa_full",
)
"""The fields of ``llama_context_params`` the batched context sets."""

CHAIN_METHODS = (
    "add_penalties",
    "add_greedy",
    "add_top_k",
    "add_typical",
    "add_top_p",
    "add_min_p",
    "add_temp",
    "add_dist",
    "close",
)
"""The methods of the library's private sampler chain (``_internals.LlamaSampler``) used by
:func:`sampler_chain`."""

_SHOWN = 3
"""Missing names spelled out in the error; the rest are counted."""

MEMO_FILE = "llama-api.json"
"""Under the home: :func:`check_installed`'s verdict per installed llama-cpp-python."""

_FINGERPRINTED = ("__init__.py", "llama_cpp.py", "_internals.py", "llama.py", "llama_grammar.py")


@functools.cache
def missing_api() -> tuple[str, ...]:
    """What the installed llama-cpp-python lacks of what the engine uses (empty when it has
    everything); looked for once per process.

    Raises:
        ImportError: llama-cpp-python is not installed at all.
    """
    # OpenMP reads its wait policy once, when llama.cpp's library loads: choose it first.
    choose_wait_policy()
    import llama_cpp  # lazy: start-up time

    missing = [name for name in FUNCTIONS if not hasattr(llama_cpp, name)]
    params = getattr(llama_cpp, "llama_context_params", None)
    fields = {field[0] for field in getattr(params, "_fields_", ())}
    missing += [f"llama_context_params.{name}" for name in CONTEXT_FIELDS if name not in fields]
    for name in ("Llama", "LogitsProcessorList"):
        if not hasattr(llama_cpp, name):
            missing.append(name)
    try:
        from llama_cpp import _internals  # lazy: start-up time
    except ImportError:
        missing.append("llama_cpp._internals")
    else:
        chain = getattr(_internals, "LlamaSampler", None)
        missing += [
            f"_internals.LlamaSampler.{name}" for name in CHAIN_METHODS if not hasattr(chain, name)
        ]
    try:
        from llama_cpp.llama_grammar import LlamaGrammar  # lazy: start-up time

        probe = LlamaGrammar.from_string('root ::= "a"', verbose=False)
    except (ImportError, AttributeError, TypeError, ValueError):
        missing.append("llama_grammar.LlamaGrammar.from_string")
    else:
        missing += [
            f"LlamaGrammar.{name}" for name in ("_grammar", "_root") if not hasattr(probe, name)
        ]
    try:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # lazy: start-up time
    except ImportError:
        missing.append("llama_chat_format.Jinja2ChatFormatter")
    else:
        del Jinja2ChatFormatter
    return tuple(missing)


def require_supported(llm: Any = None) -> None:
    """Check that the installed llama-cpp-python has everything the engine uses, and, given
    a loaded ``llm``, that it reuses a prompt already in its KV state.

    Raises:
        ProviderError: Something is missing: one line naming what, the installed version
            and :data:`SUPPORTED`.
    """
    missing = list(missing_api())
    if llm is not None and not hasattr(llm, "_requires_eval"):
        missing.append("Llama._requires_eval (sampling from a prompt already evaluated)")
    if missing:
        _refuse(installed_version(), missing)


def check_installed(home: Path) -> None:
    """:func:`require_supported` without a model, its verdict remembered under ``home`` for
    the installed library's files (:data:`MEMO_FILE`): a run checks its model before it
    starts, and one answered wholly from the cache never imports llama-cpp-python.

    Raises:
        ProviderError: As :func:`require_supported`.
    """
    key = _fingerprint()
    if key is None:
        return  # not installed: the caller says so
    memo = home / MEMO_FILE
    entry = read_memo(memo).get(key)
    if not (
        isinstance(entry, dict)
        and isinstance(entry.get("version"), str)
        and isinstance(entry.get("missing"), list)
    ):
        entry = {"version": installed_version(), "missing": list(missing_api())}
        remember(memo, key, entry)
    if entry["missing"]:
        _refuse(entry["version"], [str(name) for name in entry["missing"]])


def installed_version() -> str:
    """The version the imported llama-cpp-python says it is."""
    choose_wait_policy()  # before the library loads, as in missing_api
    import llama_cpp  # lazy: start-up time

    return str(getattr(llama_cpp, "__version__", "(version unknown)"))


def _refuse(version: str, missing: Sequence[str]) -> None:
    shown = ", ".join(missing[:_SHOWN])
    if len(missing) > _SHOWN:
        shown += f" and {len(missing) - _SHOWN} more"
    raise ProviderError(
        f"llama-cpp-python {version} lacks {shown}; skilleval supports llama-cpp-python"
        f"{SUPPORTED}: pip install 'llama-cpp-python{SUPPORTED}'"
    )


def _fingerprint() -> str | None:
    """The installed llama-cpp-python's folder and its Python files' sizes and times, with
    what this module looks for: a new install, or a new skilleval, is checked again."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent
    parts = [str(folder), SUPPORTED, *FUNCTIONS, *CONTEXT_FIELDS, *CHAIN_METHODS]
    for name in _FINGERPRINTED:
        try:
            stat = (folder / name).stat()
        except OSError:
            parts.append(f"{name}:-")
        else:
            parts.append(f"{name}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


# -- a loaded model ----------------------------------------------------------------------------


def model_of(llm: Any) -> Any:
    """The ``llama_model`` pointer of a loaded ``llama_cpp.Llama``."""
    return llm.model


def context_of(llm: Any) -> Any:
    """The ``llama_context`` pointer of a loaded ``llama_cpp.Llama``."""
    return llm.ctx


def vocab_of(llm: Any) -> Any:
    """The ``llama_vocab`` pointer of a loaded ``llama_cpp.Llama``'s model."""
    import llama_cpp  # lazy: start-up time

    return llama_cpp.llama_model_get_vocab(llm.model)


def is_control(llm: Any, token: int) -> bool:
    """Whether ``token`` is a control token of ``llm``'s vocabulary or ends generation."""
    import llama_cpp  # lazy: start-up time

    vocab = vocab_of(llm)
    return bool(
        llama_cpp.llama_vocab_is_eog(vocab, token) or llama_cpp.llama_vocab_is_control(vocab, token)
    )


def clear_kv(llm: Any) -> None:
    """Empty the KV cells of ``llm``'s context (every sequence)."""
    import llama_cpp  # lazy: start-up time

    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llm.ctx), True)


def drop_kv(llm: Any, seq: int, start: int) -> None:
    """Drop sequence ``seq``'s KV cells from position ``start`` on, in ``llm``'s context."""
    import llama_cpp  # lazy: start-up time

    llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(llm.ctx), seq, start, -1)


# -- grammars ----------------------------------------------------------------------------------


def grammar_text(grammar: Any) -> tuple[str, str]:
    """The GBNF text of a ``llama_cpp.LlamaGrammar`` and the name of its root rule."""
    return str(grammar._grammar), str(grammar._root)


def grammar_sampler(vocab: Any, grammar: Any) -> Any:
    """A new llama.cpp grammar sampler for ``grammar`` over ``vocab``, made as the library
    makes the grammar stage of its own chain; the caller frees it (or a chain takes it)."""
    import llama_cpp  # lazy: start-up time

    text, root = grammar_text(grammar)
    return llama_cpp.llama_sampler_init_grammar(vocab, text.encode("utf-8"), root.encode("utf-8"))


# -- sampler chains ----------------------------------------------------------------------------


def sampler_chain(
    *,
    n_vocab: int,
    penalty_last_n: int,
    temperature: float,
    top_p: float,
    seed: int,
    vocab: Any = None,
    grammar: Any = None,
) -> Any:
    """A sampler chain built as llama-cpp-python builds one for ``create_completion`` with
    neutral penalties and only ``temperature`` and ``top_p`` shaping the draw: penalties,
    then the grammar (when given, over ``vocab``), then greedy (temperature 0) or the
    top-k/typical/top-p/min-p/temperature filters and a draw seeded with ``seed``."""
    from llama_cpp import _internals  # lazy: start-up time

    chain: Any = _internals.LlamaSampler()  # type: ignore[no-untyped-call]
    # 0.3.35 added the vocabulary's size to the penalty stage; the library passes it where
    # its chain takes it, and so does this.
    sized = "n_vocab" in inspect.signature(chain.add_penalties).parameters
    chain.add_penalties(
        **({"n_vocab": n_vocab} if sized else {}),
        penalty_last_n=penalty_last_n,
        penalty_repeat=1.0,
        penalty_freq=0.0,
        penalty_present=0.0,
    )
    if grammar is not None:
        add_grammar(chain, vocab, grammar)
    if temperature == 0.0:
        chain.add_greedy()
    else:
        # The other filters are neutral.
        chain.add_top_k(0)
        chain.add_typical(1.0, 1)
        chain.add_top_p(top_p, 1)
        chain.add_min_p(0.0, 1)
        chain.add_temp(temperature)
        chain.add_dist(seed)
    return chain


def add_grammar(chain: Any, vocab: Any, grammar: Any) -> None:
    """Append ``grammar``'s stage to a :func:`sampler_chain`."""
    import llama_cpp  # lazy: start-up time

    llama_cpp.llama_sampler_chain_add(chain.sampler, grammar_sampler(vocab, grammar))


def sample_chain(chain: Any, ctx: Any, index: int) -> int:
    """The token a :func:`sampler_chain` picks from output ``index`` of ``ctx``'s last decode."""
    import llama_cpp  # lazy: start-up time

    return int(llama_cpp.llama_sampler_sample(chain.sampler, ctx, index))


def free_chain(chain: Any) -> None:
    """Free a :func:`sampler_chain` and every stage in it."""
    chain.close()
