"""The wire format of OpenAI-compatible chat completions, apart from the client.

The endpoint URL a ``base_url`` leads to, the schema sent for a constrained choice, and the
readers of a server's reply: token usage, error wording, ``Retry-After`` and the signs that a
server refused a request field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from skilleval.engine.base import Request
from skilleval.errors import ProviderError

__all__ = [
    "CHOICE_KEY",
    "chat_completions_url",
    "choice_schema",
    "embedding_vectors",
    "error_detail",
    "is_unknown_model",
    "one_line",
    "rejects_field",
    "rejects_json_schema",
    "reply_usage",
    "retry_after_s",
    "schema_name",
    "snippet",
]

_SNIPPET_CHARS = 160
CHOICE_KEY = "choice"
_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]+")
_VERSION_SEGMENT = re.compile(r"v\d+")


def chat_completions_url(base_url: str) -> str:
    """The chat-completions endpoint for a ``base_url`` as users write it.

    ``http://host:8000``, ``http://host:8000/v1`` and the full endpoint URL all lead to
    ``http://host:8000/v1/chat/completions``; a path ending in another version segment
    (``/v2``) or in ``/chat/completions`` is kept.

    Args:
        base_url: The server URL from the suite.

    Returns:
        The URL that requests are posted to.

    Raises:
        ProviderError: The URL is not http or https.
    """
    url = base_url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ProviderError(
            f"base_url {base_url!r} is not an http(s) URL (e.g. http://127.0.0.1:8000/v1)"
        )
    if parts.path.endswith("/chat/completions"):
        return url
    last = parts.path.rsplit("/", 1)[-1]
    if _VERSION_SEGMENT.fullmatch(last):
        return f"{url}/chat/completions"
    return f"{url}/v1/chat/completions"


def choice_schema(options: tuple[str, ...]) -> dict[str, Any]:
    # An object rather than a bare string: OpenAI's strict mode requires a top-level object.
    return {
        "type": "object",
        "properties": {CHOICE_KEY: {"type": "string", "enum": list(options)}},
        "required": [CHOICE_KEY],
        "additionalProperties": False,
    }


def schema_name(schema: Mapping[str, Any], request: Request) -> str:
    if request.choices:
        return CHOICE_KEY
    title = schema.get("title")
    name = _SCHEMA_NAME.sub("_", title).strip("_")[:64] if isinstance(title, str) else ""
    return name or "reply"


def rejects_json_schema(response: httpx.Response) -> bool:
    """Whether the server refused ``{"type": "json_schema"}`` but knows ``json_object``."""
    if response.status_code < 400:
        return False
    text = response.text.lower()
    return "response_format" in text and "json_object" in text


def rejects_field(response: httpx.Response, name: str) -> bool:
    """Whether the server refused the request for a field it does not know (OpenAI: HTTP 400
    "Unrecognized request argument supplied: NAME")."""
    return response.status_code in (400, 422) and name in response.text


def is_unknown_model(response: httpx.Response, detail: str) -> bool:
    code = ""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        code = str(body["error"].get("code") or "")
    if code == "model_not_found":
        return True
    return (
        response.status_code in (400, 404)
        and "model" in detail
        and ("does not exist" in detail or "not found" in detail)
    )


def error_detail(response: httpx.Response) -> str:
    """The server's own words about an error, on one line."""
    try:
        body = response.json()
    except ValueError:
        return snippet(response.text)
    found: Any = body
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            found = error["message"]
        elif isinstance(error, str) and error:
            found = error
        elif body.get("detail"):
            found = body["detail"]
        elif body.get("message"):
            found = body["message"]
    return snippet(found if isinstance(found, str) else json.dumps(found))


def retry_after_s(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "")
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def reply_usage(usage: Any) -> tuple[int, int, int]:
    if not isinstance(usage, dict):
        return 0, 0, 0
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else 0
    return _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")), _int(cached)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def one_line(text: str) -> str:
    return " ".join(text.split())


def snippet(text: str) -> str:
    line = one_line(text)
    return line if len(line) <= _SNIPPET_CHARS else line[: _SNIPPET_CHARS - 1] + "…"


def embedding_vectors(response: httpx.Response, url: str, count: int) -> list[list[float]]:
    """The vectors of an ``/embeddings`` reply, in the order of the texts sent.

    Raises:
        ProviderError: The reply is not JSON, or does not hold one list of numbers per text.
    """
    try:
        body = response.json()
    except ValueError:
        raise ProviderError(f"{url}: reply is not JSON: {snippet(response.text)!r}") from None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or len(data) != count:
        raise ProviderError(f"{url}: reply has no `data` list of {count} embeddings")
    entries = sorted(data, key=lambda d: d.get("index", 0) if isinstance(d, dict) else 0)
    vectors = []
    for entry in entries:
        vector = entry.get("embedding") if isinstance(entry, dict) else None
        if (
            not isinstance(vector, list)
            or not vector
            or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in vector)
        ):
            raise ProviderError(f"{url}: an embedding in the reply is not a list of numbers")
        vectors.append([float(x) for x in vector])
    return vectors
