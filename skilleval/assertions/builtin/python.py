"""Checks written in Python by the suite's author.

This type runs the author's own code with the full interpreter, on purpose: it is the escape
hatch for checks no declarative type expresses. (``expr`` is the sandboxed alternative.)
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import json
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from types import CodeType
from typing import Any

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.normalize import normalize_result
from skilleval.sandbox.pyfile import import_file
from skilleval.suite.template import is_template
from skilleval.util import fileref
from skilleval.util.frozen import frozen

DEFAULT_FUNCTION = "get_assert"
_FILENAME = "<python assertion>"
_WRAPPER = "__skilleval_check__"
_INDENT = "    "


# --- inline code ------------------------------------------------------------------------------


@frozen
class _Inline:
    code: CodeType
    expression: bool
    """True when ``code`` evaluates to the result; False when it defines the wrapper function."""


def _syntax_message(exc: SyntaxError, line_shift: int, col_shift: int) -> str:
    line = (exc.lineno or 1) - line_shift
    where = f"line {line}"
    if exc.offset and exc.offset > col_shift:
        where += f", column {exc.offset - col_shift}"
    return f"python syntax error at {where}: {exc.msg}"


@functools.lru_cache(maxsize=256)
def _compile_inline(source: str) -> _Inline | str:
    """The compiled form of inline code, or the syntax error to report.

    The value is an expression when it compiles as one; otherwise it is the body of a function
    of ``output`` and ``context`` that must ``return``. A one-line value that is neither
    reports the expression's error, which is what its author most likely meant to write.
    """
    stripped = source.strip()
    try:
        return _Inline(compile(stripped, _FILENAME, "eval"), expression=True)
    except SyntaxError as exc:
        expression_error = _syntax_message(exc, 0, 0)
    body = textwrap.indent(textwrap.dedent(source.rstrip()), _INDENT)
    wrapped = f"def {_WRAPPER}(output, context):\n{body}\n"
    try:
        return _Inline(compile(wrapped, _FILENAME, "exec"), expression=False)
    except SyntaxError as exc:
        if "\n" not in stripped:
            return expression_error
        return _syntax_message(exc, 1, len(_INDENT))


def _run_inline(inline: _Inline, output: str, context: dict[str, Any]) -> Any:
    scope: dict[str, Any] = {
        "__builtins__": builtins,
        "__name__": "skilleval_inline_check",
        "json": json,
        "re": re,
    }
    if inline.expression:
        scope.update(output=output, context=context)
        return eval(inline.code, scope)
    exec(inline.code, scope)
    return scope[_WRAPPER](output, context)


# --- file://path.py[:fn] ----------------------------------------------------------------------


def _load_function(ref: str, base_dir: str) -> Callable[..., Any] | str:
    """The function a reference names, or the reason it cannot be found."""
    parsed = fileref.parse(ref)
    raw, name = parsed.path, parsed.function or DEFAULT_FUNCTION
    path = fileref.resolve(raw, Path(base_dir))
    if not path.is_file():
        return f"python file not found: {raw} (looked for {path})"
    fn = getattr(import_file(path), name, None)
    if not callable(fn):
        return f"{raw} has no function {name!r}"
    return fn  # type: ignore[no-any-return]


# --- the assertion ----------------------------------------------------------------------------


def check_code(value: Any) -> str | None:
    """The reason ``value`` cannot run: a syntax error with its line, or a malformed file reference."""
    if not isinstance(value, str):
        return None
    if fileref.is_ref(value):
        if not fileref.parse(value).path.endswith(".py"):
            return f"python file reference must name a .py file: {value}"
        return None
    if is_template(value):
        return None
    compiled = _compile_inline(value)
    return compiled if isinstance(compiled, str) else None


def context_of(check: Check) -> dict[str, Any]:
    """The ``context`` argument a Python check receives: plain, mutable copies of the check."""
    return {
        "vars": dict(check.vars),
        "prompt": check.prompt,
        "messages": [dict(m) for m in check.messages],
        "test_id": check.test_id,
        "arm": check.arm,
        "trial": check.trial,
        "config": dict(check.config),
        "threshold": check.threshold,
        "stats": dataclasses.asdict(check.stats),
        "raw_output": check.raw_output,
        "transformed": check.transformed,
    }


@assertion("python", value={"type": "string", "minLength": 1}, check_value=check_code)
def python(check: Check) -> Verdict:
    """Python code decides: an expression, a function body, or file://path.py[:fn].

    An expression is evaluated with ``output`` and ``context`` in scope (and the ``json`` and
    ``re`` modules); a value that is not an expression is the body of ``fn(output, context)``
    and must ``return``. A file reference calls ``get_assert(output, context)``, or the named
    function, from a file relative to the suite; the file is imported again when it changes.
    The result is read by :func:`~skilleval.assertions.normalize.normalize_result`: a bool, a
    number (a score, compared with ``threshold:``), a mapping with ``pass``/``score``/``reason``,
    or a Verdict. Exceptions raised by the code become error verdicts.
    """
    source = str(check.value)
    context = context_of(check)
    if fileref.is_ref(source):
        fn = _load_function(source, check.base_dir)
        if isinstance(fn, str):
            return Verdict.errored(fn)
        label = getattr(fn, "__name__", DEFAULT_FUNCTION)
        result = fn(check.output, context)
    else:
        inline = _compile_inline(source)
        if isinstance(inline, str):
            return Verdict.errored(inline)
        label = "python"
        result = _run_inline(inline, check.output, context)
    return normalize_result(result, check.threshold, label=label)
