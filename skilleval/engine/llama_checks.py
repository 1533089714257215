"""Checks and helpers of the ``gguf`` provider that need no llama-cpp-python.

Whether a file is a GGUF model, whether a request is well formed, whether a JSON schema is
valid and a constrained reply matches it; the pick among scored choices; the seed llama.cpp
is given; and the one-line wording of a runtime failure.
"""

from __future__ import annotations

import functools
import json
import math
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skilleval.engine.base import Request
from skilleval.errors import InvalidReplyError, ProviderError
from skilleval.util.home import home_dir
from skilleval.util.installed import version_of

__all__ = [
    "GGUF_MAGIC",
    "SCORE_DIGITS",
    "check_batched",
    "check_gguf",
    "check_request",
    "check_schema",
    "native_seed",
    "one_line",
    "pick",
    "runtime_version",
    "token_text",
    "validate_json",
]

GGUF_MAGIC = b"GGUF"

# llama.cpp treats this seed value as "pick one at random"; it must never reach it.
_RANDOM_SEED = 0xFFFFFFFF


def native_seed(seed: int) -> int:
    return seed % _RANDOM_SEED


@functools.cache
def runtime_version() -> str:
    """The installed llama-cpp-python's version (read once: every cache key asks for it;
    remembered under the home while the installed packages stay the same)."""
    return version_of("llama-cpp-python", home_dir()) or "missing"


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


SCORE_DIGITS = 6
"""Choice scores are rounded so they print and compare stably."""


def pick(scores: Mapping[str, float], request: Request) -> str:
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
    rng = random.Random(native_seed(request.seed))
    return rng.choices(kept, weights=[weights[o] for o in kept])[0]


def token_text(llm: Any, token: int) -> str:
    if token < 0:
        return ""
    return bytes(llm.detokenize([token], special=True)).decode("utf-8", errors="replace")


def check_gguf(path: Path) -> None:
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


def check_request(request: Request) -> None:
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


def check_schema(schema: Mapping[str, Any]) -> None:
    import jsonschema  # type: ignore[import-untyped,unused-ignore]  # lazy: start-up time

    try:
        jsonschema.validators.validator_for(schema).check_schema(dict(schema))
    except jsonschema.SchemaError as exc:
        raise ProviderError(f"json_schema is not a valid JSON Schema: {exc.message}") from None


def check_batched(request: Request) -> None:
    """:func:`check_request`, and a schema's own validity, before a request joins a batch."""
    check_request(request)
    if request.json_schema is not None:
        check_schema(request.json_schema)


def validate_json(text: str, schema: Mapping[str, Any]) -> None:
    import jsonschema  # type: ignore[import-untyped,unused-ignore]  # lazy: start-up time

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
