"""Checks written in JavaScript, as promptfoo's ``javascript`` type, in a sandbox.

The code runs in QuickJS in a separate worker process (:mod:`skilleval.sandbox.jsengine`): no
file system, network, process, ``require``, ``import()`` or ``fetch``, and limits on time and
memory. Whatever goes wrong in it (a syntax error, a throw, a limit) is an ``error`` verdict
naming the file or the suite position and the line; the run goes on.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from typing import Any

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.normalize import normalize_result
from skilleval.errors import SkillevalError
from skilleval.sandbox import jsengine
from skilleval.suite.model import PARSED_REPLY
from skilleval.suite.template import is_template
from skilleval.userfile import display_path, read_text
from skilleval.util import fileref

_SHAPES = "a bool, a number, or an object with pass/score/reason"
SUFFIXES = (".js", ".cjs")
"""CommonJS files; ES modules (``.mjs``, ``export``) are not supported."""


@functools.lru_cache(maxsize=1024)
def _inline_problem(value: str) -> str | None:
    failure = jsengine.check_inline(value)
    if failure is None:
        return None
    problem = failure.describe("", inline=True)
    if "\n" not in value.rstrip() and value.lstrip().startswith("return"):
        problem += "; a one-line value is an expression: leave out `return`"
    return problem


def check_code(value: Any) -> str | None:
    """Why ``value`` cannot run: a file reference that is not a ``.js`` file, or a syntax error."""
    if not isinstance(value, str):
        return None
    if fileref.is_ref(value):
        path = fileref.parse(value).path
        if not path.endswith(SUFFIXES):
            return f"javascript file reference must name a .js or .cjs file (CommonJS): {value}"
        return None
    if is_template(value):
        return None
    return _inline_problem(value)


def subject_of(check: Check) -> Any:
    """What the code sees as ``output``: the transform's result when it was not text.

    On a promptfoo prompt with ``response_format: {type: json_schema}``, the reply parsed
    from JSON, as promptfoo's providers hand it over (text that is not JSON stays text).
    """
    if check.transformed is not None and not isinstance(check.transformed, str):
        return check.transformed
    if check.options.get(PARSED_REPLY) and check.transformed is None:
        try:
            return json.loads(check.output)
        except ValueError:
            return check.output
    return check.output


def context_of(check: Check) -> dict[str, Any]:
    """promptfoo's ``context`` argument: ``vars``, ``prompt``, ``test``, ``config``.

    ``logProbs``, ``provider`` and ``providerResponse`` are absent (``undefined``): the
    local model's log-probabilities are not recorded.
    """
    return {
        "vars": dict(check.vars),
        "prompt": check.prompt,
        "test": {"description": check.test_id, "vars": dict(check.vars)},
        "config": dict(check.config),
    }


def _file_outcome(ref: str, check: Check) -> tuple[jsengine.JsOutcome, str]:
    parsed = fileref.parse(ref)
    path = fileref.resolve(parsed.path, Path(check.base_dir))
    shown = display_path(path)
    try:
        source = read_text(path)
    except SkillevalError as exc:
        failure = jsengine.JsFailure("worker", str(exc))
        return jsengine.JsOutcome(failure=failure), shown
    args = [subject_of(check), context_of(check)]
    return jsengine.call_module(source, parsed.function, args), shown


@assertion("javascript", value={"type": "string", "minLength": 1}, check_value=check_code)
def javascript(check: Check) -> Verdict:
    """JavaScript decides, as in promptfoo: an expression, a function body, or file://x.js[:fn].

    A one-line value is an expression (``output.length < 200``); a value of several lines is
    the body of ``function (output, context)`` and must ``return``. A file is CommonJS and
    exports the function (``module.exports = (output, context) => ...``), or names it after a
    colon. The result may be a bool, a number (a score: it passes when ≥ ``threshold:`` if
    given, else when > 0), an object with ``pass``/``score``/``reason``, or a promise of one.
    A syntax error, a throw, or a time or memory limit is an error, not a fail.
    """
    source = str(check.value)
    if fileref.is_ref(source):
        outcome, shown = _file_outcome(source, check)
        label, inline = shown, False
    else:
        outcome = jsengine.call_inline(source, [subject_of(check), context_of(check)])
        where = check.value_where or check.where
        label, inline = (str(where) if where else "the value"), True
    details = {"console": list(outcome.logs)} if outcome.logs else {}
    if outcome.failure is not None:
        return Verdict.errored(outcome.failure.describe(label, inline=inline), details=details)
    if outcome.undefined:
        return Verdict.errored(
            f"javascript returned undefined; expected {_SHAPES}", details=details
        )
    verdict = normalize_result(outcome.value, check.threshold, label="javascript")
    if details:
        verdict = dataclasses.replace(verdict, details={**verdict.details, **details})
    return verdict
