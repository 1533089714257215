"""``{{ var }}`` templates for prompts and assertion values (jinja2, sandboxed, strict).

A template is checked once, when the suite loads: it must parse, use only known filters and
tests, and read no other template (``include``, ``import``, ``extends``: a suite's templates
have no loader). Rendering has limits, so that no template can hang a run or exhaust memory:
every ``for`` loop counts its steps against :data:`MAX_STEPS` per render, ``range`` is
capped by the sandbox, ``*`` and ``**`` may not build values past :data:`MAX_OUTPUT`, and
the output stops at :data:`MAX_OUTPUT` characters. A limit hit is a :class:`TemplateProblem`.

promptfoo writes its templates in Nunjucks; the filters its configs use that jinja2 lacks or
spells differently are added with Nunjucks' meaning: ``load`` parses JSON, ``dump`` writes it
(compact, as ``JSON.stringify`` does; ``dump(2)`` indents). A variable read only through
``default`` (``{{ tone | default('plain') }}``) need not be defined, and
``{% for key, value in mapping %}`` walks a mapping's entries.

A promptfoo config's vars come as :class:`~skilleval.promptfoo.rendering.NunjucksVars`; with them, a value printed by
``{{ }}`` reads as Nunjucks prints it (JavaScript's ``String(value)``): ``true``, an empty
string for null, ``1`` for ``1.0``, ``1e+21`` past 10^21, a list joined with commas and a
mapping as ``[object Object]``; an undefined variable prints as nothing. skilleval's own
suites print Python's text, and an undefined variable is an error there.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import difflib
import functools
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import jinja2
import jinja2.meta
import jinja2.nodes
import jinja2.sandbox
from jinja2.exceptions import SecurityError

from skilleval.errors import TemplateProblem
from skilleval.promptfoo.rendering import NunjucksVars, nunjucks_finalize

__all__ = [
    "MAX_OUTPUT",
    "MAX_STEPS",
    "TemplateProblem",
    "check",
    "is_template",
    "render",
    "render_value",
    "variables",
]

MAX_OUTPUT = 1_000_000
"""The most characters one render may produce, and the largest string or list ``*`` builds."""
MAX_STEPS = 1_000_000
"""The most ``for``-loop iterations one render may take, nested loops counted together."""
_MAX_POWER_BITS = 100_000
"""The largest integer ``**`` may build, in bits."""
_BUDGET_FILTER = "__skilleval_steps"
_FOREIGN_WORDS: dict[type[jinja2.nodes.Node], str] = {
    jinja2.nodes.Include: "include",
    jinja2.nodes.Import: "import",
    jinja2.nodes.FromImport: "from ... import",
    jinja2.nodes.Extends: "extends",
}
_FOREIGN = tuple(_FOREIGN_WORDS)


class _Steps:
    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_STEPS


_steps: contextvars.ContextVar[_Steps | None] = contextvars.ContextVar("_steps", default=None)
_known: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "_known_filters", default=frozenset()
)
"""The names of a promptfoo config's ``nunjucksFilters`` while it loads, for :func:`check`."""


@contextlib.contextmanager
def known_filters(names: Iterable[str]) -> Iterator[None]:
    """Accept these filter names in the templates checked inside (a suite's own filters,
    given to :func:`render` with its vars)."""
    token = _known.set(frozenset(names))
    try:
        yield
    finally:
        _known.reset(token)


def _counted(iterable: Iterable[Any], pairs: bool = False) -> Iterator[Any]:
    """The items of a ``for`` loop, each one charged to the current render's budget.

    ``pairs``: the loop names two targets (``{% for k, v in obj %}``), which over a mapping
    walks its entries, as Nunjucks does.
    """
    if pairs and isinstance(iterable, Mapping):
        iterable = iterable.items()
    steps = _steps.get()
    for item in iterable:
        if steps is not None:
            steps.left -= 1
            if steps.left < 0:
                raise TemplateProblem(
                    f"template error: loops ran past {MAX_STEPS:,} steps (the template limit)"
                )
        yield item


class _Environment(jinja2.sandbox.SandboxedEnvironment):
    intercepted_binops = frozenset(["*", "**"])

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                size = len(seq) * times if isinstance(seq, (str, list, tuple)) else 0
                if isinstance(times, int) and size > MAX_OUTPUT:
                    raise TemplateProblem(
                        f"template error: `*` would build {size:,} items;"
                        f" the limit is {MAX_OUTPUT:,}"
                    )
        elif (
            isinstance(left, int)
            and isinstance(right, int)
            and right > 0
            and abs(left) > 1
            and right * abs(left).bit_length() > _MAX_POWER_BITS
        ):
            raise TemplateProblem(
                f"template error: `**` would build an integer over {_MAX_POWER_BITS:,} bits"
            )
        return super().call_binop(context, operator, left, right)


def _load(text: Any) -> Any:
    """Nunjucks' ``load`` as promptfoo defines it: ``JSON.parse``."""
    if not isinstance(text, str):
        raise TemplateProblem(
            f"template error: load takes a JSON string, not {type(text).__name__}"
        )
    try:
        return json.loads(text)
    except ValueError as exc:
        raise TemplateProblem(f"template error: load: not valid JSON: {exc}") from None


def _dump(value: Any, indent: int | str | None = None) -> str:
    """Nunjucks' ``dump``: ``JSON.stringify(value, null, indent)``."""
    if isinstance(value, jinja2.Undefined):
        value.__str__()  # strict: reading an undefined variable is an error
    if isinstance(indent, int) and not 0 <= indent <= 10:
        indent = max(0, min(indent, 10))  # JSON.stringify clamps the indent to 10
    try:
        if indent:
            return json.dumps(value, indent=indent, ensure_ascii=False, default=str)
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError) as exc:
        raise TemplateProblem(f"template error: dump: {exc}") from None


_DEFAULT_FILTERS = frozenset({"default", "d"})


@functools.cache
def _env(nunjucks: bool = False) -> _Environment:
    # Strict: a misspelt variable is an error, never a silently empty string.
    # Nunjucks prints an undefined variable as nothing (the loader warns where it can).
    env = _Environment(
        undefined=jinja2.ChainableUndefined if nunjucks else jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        finalize=nunjucks_finalize if nunjucks else None,
    )
    env.filters[_BUDGET_FILTER] = _counted
    env.filters["load"] = _load
    env.filters["dump"] = _dump
    return env


def is_template(value: object) -> bool:
    """Whether ``value`` (a string, or a list or mapping of them) holds template syntax.

    Plain text is used as is, and a value with template syntax can only be checked fully
    once it is rendered with a test's vars.
    """
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, (list, tuple)):
        return any(is_template(v) for v in value)
    if isinstance(value, Mapping):
        return any(is_template(v) for v in value.values())
    return False


def _syntax(exc: jinja2.TemplateSyntaxError) -> TemplateProblem:
    return TemplateProblem(f"template syntax error: {exc.message}", exc.lineno or 1)


@functools.lru_cache(maxsize=4096)
def _parse(
    text: str, extra: frozenset[str] = frozenset()
) -> tuple[jinja2.nodes.Template, frozenset[str]]:
    """The template's syntax tree, checked, and the variables it reads; ``extra`` names the
    suite's own filters."""
    env = _env_with(False, tuple((name, _no_filter) for name in sorted(extra)))
    try:
        ast = env.parse(text)
    except jinja2.TemplateSyntaxError as exc:
        raise _syntax(exc) from None
    for node in ast.find_all(_FOREIGN):
        word = _FOREIGN_WORDS[type(node)]
        raise TemplateProblem(
            f"template error: `{word}` is not supported: a suite's templates cannot read"
            " other templates; put the text in the prompt or in a var",
            node.lineno or 1,
        )
    for node in ast.find_all((jinja2.nodes.Filter, jinja2.nodes.Test)):
        table, kind = (
            (env.filters, "filter")
            if isinstance(node, jinja2.nodes.Filter)
            else (env.tests, "test")
        )
        known = node.name in table or (kind == "filter" and node.name in extra)
        if not known or node.name == _BUDGET_FILTER:
            close = difflib.get_close_matches(
                node.name, [n for n in table if n != _BUDGET_FILTER], n=1
            )
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise TemplateProblem(
                f"template error: unknown {kind} '{node.name}'{hint}", node.lineno or 1
            )
    try:
        # Finding the variables compiles the template, which checks more than parsing does
        # (a block defined twice …).
        undeclared = jinja2.meta.find_undeclared_variables(ast)
    except jinja2.TemplateSyntaxError as exc:
        raise _syntax(exc) from None
    return ast, frozenset(undeclared - _only_defaulted(ast))


def _only_defaulted(ast: jinja2.nodes.Template) -> set[str]:
    """Names read only through ``default`` (``{{ x | default('y') }}``): they are optional."""
    guarded: set[int] = set()
    for node in ast.find_all(jinja2.nodes.Filter):
        if node.name in _DEFAULT_FILTERS and isinstance(node.node, jinja2.nodes.Name):
            guarded.add(id(node.node))
    defaulted: set[str] = set()
    bare: set[str] = set()
    for name in ast.find_all(jinja2.nodes.Name):
        (defaulted if id(name) in guarded else bare).add(name.name)
    return defaulted - bare


def _no_filter(value: Any, *args: Any) -> Any:
    """Stands for a suite's own filter where a template is only checked, never rendered."""
    return value


@functools.lru_cache(maxsize=64)
def _env_with(nunjucks: bool, filters: tuple[tuple[str, Any], ...]) -> jinja2.Environment:
    """The environment with a suite's own filters added."""
    if not filters:
        return _env(nunjucks)
    env = _env(nunjucks).overlay()
    env.filters = {**env.filters, **dict(filters)}  # the overlay shares its parent's dict
    return env


@functools.lru_cache(maxsize=4096)
def _compile(
    text: str, nunjucks: bool = False, filters: tuple[tuple[str, Any], ...] = ()
) -> jinja2.Template:
    """The template ready to render, with every ``for`` loop charged to the step budget."""
    ast = copy.deepcopy(_parse(text, frozenset(name for name, _ in filters))[0])
    for loop in ast.find_all(jinja2.nodes.For):
        pairs = isinstance(loop.target, jinja2.nodes.Tuple) and len(loop.target.items) == 2
        args = [jinja2.nodes.Const(pairs)]
        loop.iter = jinja2.nodes.Filter(loop.iter, _BUDGET_FILTER, args, [], None, None)
    try:
        return _env_with(nunjucks, filters).from_string(ast)
    except jinja2.TemplateSyntaxError as exc:
        raise _syntax(exc) from None


def check(text: str) -> frozenset[str]:
    """Check a template the way it will be rendered; the top-level variable names it reads.

    Raises:
        TemplateProblem: it does not parse, uses an unknown filter or test, or reads
            another template; ``line`` is 1-based within ``text``.
    """
    if not is_template(text):
        return frozenset()
    return _parse(text, _known.get())[1]


variables = check
"""The top-level variable names a template reads (the template is checked on the way)."""


def render(text: str, vars: Mapping[str, Any]) -> str:
    """Render ``text`` with ``vars``; plain text comes back unchanged.

    Raises:
        TemplateProblem: the template is invalid, reads an undefined variable, breaks the
            sandbox's rules or hits a limit.
    """
    if not is_template(text):
        return text
    nunjucks = isinstance(vars, NunjucksVars)
    filters = tuple(sorted(vars.filters.items())) if isinstance(vars, NunjucksVars) else ()
    compiled = _compile(text, nunjucks, filters)
    token = _steps.set(_Steps())
    try:
        out: list[str] = []
        size = 0
        for chunk in compiled.generate(**vars):
            size += len(chunk)
            if size > MAX_OUTPUT:
                raise TemplateProblem(
                    f"template error: the output passed {MAX_OUTPUT:,} characters"
                    " (the template limit)"
                )
            out.append(chunk)
        return "".join(out)
    except jinja2.TemplateSyntaxError as exc:
        raise _syntax(exc) from None
    except jinja2.UndefinedError as exc:
        raise TemplateProblem(f"template error: {exc.message}") from None
    except SecurityError as exc:
        raise TemplateProblem(f"template error: {exc}") from None
    except (OverflowError, MemoryError, RecursionError) as exc:
        raise TemplateProblem(f"template error: {exc or type(exc).__name__}") from None
    except (TypeError, ValueError, LookupError, ArithmeticError) as exc:
        # A value of the wrong kind (unpacking a string, a filter given a number …).
        raise TemplateProblem(f"template error: {exc}") from None
    finally:
        _steps.reset(token)


def render_value(value: Any, vars: Mapping[str, Any]) -> Any:
    """Render every string inside an assertion value."""
    if isinstance(value, str):
        return render(value, vars)
    if isinstance(value, list):
        return [render_value(v, vars) for v in value]
    if isinstance(value, dict):
        return {k: render_value(v, vars) for k, v in value.items()}
    return value
