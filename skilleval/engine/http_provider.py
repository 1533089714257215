"""The ``http`` provider: the user's own HTTP endpoint answers each prompt.

promptfoo's ``http``/``https`` provider, as promptfoo 0.123.1 reads its settings:

* ``url``, ``method`` (GET unless set; a GET sends no body), ``headers``, ``query_params``
  and ``body`` are templates rendered with the test's vars and ``prompt``, printed as
  Nunjucks prints them. A mapping (or list) body is sent as JSON, and within it a rendered
  string that is a JSON object or array is sent as that JSON; a string body is sent as text,
  or parsed as JSON when the content type is JSON. A mapping body without a content type
  gets ``application/json``; a string body ``application/x-www-form-urlencoded``.
* ``transform_response`` turns the reply into the output: a JavaScript expression or
  function over ``json`` (the parsed reply, or null), ``text`` and ``context``, or
  ``file://transform.js[:fn]``; it runs in the sandbox (:mod:`skilleval.sandbox.jsengine`). A
  result with ``output`` (or ``error``) is read as promptfoo's provider response. Without
  one, the output is the parsed JSON (when truthy), else the text.
* ``validate_status``: an expression over ``status`` (or a function of it) that says whether
  the status is a success; without one, every status is (promptfoo's default). A status it
  refuses, a connection that fails and a transform that throws are that test's ``error``.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Mapping
from typing import Any

from skilleval.api import Capabilities
from skilleval.engine.base import Completion, ModelIdentity, ProviderContext, Request
from skilleval.engine.own_app import (
    CALL_TIMEOUT_S,
    completion,
    context_of,
    output_text,
    prompt_text,
    settings_digest,
    vars_salt,
)
from skilleval.errors import ProviderError, TemplateProblem
from skilleval.plugins.markers import ConfigContext, provider
from skilleval.promptfoo.rendering import NunjucksVars
from skilleval.sandbox import jsengine
from skilleval.suite import template
from skilleval.userfile import read_text
from skilleval.util import fileref
from skilleval.util.frozen import frozen

_PARAMS = {"transform_response": ("json", "text", "context"), "validate_status": ("status",)}
"""The names each hook's code reads its arguments by, as promptfoo names them."""

_FUNCTION = re.compile(r"^(\(.*?\)\s*=>|function\s*\(.*?\))", re.S)
"""promptfoo's test for a transform written as a function rather than an expression."""


@frozen
class JsHook:
    """A transform or status check: inline JavaScript, or a file's export."""

    code: str
    """The inline code, or the file's source."""
    function: str | None = None
    """The file's export to call (None: its default export)."""
    source: str = ""
    """Where it is written, for messages."""
    is_file: bool = False

    def _body(self, params: tuple[str, ...]) -> str:
        body = self.code.strip()
        call = f"({body})({', '.join(params)})" if _FUNCTION.match(body) else f"({body})"
        # Several lines, so the sandbox takes it as a body as written (see inline_body).
        return f"return (\n{call}\n);"

    def problem(self, params: tuple[str, ...]) -> str | None:
        """Why the code cannot run (a syntax error), checked without calling it."""
        if self.is_file:
            failure = jsengine.check_module(self.code)
        else:
            failure = _unwrapped(jsengine.check_inline(self._body(params), params))
        return None if failure is None else failure.describe(self.source, inline=not self.is_file)

    def call(self, params: tuple[str, ...], args: list[Any]) -> Any:
        if self.is_file:
            outcome = jsengine.call_module(self.code, self.function, args)
        else:
            outcome = jsengine.call_inline(self._body(params), args, params)
        failure = outcome.failure if self.is_file else _unwrapped(outcome.failure)
        if failure is not None:
            raise ProviderError(failure.describe(self.source, inline=not self.is_file))
        return None if outcome.undefined else outcome.value


def _unwrapped(failure: jsengine.JsFailure | None) -> jsengine.JsFailure | None:
    """A failure of inline code, its line counted in the code as written (not the wrapper)."""
    if failure is None or failure.line is None:
        return failure
    return dataclasses.replace(failure, line=max(1, failure.line - 1))


@frozen
class HttpConfig:
    """A ``model: {provider: http, …}`` mapping, checked."""

    url: str
    method: str = "GET"
    headers: Mapping[str, str] | None = None
    query_params: Mapping[str, str] | None = None
    body: Any = None
    transform_response: JsHook | None = None
    validate_status: JsHook | None = None
    timeout_s: float = CALL_TIMEOUT_S

    @classmethod
    def configure(cls, raw: Mapping[str, Any], ctx: ConfigContext) -> HttpConfig:
        hooks: dict[str, JsHook | None] = {}
        for key in ("transform_response", "validate_status"):
            value = raw.get(key)
            hooks[key] = None
            if not isinstance(value, str):
                continue
            if fileref.is_ref(value):
                ref = fileref.parse(value)
                path = fileref.resolve(ref.path, ctx.base_dir)
                if not path.is_file():
                    ctx.error(f"JavaScript file not found: {ref.path} (looked for {path})", key)
                    continue
                hooks[key] = JsHook(read_text(path), ref.function, ref.path, is_file=True)
            else:
                hooks[key] = JsHook(value, source=f"`{key}`")
            hook = hooks[key]
            problem = hook.problem(_PARAMS[key]) if hook is not None else None
            if problem is not None:
                ctx.error(problem, key)
        return cls(
            url=str(raw.get("url", "")),
            method=str(raw.get("method") or "GET"),
            headers={str(k): str(v) for k, v in (raw.get("headers") or {}).items()},
            query_params={str(k): str(v) for k, v in (raw.get("query_params") or {}).items()},
            body=raw.get("body"),
            transform_response=hooks["transform_response"],
            validate_status=hooks["validate_status"],
            timeout_s=float(raw.get("timeout", CALL_TIMEOUT_S)),
        )

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "method": self.method}


def _is_json(headers: Mapping[str, str]) -> bool:
    return any(
        k.lower().startswith("content-type") and "application/json" in v for k, v in headers.items()
    )


def _render(value: Any, vars_: NunjucksVars) -> Any:
    """Every string inside ``value`` rendered, as promptfoo's renderVarsInObject does."""
    try:
        return template.render_value(value, vars_)
    except TemplateProblem as exc:
        raise ProviderError(f"http provider: {exc.message}") from None


def _json_strings(value: Any) -> Any:
    """A rendered JSON body: strings holding a JSON object or array become that JSON."""
    if isinstance(value, list):
        return [_json_strings(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_strings(v) for k, v in value.items()}
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if isinstance(parsed, (dict, list)) else value
    return value


class HttpProvider:
    """Sends each prompt to the endpoint and reads the reply through the transform."""

    max_concurrency = 4

    def __init__(self, config: HttpConfig) -> None:
        self.config = config

    def identity(self) -> ModelIdentity:
        cfg = self.config
        hooks = [h.code if h else None for h in (cfg.transform_response, cfg.validate_status)]
        details = {
            "method": cfg.method.upper(),
            "settings": settings_digest(cfg.headers, cfg.query_params, cfg.body, hooks),
        }
        return ModelIdentity(kind="http", name=self.config.url, details=details)

    def _body(self, headers: Mapping[str, str], vars_: NunjucksVars) -> str | None:
        body = self.config.body
        if body is None:
            return None
        if _is_json(headers):
            if isinstance(body, str):
                try:  # promptfoo parses a JSON string body first, then renders its strings
                    body = json.loads(body)
                except ValueError:
                    return str(_render(body, vars_))
            return json.dumps(_json_strings(_render(body, vars_)), ensure_ascii=False)
        if not isinstance(body, str):
            raise ProviderError(
                "http provider: a mapping or list body needs a JSON content type (the body"
                " must be a string otherwise)"
            )
        return str(_render(body, vars_)).strip()

    def complete(self, request: Request) -> Completion:
        import httpx  # lazy: start-up time

        prompt = prompt_text(request)
        context = context_of(request, prompt)
        vars_ = NunjucksVars({**(request.vars or {}), "prompt": prompt})
        cfg = self.config
        headers = {k: str(_render(v, vars_)) for k, v in (cfg.headers or {}).items()}
        method = str(_render(cfg.method, vars_)).upper()
        if cfg.body is not None and not any(k.lower() == "content-type" for k in headers):
            json_body = not isinstance(cfg.body, str)
            kind = "application/json" if json_body else "application/x-www-form-urlencoded"
            headers["content-type"] = kind
        url = str(_render(cfg.url, vars_))
        params = {k: str(_render(v, vars_)) for k, v in (cfg.query_params or {}).items()}
        content = None if method == "GET" else self._body(headers, vars_)
        start = time.perf_counter()
        try:
            with httpx.Client(timeout=cfg.timeout_s) as client:
                reply = client.request(
                    method,
                    url,
                    headers=headers,
                    params=params or None,
                    content=None if content is None else content.encode("utf-8"),
                )
        except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
            # ValueError: a header or URL that cannot be sent (a newline, a bad port …).
            raise ProviderError(f"http provider {url}: {type(exc).__name__}: {exc}") from None
        latency = (time.perf_counter() - start) * 1000
        text = reply.text
        if cfg.validate_status is not None:
            ok = cfg.validate_status.call(_PARAMS["validate_status"], [reply.status_code])
            if not ok:
                raise ProviderError(
                    f"http provider {url}: HTTP call failed with status {reply.status_code}"
                    f" {reply.reason_phrase}: {text[:500]}"
                )
        try:
            parsed: Any = json.loads(text)
        except ValueError:
            parsed = None
        if cfg.transform_response is None:
            output: Any = parsed if parsed else text
            return completion(output_text(output), request, latency)
        result = cfg.transform_response.call(_PARAMS["transform_response"], [parsed, text, context])
        usage = None
        if isinstance(result, Mapping) and ("output" in result or "error" in result):
            if result.get("error"):
                raise ProviderError(f"http provider {url}: {result['error']}")
            usage = result.get("tokenUsage")
            result = result.get("output")
        return completion(
            output_text(result if result is not None else ""), request, latency, usage
        )

    def cache_salt(self, request: Request) -> str:
        return vars_salt(request)

    def close(self) -> None:
        pass


_TEXT_MAP = {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}}

HTTP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["url"],
    "properties": {
        "url": {"type": "string", "pattern": "^https?://", "description": "A template."},
        "method": {"type": "string", "minLength": 1, "description": "GET unless set."},
        "headers": {**_TEXT_MAP, "description": "Templates."},
        "query_params": {**_TEXT_MAP, "description": "Templates."},
        "body": {
            "type": ["object", "array", "string"],
            "description": "Templates rendered with the vars and `prompt`.",
        },
        "transform_response": {
            "type": "string",
            "description": "JavaScript over json, text and context, or file://transform.js[:fn].",
        },
        "validate_status": {
            "type": "string",
            "description": "JavaScript over status; every status is a success unless set.",
        },
        "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds per call."},
    },
}


@provider(
    "http",
    schema=HTTP_SCHEMA,
    configure=HttpConfig.configure,
    implied_by="url",
    capabilities=Capabilities(data_replies=True),
)
def http_provider(config: HttpConfig, context: ProviderContext) -> HttpProvider:
    """Your HTTP endpoint answers: promptfoo's http provider (body, headers, transformResponse)."""
    return HttpProvider(config)
