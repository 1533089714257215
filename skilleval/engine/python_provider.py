"""The ``python`` provider: a function in the user's Python file answers each prompt.

promptfoo's ``file://provider.py`` (and ``python:provider.py``): the file's ``call_api``
(or the function named after ``:``) is called as ``call_api(prompt, options, context)``,
where ``options`` is ``{"id", "config"}`` with the provider's ``config:``, and ``context``
holds the test's ``vars``. It returns a mapping with ``output`` (text, or data written as
JSON) or ``error``, and optionally ``tokenUsage``; an ``async def`` is awaited.

The function runs as every piece of users' Python does (:mod:`skilleval.sandbox.usercode`): in a
thread of its own with a time limit, printing to stderr, every exception caught. A call that
raises, returns something else or runs past its limit is that test's ``error``, with the
file and line; the run goes on.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skilleval.api import Capabilities
from skilleval.engine.base import Completion, ModelIdentity, ProviderContext, Request
from skilleval.engine.own_app import (
    CALL_TIMEOUT_S,
    completion,
    context_of,
    file_digest,
    output_text,
    prompt_text,
    settings_digest,
    vars_salt,
)
from skilleval.errors import ProviderError
from skilleval.plugins.markers import ConfigContext, provider
from skilleval.sandbox.pyfile import import_file
from skilleval.sandbox.usercode import call_limited, raised_at
from skilleval.util import fileref
from skilleval.util.frozen import frozen

DEFAULT_FUNCTION = "call_api"
"""The function promptfoo calls when the id names none."""


@frozen
class PythonConfig:
    """A ``model: {provider: python, …}`` mapping, checked."""

    path: Path
    """The file, resolved against the suite's folder."""
    shown: str
    """The file as written, for messages."""
    function: str = DEFAULT_FUNCTION
    config: Mapping[str, Any] | None = None
    timeout_s: float = CALL_TIMEOUT_S

    @classmethod
    def configure(cls, raw: Mapping[str, Any], ctx: ConfigContext) -> PythonConfig:
        written = str(raw.get("path", ""))
        parsed = fileref.parse(written if fileref.is_ref(written) else f"file://{written}")
        path = fileref.resolve(parsed.path, ctx.base_dir)
        function = str(raw.get("function") or parsed.function or DEFAULT_FUNCTION)
        if not parsed.path.endswith(".py"):
            ctx.error(f"the python provider runs a .py file, not {parsed.path!r}", "path")
        elif not path.is_file():
            ctx.error(f"python provider file not found: {parsed.path} (looked for {path})", "path")
        return cls(
            path=path,
            shown=parsed.path,
            function=function,
            config=raw.get("config") or {},
            timeout_s=float(raw.get("timeout", CALL_TIMEOUT_S)),
        )

    def to_json(self) -> dict[str, Any]:
        return {"path": self.shown, "function": self.function}


class PythonProvider:
    """Calls ``function(prompt, options, context)`` from the user's file, once per request."""

    max_concurrency = 1

    def __init__(self, config: PythonConfig) -> None:
        self.config = config
        self.name = f"{config.shown}:{config.function}"

    def identity(self) -> ModelIdentity:
        details = {
            "function": self.config.function,
            "file": file_digest(self.config.path),
            "config": settings_digest(self.config.config),
        }
        return ModelIdentity(kind="python", name=self.config.shown, details=details)

    def complete(self, request: Request) -> Completion:
        prompt = prompt_text(request)
        options = {"id": f"file://{self.name}", "config": dict(self.config.config or {})}
        context = context_of(request, prompt)
        start = time.perf_counter()
        called = call_limited(lambda: self._call(prompt, options, context), self.config.timeout_s)
        latency = (time.perf_counter() - start) * 1000
        if called.timed_out:
            raise ProviderError(
                f"python provider {self.name} was stopped after {self.config.timeout_s:g} s,"
                " its time limit (`timeout:`)"
            )
        if called.raised is not None:
            exc = called.raised
            if isinstance(exc, ProviderError):
                raise exc
            at = raised_at(exc, str(self.config.path))
            where = f" at {at}" if at else ""
            if isinstance(exc, SystemExit):
                raise ProviderError(
                    f"python provider {self.name} called sys.exit({exc.code!r}){where}"
                )
            raise ProviderError(
                f"python provider {self.name} raised {type(exc).__name__}{where}: {exc}"
            )
        result = called.value
        if not isinstance(result, Mapping) or not ("output" in result or "error" in result):
            raise ProviderError(
                f"python provider {self.name} must return a dict with `output` or `error`,"
                f" not {type(result).__name__}: {str(result)[:200]}"
            )
        if result.get("error"):
            raise ProviderError(f"python provider {self.name}: {result['error']}")
        text = output_text(result.get("output"))
        return completion(text, request, latency, result.get("tokenUsage"))

    def _call(self, prompt: str, options: dict[str, Any], context: dict[str, Any]) -> Any:
        module = import_file(self.config.path)
        fn = getattr(module, self.config.function, None)
        if not callable(fn):
            raise ProviderError(f"{self.config.shown} has no function {self.config.function!r}")
        result = fn(prompt, options, context)
        if inspect.isawaitable(result):
            result = asyncio.run(_awaited(result))
        return result

    def cache_salt(self, request: Request) -> str:
        return vars_salt(request)

    def close(self) -> None:
        pass


async def _awaited(value: Any) -> Any:
    return await value


PYTHON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["path"],
    "properties": {
        "path": {
            "type": "string",
            "minLength": 1,
            "description": "The .py file (file:// optional, `:function` optional), relative to the suite.",
        },
        "function": {
            "type": "string",
            "minLength": 1,
            "description": "The function to call (default call_api).",
        },
        "config": {"type": "object", "description": "Handed to the function as options['config']."},
        "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds per call."},
    },
}


@provider(
    "python",
    schema=PYTHON_SCHEMA,
    configure=PythonConfig.configure,
    capabilities=Capabilities(data_replies=True),
)
def python_provider(config: PythonConfig, context: ProviderContext) -> PythonProvider:
    """Your Python function answers: promptfoo's call_api(prompt, options, context)."""
    return PythonProvider(config)
