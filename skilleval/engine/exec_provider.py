"""The ``exec`` provider: a command answers each prompt on its stdout.

promptfoo's ``exec:COMMAND``: the command line is split as a shell splits words (no shell
runs it), and three arguments are added, as promptfoo adds them: the prompt, the options
(``{"config": …}``) as JSON and the context (the test's ``vars``) as JSON. It runs in the
suite's folder. Its stdout, trimmed, is the output. A command that exits with a failure,
runs past its time limit, or writes only to stderr is that test's ``error``.

It runs through :mod:`skilleval.sandbox.process`: a process group of its own, killed at the
time limit or when skilleval stops, and output capped.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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
from skilleval.sandbox.process import last_line, run_process
from skilleval.util.frozen import frozen

MAX_OUTPUT = 4 * 1024 * 1024
"""Bytes kept of the command's stdout (and of its stderr)."""


@frozen
class ExecConfig:
    """A ``model: {provider: exec, …}`` mapping, checked."""

    command: str
    argv: tuple[str, ...]
    cwd: Path
    config: Mapping[str, Any] | None = None
    timeout_s: float = CALL_TIMEOUT_S

    @classmethod
    def configure(cls, raw: Mapping[str, Any], ctx: ConfigContext) -> ExecConfig:
        command = str(raw.get("command", ""))
        try:
            argv = tuple(shlex.split(command))
        except ValueError as exc:
            ctx.error(f"the command cannot be split into words: {exc}", "command")
            argv = ()
        if not argv and command:
            ctx.error("the command is empty", "command")
        return cls(
            command=command,
            argv=argv,
            cwd=ctx.base_dir,
            config=raw.get("config") or {},
            timeout_s=float(raw.get("timeout", CALL_TIMEOUT_S)),
        )

    def to_json(self) -> dict[str, Any]:
        return {"command": self.command}


class ExecProvider:
    """Runs the command once per request; its stdout is the reply."""

    max_concurrency = 4

    def __init__(self, config: ExecConfig) -> None:
        self.config = config

    def identity(self) -> ModelIdentity:
        # The files the command names (its script): an edit changes the cache key.
        files = [self.config.cwd / w for w in self.config.argv if (self.config.cwd / w).is_file()]
        details = {"config": settings_digest(self.config.config)}
        if files:
            details["files"] = ",".join(file_digest(f) for f in files)
        return ModelIdentity(kind="exec", name=self.config.command, details=details)

    def complete(self, request: Request) -> Completion:
        prompt = prompt_text(request)
        options = {"id": f"exec:{self.config.command}", "config": dict(self.config.config or {})}
        argv = [
            *self.config.argv,
            prompt,
            output_text(options),
            output_text(context_of(request, prompt)),
        ]
        result = run_process(
            argv, cwd=self.config.cwd, timeout_s=self.config.timeout_s, max_output=MAX_OUTPUT
        )
        shown = f"exec provider `{self.config.command}`"
        if not result.ok:
            raise ProviderError(f"{shown} {result.describe_failure(self.config.timeout_s)}")
        out = result.stdout.strip()
        if not out and result.stderr.strip():
            raise ProviderError(f"{shown} wrote only to stderr: {last_line(result.stderr)}")
        return completion(out, request, result.duration_ms)

    def cache_salt(self, request: Request) -> str:
        return vars_salt(request)

    def close(self) -> None:
        pass


EXEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["command"],
    "properties": {
        "command": {
            "type": "string",
            "minLength": 1,
            "description": "Run in the suite's folder with the prompt, options and context added as arguments; stdout is the reply.",
        },
        "config": {"type": "object", "description": "Handed to the command in the options JSON."},
        "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds per call."},
    },
}


@provider("exec", schema=EXEC_SCHEMA, configure=ExecConfig.configure)
def exec_provider(config: ExecConfig, context: ProviderContext) -> ExecProvider:
    """A command answers on stdout: promptfoo's exec:COMMAND."""
    return ExecProvider(config)
