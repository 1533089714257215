"""What an OpenAI-compatible server's answer means: a call's reply, or its failure in words.

:func:`read_completion` reads a chat-completions body into a :class:`Completion` and holds
the reply to the constraint it was asked for (a choice, a JSON schema). :func:`unreachable`,
:func:`gave_up` and :func:`client_error` word a failed call as the one line of its
:class:`~skilleval.errors.ProviderError`. The client that sends the calls and retries them is
:mod:`skilleval.engine.openai`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import httpx

from skilleval.engine.base import Completion, Request, clean_reply
from skilleval.engine.openai_wire import (
    CHOICE_KEY,
    error_detail,
    is_unknown_model,
    one_line,
    reply_usage,
    snippet,
)
from skilleval.errors import InvalidReplyError, ProviderError

__all__ = ["client_error", "gave_up", "read_completion", "reply_logprobs", "unreachable"]


def unreachable(url: str, exc: httpx.ConnectError) -> str:
    """Why a server could not be reached, in one line."""
    reason = str(exc)
    if "refused" in reason.lower():
        return f"cannot reach {url}: connection refused — is the server running?"
    return f"cannot reach {url}: {one_line(reason or type(exc).__name__)}"


def gave_up(url: str, timeout_s: float, failures: Counter[str], last_detail: str) -> str:
    """Why a call failed after its last retry: no reply in time, or what failed how often."""
    attempts = sum(failures.values())
    if set(failures) == {"timeout"}:
        tries = f" ({attempts} attempts)" if attempts > 1 else ""
        return f"{url}: no reply within {timeout_s} s{tries}"
    summary = ", ".join(f"{label} x{count}" for label, count in failures.items())
    last = f" (last: {last_detail})" if last_detail else ""
    return f"{url}: server kept failing: {summary}{last}"


def client_error(url: str, model: str, api_key_env: str | None, response: httpx.Response) -> str:
    """What an HTTP 4xx answer means, with a hint where one helps."""
    status = response.status_code
    detail = error_detail(response)
    lowered = detail.lower()
    said = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
    if is_unknown_model(response, lowered):
        return f"{url}: server has no model {model!r} ({said})"
    if status == 404:
        return (
            f"{url}: {said} — is base_url an OpenAI-compatible server "
            "(it should serve /v1/chat/completions)?"
        )
    if status in (401, 403):
        if api_key_env:
            hint = f"check the key in {api_key_env}"
        else:
            hint = "set api_key_env to the variable that holds the key"
        return f"{url}: {said} — {hint}"
    return f"{url}: {said}"


def read_completion(
    url: str,
    request: Request,
    schema: Mapping[str, Any] | None,
    response: httpx.Response,
    latency_ms: float,
) -> Completion:
    """The reply in a successful chat-completions ``response``.

    A reply cut by ``max_tokens`` is returned as it is; otherwise a constrained choice becomes
    the chosen option and a reply under a JSON schema is validated against it.

    Raises:
        ProviderError: The body is not a chat-completions reply.
        InvalidReplyError: The reply breaks the choice or schema constraint.
    """
    try:
        body = response.json()
    except ValueError:
        kind = response.headers.get("content-type", "no content-type")
        raise ProviderError(
            f"{url}: reply is not JSON (HTTP {response.status_code}, {kind}): "
            f"{snippet(response.text)!r}"
        ) from None
    message, finish_reason = _first_choice(url, body)
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    usage = body.get("usage")
    prompt_tokens, completion_tokens, cached_tokens = reply_usage(usage)
    # JSON may carry a lone surrogate ("\ud800"), which no file can hold: scrubbed here.
    completion = clean_reply(
        Completion(
            text=text,
            finish_reason=finish_reason,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_ms=latency_ms,
            tokens_evaluated=max(0, prompt_tokens - cached_tokens),
            token_logprobs=reply_logprobs(body) if request.logprobs else None,
        )
    )
    if finish_reason == "length" or schema is None:
        return completion
    if request.choices:
        return replace(completion, text=_chosen(url, text, request.choices))
    _validate(url, text, schema)
    return completion


def reply_logprobs(body: Any) -> tuple[float, ...]:
    """The reply's token log-probabilities, asked for with ``logprobs: true``: OpenAI's
    ``choices[0].logprobs.content[i].logprob`` (llama.cpp's server, vLLM, Ollama), or the
    completions form ``choices[0].logprobs.token_logprobs``. Empty when the server gave none,
    which a ``perplexity`` check reports as its error."""
    choices = body.get("choices") if isinstance(body, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    found = first.get("logprobs") if isinstance(first, dict) else None
    if not isinstance(found, dict):
        return ()
    content = found.get("content")
    if isinstance(content, list):
        values = [t.get("logprob") if isinstance(t, dict) else None for t in content]
    else:
        listed = found.get("token_logprobs")
        values = listed if isinstance(listed, list) else []
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    return tuple(float(v) for v in numbers) if len(numbers) == len(values) else ()


def _first_choice(url: str, body: Any) -> tuple[Mapping[str, Any], str]:
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ProviderError(
            f"{url}: reply has no choices[0]; is this an OpenAI-compatible "
            f"chat-completions server? Got {snippet(json.dumps(body))!r}"
        )
    first = choices[0]
    message = first.get("message")
    if not isinstance(message, dict):
        raise ProviderError(f"{url}: reply has no choices[0].message")
    finish = first.get("finish_reason")
    return message, finish if isinstance(finish, str) and finish else "stop"


def _chosen(url: str, text: str, options: tuple[str, ...]) -> str:
    stripped = text.strip()
    try:
        parsed: Any = json.loads(stripped)
    except ValueError:
        parsed = stripped
    if isinstance(parsed, dict):
        parsed = parsed.get(CHOICE_KEY)
    if isinstance(parsed, str) and parsed in options:
        return parsed
    raise InvalidReplyError(
        f"{url}: server ignored the choice constraint: reply {snippet(text)!r} "
        f"is not one of {list(options)}"
    )


def _validate(url: str, text: str, schema: Mapping[str, Any]) -> None:
    # Deferred: only schema-constrained calls pay for the import. jsonschema ships no stubs.
    import jsonschema  # type: ignore[import-untyped,unused-ignore]

    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidReplyError(
            f"{url}: server ignored the JSON schema: reply is not JSON ({exc}): {snippet(text)!r}"
        ) from None
    try:
        jsonschema.validate(value, schema)
    except jsonschema.SchemaError as exc:
        raise ProviderError(f"invalid JSON schema: {one_line(exc.message)}") from None
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise InvalidReplyError(
            f"{url}: server ignored the JSON schema: at {where}: {snippet(exc.message)}"
        ) from None
