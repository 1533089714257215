"""A suite's code hooks: prompt functions and Python test generators, as promptfoo runs them.

* A prompt written as ``file://prompt.py:fn`` or ``file://prompt.js[:fn]`` is a function of
  ``{vars, provider, config}`` that returns the prompt: text, a list of ``{role, content}``
  messages, or ``{prompt: …}``. It is called for each test's vars when the suite loads, and
  what it returns is the test's prompt template, rendered with the vars as promptfoo renders
  it again.
* ``tests: file://gen.py[:fn]`` (``generate_tests`` unless named) returns the list of tests.
* ``nunjucksFilters: {name: filter.js}`` adds each file's export as a filter of the prompts'
  templates, called with the value and the filter's arguments.

Python runs under the guards of Python checks (:mod:`skilleval.sandbox.usercode`: a thread with
a time limit, prints sent to stderr, every exception caught, the user's line named), and not
at all under ``validate --no-plugins``. JavaScript runs in the sandbox
(:mod:`skilleval.sandbox.jsengine`), which runs CommonJS without packages: an ES module that
imports packages is refused with that reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2

from skilleval.errors import Diagnostic, Location, TemplateProblem
from skilleval.promptfoo.config import reads_as_promptfoo
from skilleval.sandbox import jsengine
from skilleval.sandbox.pyfile import import_file, imports_allowed
from skilleval.sandbox.usercode import call_limited, raised_at
from skilleval.suite.context import Loader
from skilleval.suite.model import Prompt, PromptFunction
from skilleval.suite.yamlio import Document
from skilleval.userfile import display_path, read_text
from skilleval.util import fileref

__all__ = [
    "HOOK_TIME_LIMIT",
    "JsFilter",
    "call_generator",
    "called_prompt",
    "code_ref",
    "filter_names",
    "function_prompt",
    "read_filters",
]

HOOK_TIME_LIMIT = 60.0
"""Seconds one call of a Python prompt function or test generator may take."""

_CODE_REF = re.compile(
    r"^file://(?P<path>.+?\.(?P<ext>py|js|cjs|mjs))(?::(?P<fn>[A-Za-z_$][\w$]*))?$"
)
_ES_MODULE = re.compile(r"^\s*(import\s[^(]|import\{|export\s)", re.M)


def code_ref(item: str) -> tuple[str, str, str | None] | None:
    """(path, extension, function) of a ``file://`` reference to Python or JavaScript code."""
    found = _CODE_REF.match(item.strip())
    if found is None:
        return None
    return found["path"], found["ext"], found["fn"]


def function_prompt(
    loader: Loader, item: str, base: Path, where: Location, label: str | None
) -> list[Prompt] | None:
    """The prompt a prompt function stands for; None if ``item`` names no code ([] on error)."""
    ref = code_ref(item)
    if ref is None:
        return None
    raw, ext, name = ref
    path = fileref.resolve(raw, base)
    if not path.is_file():
        loader.error(where, f"prompt function file not found: {raw} (looked for {path})")
        return []
    shown = f"{raw}:{name}" if name else raw
    if ext == "py":
        if name is None:
            loader.error(
                where,
                f"`{raw}`: name the prompt function (`file://{raw}:fn`); a Python file run as"
                " a script is not supported",
            )
            return []
        hook = PromptFunction("python", path, name, "", shown)
    else:
        source = read_text(path, where=where)
        if ext == "mjs" or _ES_MODULE.search(source):
            loader.error(
                where,
                f"`{raw}` is an ES module (import/export): skilleval's JavaScript sandbox runs"
                " CommonJS without packages; write it as `module.exports = function (context)"
                " {…}` with no imports",
            )
            return []
        failure = jsengine.check_module(source)
        if failure is not None:
            loader.error(where, failure.describe(display_path(path)))
            return []
        hook = PromptFunction("javascript", path, name, source, shown)
    return [Prompt(label or shown, where=where, function=hook)]


def _provider(top: Mapping[str, Any]) -> dict[str, str]:
    """promptfoo's ``context.provider``: the first provider's id and label, as written (an
    imported suite's first model)."""
    for key in ("providers", "targets", "models", "model"):
        raw = top.get(key)
        first = raw[0] if isinstance(raw, list) and raw else raw
        if isinstance(first, str):
            return {"id": first, "label": ""}
        if isinstance(first, Mapping):
            return {"id": str(first.get("id") or ""), "label": str(first.get("label") or "")}
    return {"id": "", "label": ""}


def _call_python(path: Path, name: str, args: list[Any], what: str) -> Any:
    """``name(*args)`` from the user's file, guarded; raises ValueError with the reason."""
    if not imports_allowed():
        raise ValueError(f"{what} not run: running users' code is turned off (--no-plugins)")

    def run() -> Any:
        fn = getattr(import_file(path), name, None)
        if not callable(fn):
            raise LookupError(f"{display_path(path)} has no function {name!r}")
        return fn(*args)

    called = call_limited(run, HOOK_TIME_LIMIT)
    if called.timed_out:
        raise ValueError(f"{what} was stopped after {HOOK_TIME_LIMIT:g} s, its time limit")
    if called.raised is not None:
        exc = called.raised
        at = raised_at(exc, str(path))
        where = f" at {at}" if at else ""
        raise ValueError(f"{what} raised {type(exc).__name__}{where}: {exc}")
    return called.value


def called_prompt(
    loader: Loader, prompt: Prompt, vars_: Mapping[str, Any], where: Location
) -> Prompt | None:
    """The prompt its function returns for ``vars_`` (None, and an error, if it cannot)."""
    hook = prompt.function
    assert hook is not None
    context = {"vars": dict(vars_), "provider": _provider(loader.top), "config": {}}
    what = f"prompt function {hook.shown}"
    if hook.kind == "python" and not imports_allowed():
        message = f"{what} is not run (--no-plugins): its tests' prompts are left empty"
        loader.foreign_notes.append(str(Diagnostic(prompt.where, message, severity="warning")))
        return Prompt(prompt.label, text="", where=prompt.where)
    try:
        if hook.kind == "python":
            value = _call_python(hook.path, hook.name or "", [context], what)
        else:
            outcome = jsengine.call_module(hook.source, hook.name, [context])
            if outcome.failure is not None:
                raise ValueError(outcome.failure.describe(display_path(hook.path)))
            value = outcome.value
    except ValueError as exc:
        loader.error(where, str(exc))
        return None
    if isinstance(value, Mapping) and "prompt" in value:
        value = value["prompt"]
    if isinstance(value, str):
        return Prompt(prompt.label, text=value, where=prompt.where)
    if isinstance(value, list) and all(
        isinstance(m, Mapping)
        and isinstance(m.get("role"), str)
        and isinstance(m.get("content"), str)
        for m in value
    ):
        messages = tuple((str(m["role"]), str(m["content"])) for m in value)
        return Prompt(prompt.label, messages=messages, where=prompt.where)
    loader.error(
        where,
        f"{what} returned {type(value).__name__}; a prompt function returns text, a list of"
        " {role, content} messages, or {prompt: …}",
    )
    return None


def call_generator(path: Path, name: str | None, config: Any) -> list[Any]:
    """The tests a test generator returns: a Python function (``generate_tests`` unless
    named), or a JavaScript file's export, run in the sandbox. Raises ValueError with the
    reason."""
    args = [] if config is None else [config]
    if path.suffix != ".py":
        what = f"test generator {display_path(path)}" + (f":{name}" if name else "")
        source = read_text(path)
        if path.suffix == ".mjs" or _ES_MODULE.search(source):
            raise ValueError(
                f"{what} is an ES module (import/export): skilleval's JavaScript sandbox runs"
                " CommonJS without packages; write it as `module.exports = function () {…}`"
            )
        outcome = jsengine.call_module(source, name, args)
        if outcome.failure is not None:
            raise ValueError(outcome.failure.describe(display_path(path)))
        value = outcome.value
    else:
        what = f"test generator {display_path(path)}:{name or 'generate_tests'}"
        value = _call_python(path, name or "generate_tests", args, what)
    if not isinstance(value, list):
        raise ValueError(f"{what} must return a list of tests, not {type(value).__name__}")
    return value


class JsFilter:
    """A ``nunjucksFilters`` entry: the file's export, run in the sandbox for each use."""

    def __init__(self, source: str, shown: str) -> None:
        self.source = source
        self.shown = shown

    def __call__(self, value: Any, *args: Any) -> Any:
        values = [None if isinstance(v, jinja2.Undefined) else v for v in (value, *args)]
        outcome = jsengine.call_module(self.source, None, values)
        if outcome.failure is not None:
            raise TemplateProblem(f"filter {outcome.failure.describe(self.shown)}")
        return "" if outcome.undefined or outcome.value is None else outcome.value


def filter_names(doc: Document) -> frozenset[str]:
    """The names ``nunjucksFilters`` gives, usable or not (a refused one is reported once, at
    its key, not again at each template that uses it)."""
    raw = doc.data.get("nunjucksFilters")
    if not isinstance(raw, Mapping) or not reads_as_promptfoo(doc.data):
        return frozenset()
    return frozenset(str(k) for k in raw)


def read_filters(loader: Loader, doc: Document) -> dict[str, JsFilter]:
    """A promptfoo config's ``nunjucksFilters``: each name's JavaScript file, checked.

    promptfoo reads each value as a path relative to the config (``file://`` finds nothing
    there, so it is refused with that reason).
    """
    raw = doc.data.get("nunjucksFilters")
    out: dict[str, JsFilter] = {}
    if raw is not None and not reads_as_promptfoo(doc.data):
        loader.error(
            doc.key_at(["nunjucksFilters"]),
            "`nunjucksFilters` is promptfoo's: it applies with promptfoo's templates, in a"
            " promptfoo config or a suite with `compat: promptfoo`",
        )
        return out
    for name, written in raw.items() if isinstance(raw, Mapping) else ():
        where = doc.at(["nunjucksFilters", name])
        if not isinstance(written, str):
            continue  # the schema has said why
        if fileref.is_ref(written):
            loader.error(
                where,
                f"promptfoo reads a filter's file as a path, and `{written}` names none there:"
                f" write `{written.removeprefix('file://')}`",
            )
            continue
        path = fileref.resolve(written, loader.base)
        if not path.is_file():
            loader.error(where, f"filter file not found: {written} (looked for {path})")
            continue
        source = read_text(path, where=where)
        if path.suffix == ".mjs" or _ES_MODULE.search(source):
            loader.error(
                where,
                f"`{written}` is an ES module (import/export): skilleval's JavaScript sandbox"
                " runs CommonJS without packages; write it as `module.exports = function"
                " (value) {…}` with no imports",
            )
            continue
        failure = jsengine.check_module(source)
        if failure is not None:
            loader.error(where, failure.describe(written))
            continue
        out[str(name)] = JsFilter(source, written)
    return out
