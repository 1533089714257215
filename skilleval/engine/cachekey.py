"""The response cache's key: a SHA-256 over everything that can change a reply."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from skilleval.engine.base import ModelIdentity, Request

__all__ = ["KEY_FORMAT", "cache_key", "embedding_key"]

KEY_FORMAT = 1
"""Bumped whenever the key's contents change, so old entries are simply never hit."""


def _plain(value: Any) -> Any:
    """JSON fallback for the mapping and sequence types a YAML loader hands us."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    raise TypeError(f"cannot put a {type(value).__name__} into a cache key")


def cache_key(identity: ModelIdentity, request: Request, salt: str) -> str:
    """Hash everything that can change a reply into a hex SHA-256.

    The canonical JSON holds: the model identity key, the decoding settings (temperature,
    top_p, max_tokens), the seed, the trial index, every message, the JSON schema or choices,
    and the provider's salt. ``test_id`` and ``purpose`` are left out: they do not reach the
    model (a provider that answers by test puts the test in its salt instead).

    Args:
        identity: The model that would answer.
        request: The request.
        salt: :meth:`Provider.cache_salt` for this request.

    Returns:
        64 lowercase hex digits.
    """
    payload = {
        "format": KEY_FORMAT,
        "model": identity.key(),
        "decoding": {
            "temperature": float(request.temperature),
            "top_p": float(request.top_p),
            "max_tokens": int(request.max_tokens),
        },
        "seed": int(request.seed),
        "trial": int(request.trial),
        "messages": [m.to_json() for m in request.messages],
        "json_schema": request.json_schema,
        "choices": list(request.choices) if request.choices is not None else None,
        "salt": salt,
    }
    if request.logprobs:
        # Only when asked, so that every other key stays as it was.
        payload["logprobs"] = True
    text = json.dumps(
        payload,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        default=_plain,
    )
    # surrogatepass: a lone surrogate in a prompt (a YAML "\\ud800") still hashes, and uniquely.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def embedding_key(identity: ModelIdentity, text: str, salt: str) -> str:
    """The cache key of one text's vector: the model identity, the text and the provider's
    :meth:`~skilleval.engine.base.Embedder.embed_salt`. Marked as an embedding, so it never
    equals the key of a completion."""
    payload = {"format": KEY_FORMAT, "embedding": text, "model": identity.key(), "salt": salt}
    data = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()
