"""Users' JavaScript (``javascript`` checks, JavaScript transforms, derived metrics), sandboxed.

The engine is QuickJS (the ``quickjs`` package), chosen over V8 (``mini-racer``) by
measurement; docs/assertions.md ("JavaScript: engine, sandbox and limits") has the numbers. In
short: QuickJS's memory limit covers every allocation, where V8's let 1 GB of typed arrays
through a 128 MB limit; it starts in about 1 ms where V8 took 220 ms and 60 MB; and its
context has no ``require``, ``process``, ``fetch``, timers, file system or network at all.

No JavaScript runs in skilleval's own process. Each call goes to a worker process
(:mod:`skilleval.sandbox._jsworker`) that builds a fresh context per call, with:

* :data:`TIME_LIMIT_S` of CPU time, counted by QuickJS for the worker alone (a loop ends
  with ``interrupted``);
* :data:`MEMORY_LIMIT` bytes for the JavaScript heap (``out of memory``), and a 1 GB ceiling
  on the worker as a whole;
* a wall-clock deadline of ``3 × limit + 1 s``, at which the worker is killed: QuickJS
  cannot interrupt a backtracking regular expression, so a pattern like ``/(a+)+$/`` on a long
  text ends there. A new worker is started for the next call.

No worker outlives skilleval: each runs in a session of its own (a Ctrl-C to the terminal's
process group reaches skilleval, not the worker) and asks the kernel to kill it when its parent
dies (``PR_SET_PDEATHSIG``, so even ``kill -9`` of skilleval ends it); every worker started is
kept in one registry, a call interrupted by Ctrl-C or SIGTERM kills its worker, and the rest
are killed at exit (the pool: :mod:`skilleval.sandbox.jspool`).

Every failure (a syntax error, a throw, a limit) is a :class:`JsFailure` with the line in the
user's code, never an exception out of this module. The worker is found next to this file and
started with the same interpreter; it imports nothing from skilleval.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any, Final, Literal

from skilleval.errors import JavaScriptError
from skilleval.sandbox import jspool
from skilleval.util.frozen import frozen
from skilleval.util.scrub import clip

__all__ = [
    "MEMORY_LIMIT",
    "TIME_LIMIT_S",
    "JsError",
    "JsFailure",
    "JsOutcome",
    "call_inline",
    "call_module",
    "check_inline",
    "check_module",
    "evaluate_number",
    "inline_body",
    "read_reply",
]

TIME_LIMIT_S: float = 1.0
"""CPU seconds one call may take; the worker is killed after ``3 × limit + 1`` wall seconds."""

MEMORY_LIMIT: int = 64 * 1024 * 1024
"""Bytes of JavaScript heap one call may use."""

MESSAGE_CHARS: int = 2_000
"""The longest message a failure keeps (``throw 'R'.repeat(2e7)``); longer ones are cut."""

INLINE_PARAMS: Final = ("output", "context")
"""The parameters of an inline check or transform, as promptfoo names them."""

MODULE_PARAMS: Final = ("module", "exports")

_HEADER_LINES: Final = 2
"""Lines QuickJS puts before a ``new Function`` body: line 3 of its source is line 1 of ours."""

FailureKind = Literal["syntax", "throw", "timeout", "memory", "stack", "result", "worker"]


@frozen
class JsFailure:
    """Why a call gave no value: what went wrong and, when known, the line of the user's code."""

    kind: FailureKind
    message: str
    line: int | None = None
    """1-based, in the code as the user wrote it (the value, or the file)."""

    def describe(self, source: str, *, inline: bool = False) -> str:
        """The failure as a sentence naming where the code is.

        Args:
            source: A file (``check.js``, then ``check.js:3``), or for inline code where it is
                written (``suite.yaml:12:7``, then ``suite.yaml:12:7, line 2 of the value``);
                empty when the reader already knows (a load-time diagnostic at the value).
            inline: The code is a value in the suite, not a file.
        """
        place = source or "the value"
        at = place
        if self.line and inline:
            at = f"{source}, line {self.line} of the value" if source else f"line {self.line}"
        elif self.line:
            at = f"{source}:{self.line}"
        if self.kind == "timeout":
            return f"JavaScript at {place} was stopped at its time limit ({TIME_LIMIT_S:g} s)"
        if self.kind == "memory":
            limit = MEMORY_LIMIT // (1024 * 1024)
            return f"JavaScript at {at} ran out of memory (limit {limit} MiB)"
        if self.kind == "stack":
            return f"JavaScript at {at} recursed too deeply (stack overflow)"
        if self.kind == "syntax":
            return f"JavaScript syntax error at {at}: {self.message}"
        if self.kind == "worker":
            return f"JavaScript at {place} could not run: {self.message}"
        if self.kind == "result":
            return f"JavaScript at {place} {self.message}"
        return f"JavaScript at {at} threw {self.message}"


class JsError(JavaScriptError):
    """Raised by :func:`evaluate_number`; carries the :class:`JsFailure`."""

    def __init__(self, failure: JsFailure, source: str = "the expression") -> None:
        super().__init__(failure.describe(source, inline=True))
        self.failure = failure


@frozen
class JsOutcome:
    """What a call gave: a value (``undefined`` told apart from ``null``), or a failure."""

    value: Any = None
    undefined: bool = False
    failure: JsFailure | None = None
    logs: tuple[str, ...] = field(default_factory=tuple)
    """What the code wrote with ``console.log`` and friends (at most 100 lines)."""


# --- promptfoo's rule for inline code ------------------------------------------------------

_DECLARATION = re.compile(r"^(const|let|var)\s")
_TRAILING_SEMICOLONS = re.compile(r";+\s*$")


def inline_body(value: str) -> str:
    """The function body an inline value stands for, by promptfoo's rule.

    A value of several lines is a body as written (it must ``return``). A one-line value is
    an expression, returned; one that starts with ``const``/``let``/``var`` gets ``return``
    before the expression after its last statement (``const n = output.length; n < 9``).
    """
    value = value.rstrip()
    if "\n" in value:
        return value
    trimmed = _TRAILING_SEMICOLONS.sub("", value.strip())
    if not _DECLARATION.match(trimmed):
        return f"return {trimmed}"
    cut = _last_statement_semicolon(trimmed)
    if cut >= 0 and trimmed[cut + 1 :].strip():
        return f"{trimmed[: cut + 1]} return {trimmed[cut + 1 :].strip()}"
    return trimmed


def _last_statement_semicolon(code: str) -> int:
    """The index of the last ``;`` outside brackets, strings, templates and comments, or -1."""
    depth, last, i, n = 0, -1, 0, len(code)
    while i < n:
        c = code[i]
        if c in "'\"`":
            i += 1
            while i < n and code[i] != c:
                i += 2 if code[i] == "\\" else 1
        elif code.startswith("//", i):
            break
        elif code.startswith("/*", i):
            end = code.find("*/", i + 2)
            i = n if end < 0 else end + 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == ";" and depth == 0:
            last = i
        i += 1
    return last


def _run(
    params: Sequence[str], body: str, call: str, name: str | None, args: Sequence[Any]
) -> JsOutcome:
    try:
        args_json = json.dumps(list(args), ensure_ascii=False, allow_nan=False, default=str)
    except (TypeError, ValueError) as exc:
        return JsOutcome(failure=JsFailure("worker", f"its arguments are not JSON ({exc})"))
    request = {
        "params": list(params),
        "body": body,
        "call": call,
        "name": name,
        "args": args_json,
        "time": TIME_LIMIT_S,
        "memory": MEMORY_LIMIT,
    }
    try:
        worker = jspool.take()
    except OSError as exc:
        return JsOutcome(failure=JsFailure("worker", f"the worker did not start ({exc})"))
    try:
        reply = worker.ask(request, time.monotonic() + 3 * TIME_LIMIT_S + 1.0)
    except BaseException:
        # Ctrl-C or SIGTERM (KeyboardInterrupt) while the worker runs: it goes with the call.
        worker.close(kill=True)
        raise
    if reply is None:
        died = worker.ended or worker.proc.poll() is not None
        code = None
        if died:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = worker.proc.wait(timeout=1)  # its own exit status, before any kill
        worker.close(kill=True)
        if died:
            how = ""
            if code is not None and code < 0:
                how = f" (killed by signal {-code})"
            elif code:
                how = f" (exit status {code})"
            message = f"the worker process ended unexpectedly{how}"
            return JsOutcome(failure=JsFailure("worker", message))
        return JsOutcome(failure=JsFailure("timeout", "stopped at the wall-clock deadline"))
    jspool.give_back(worker)
    outcome = read_reply(reply)
    failure = outcome.failure
    lines = body.count("\n") + 1
    if failure is not None and failure.line is not None and failure.line > lines:
        # QuickJS reports an unexpected end at the closing line it adds after the body.
        message = "the code ends early (is a bracket or a string left open?)"
        moved = dataclasses.replace(failure, line=lines, message=message)
        outcome = dataclasses.replace(outcome, failure=moved)
    return outcome


def read_reply(reply: Any) -> JsOutcome:
    """What the worker's reply says; a reply of any other shape is a failure, never an
    exception (the user's code runs in the context that builds it)."""
    if not isinstance(reply, dict):
        return JsOutcome(failure=JsFailure("worker", "the worker's reply could not be read"))
    raw_logs = reply.get("logs")
    logs = tuple(str(x) for x in raw_logs) if isinstance(raw_logs, list) else ()
    if not reply.get("ok"):
        return JsOutcome(
            failure=_failure(str(reply.get("kind")), str(reply.get("error"))), logs=logs
        )
    result = reply.get("result")
    if not isinstance(result, dict):
        message = "gave a result skilleval could not read (was JSON.stringify or toJSON replaced?)"
        return JsOutcome(failure=JsFailure("result", message), logs=logs)
    kind = result.get("kind")
    if kind == "value":
        return JsOutcome(value=result.get("value"), logs=logs)
    if kind == "undefined":
        return JsOutcome(undefined=True, logs=logs)
    if kind == "nonfinite":
        text = str(result.get("text"))
        try:
            return JsOutcome(value=float(text.replace("Infinity", "inf")), logs=logs)
        except ValueError:
            return JsOutcome(failure=JsFailure("result", f"gave {text[:60]!r}"), logs=logs)
    if kind == "pending":
        message = "returned a promise that never settled (there are no timers or I/O)"
        return JsOutcome(failure=JsFailure("result", message), logs=logs)
    if kind == "compile":
        failure = _failure("syntax", f"{result.get('message')}\n{result.get('stack') or ''}")
        return JsOutcome(failure=failure, logs=logs)
    if kind == "rejected":
        failure = _failure("throw", f"{result.get('message')}\n{result.get('stack') or ''}")
        return JsOutcome(failure=failure, logs=logs)
    return JsOutcome(failure=JsFailure("result", str(result.get("message"))), logs=logs)


_FRAME = re.compile(r"^\s*at (?:(\S+) \()?<input>:(\d+)\)?\s*$", re.MULTILINE)


def _failure(kind: str, text: str) -> JsFailure:
    first, _, rest = text.partition("\n")
    first = clip(first, MESSAGE_CHARS)
    rest = rest[:MESSAGE_CHARS]  # the stack: its first frame is all that is read
    line = None
    for match in _FRAME.finditer(rest):
        if (match.group(1) or "").startswith("__skilleval"):
            continue
        number = int(match.group(2)) - _HEADER_LINES
        line = number if number >= 1 else None
        break
    if kind in ("syntax", "timeout", "memory", "stack", "worker"):
        return JsFailure(kind, first, line)  # type: ignore[arg-type]
    return JsFailure("throw", first or "an exception", line)


# --- what callers use -----------------------------------------------------------------------


def call_inline(
    value: str, args: Sequence[Any], params: Sequence[str] = INLINE_PARAMS
) -> JsOutcome:
    """Run inline code (an expression or a body, see :func:`inline_body`) with ``args``."""
    return _run(params, inline_body(value), "function", None, args)


def call_module(source: str, function: str | None, args: Sequence[Any]) -> JsOutcome:
    """Run a CommonJS file's source and call its export (``module.exports`` or ``function``)."""
    return _run(MODULE_PARAMS, source, "module", function, args)


def check_inline(value: str, params: Sequence[str] = INLINE_PARAMS) -> JsFailure | None:
    """The syntax error in inline code, or None. Compiles in the worker; nothing is called."""
    outcome = _run(params, inline_body(value), "define", None, [])
    return outcome.failure


def check_module(source: str) -> JsFailure | None:
    """The syntax error in a file's source, or None; the file's code is not run."""
    return _run(MODULE_PARAMS, source, "define", None, []).failure


_RESERVED: Final = frozenset(
    [
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "debugger",
        "default",
        "delete",
        "do",
        "else",
        "enum",
        "export",
        "extends",
        "false",
        "finally",
        "for",
        "function",
        "if",
        "import",
        "in",
        "instanceof",
        "new",
        "null",
        "return",
        "super",
        "switch",
        "this",
        "throw",
        "true",
        "try",
        "typeof",
        "var",
        "void",
        "while",
        "with",
        "yield",
        "let",
        "static",
        "await",
        "implements",
        "interface",
        "package",
        "private",
        "protected",
        "public",
        "arguments",
        "eval",
    ]
)


def evaluate_number(expression: str, names: Mapping[str, float]) -> float:
    """A JavaScript expression over named numbers, as a number (for derived metrics).

    Each name that is a JavaScript identifier is a variable; every name is also a key of
    ``namedScores`` (``namedScores['pass rate']``). The expression is JavaScript: ``**`` is
    a power and ``^`` is exclusive or.

    Raises:
        JsError: The expression does not compile, throws, exceeds a limit, or gives
            something other than a finite number.
    """
    usable = sorted(n for n in names if n.isidentifier() and n.isascii() and n not in _RESERVED)
    params = [*usable, "namedScores"]
    args: list[Any] = [names[n] for n in usable]
    args.append(dict(names))
    outcome = call_inline(expression, args, params)
    if outcome.failure is not None:
        raise JsError(outcome.failure)
    value = outcome.value
    if isinstance(value, bool) or not isinstance(value, int | float) or outcome.undefined:
        shown = "undefined" if outcome.undefined else json.dumps(value)[:60]
        raise JsError(JsFailure("result", f"gave {shown}, not a number"))
    if value != value or value in (float("inf"), float("-inf")):
        raise JsError(JsFailure("result", f"gave {value}, not a finite number"))
    return float(value)
