"""What the providers that call a user's own application share: the ``python``, ``exec`` and
``http`` providers, promptfoo's ``file://provider.py``, ``exec:`` and ``http`` ids.

Each hands the application the prompt as promptfoo does: a single user message as its text,
anything else (a system message, a chat) as the JSON list of ``{role, content}`` messages.
The application's answer is the output; a mapping or list is written as compact JSON, as
``JSON.stringify`` writes it. The test's vars travel in the call's context, so they are part
of the cache key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skilleval.engine.base import Completion, Request, clean_reply

__all__ = [
    "CALL_TIMEOUT_S",
    "completion",
    "context_of",
    "file_digest",
    "output_text",
    "prompt_text",
    "settings_digest",
    "vars_salt",
]

CALL_TIMEOUT_S = 120.0
"""Seconds one call of a user's application may take unless its ``timeout`` says otherwise."""


def prompt_text(request: Request) -> str:
    """The prompt as promptfoo hands it to a provider: text, or a chat as JSON."""
    if len(request.messages) == 1 and request.messages[0].role == "user":
        return request.messages[0].content
    return json.dumps([m.to_json() for m in request.messages], ensure_ascii=False)


def _plain(value: Any) -> Any:
    """``value`` as JSON data (a var may be a NunjucksVars, a tuple …)."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def context_of(request: Request, prompt: str, label: str = "") -> dict[str, Any]:
    """promptfoo's ``context`` argument: the test's vars and the prompt."""
    return {
        "vars": _plain(dict(request.vars or {})),
        "prompt": {"raw": prompt, "label": label or prompt[:80]},
        "test": {"id": request.test_id},
    }


def vars_salt(request: Request) -> str:
    """A cache salt for a provider whose application sees the vars: their JSON."""
    return json.dumps(_plain(dict(request.vars or {})), sort_keys=True, ensure_ascii=False)


def output_text(value: Any) -> str:
    """An application's output as text: a string as it is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def completion(text: str, request: Request, latency_ms: float, usage: Any = None) -> Completion:
    """The completion of a call: token counts from promptfoo's ``tokenUsage`` when given,
    else words (an application has no tokenizer skilleval can see)."""
    prompt_tokens = sum(len(m.content.split()) for m in request.messages)
    completion_tokens = len(text.split())
    if isinstance(usage, Mapping):
        prompt_tokens = _count(usage.get("prompt"), prompt_tokens)
        completion_tokens = _count(usage.get("completion"), completion_tokens)
    return clean_reply(
        Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_ms=latency_ms,
            tokens_evaluated=prompt_tokens,
        )
    )


def _count(value: Any, default: int) -> int:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return int(value)
    return default


def file_digest(path: Path) -> str:
    """The first 16 hex digits of a file's SHA-256 ('' when it cannot be read): an edit to
    the application changes the provider's identity, and so the cache key."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return ""


def settings_digest(*settings: Any) -> str:
    """The first 16 hex digits of the SHA-256 of a provider's settings (its ``config``, its
    transforms …): two providers that differ in any of them never share cached replies."""
    text = json.dumps(settings, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
