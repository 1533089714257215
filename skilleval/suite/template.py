"""``{{ var }}`` templates for prompts and assertion values (jinja2, sandboxed, strict)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import jinja2
import jinja2.meta
import jinja2.nodes
import jinja2.sandbox
from jinja2.exceptions import SecurityError


class _NoFiles(jinja2.BaseLoader):
    """Templates are one string each: ``{% include %}`` and ``{% import %}`` read nothing."""

    def get_source(self, environment: jinja2.Environment, template: str) -> Any:
        raise jinja2.TemplateNotFound(
            template, f"templates cannot include or import other templates ({template!r})"
        )


@functools.cache
def _env() -> jinja2.sandbox.SandboxedEnvironment:
    # Strict: a misspelt variable is an error, never a silently empty string.
    return jinja2.sandbox.SandboxedEnvironment(
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        loader=_NoFiles(),
    )


def is_template(text: str) -> bool:
    """Whether ``text`` contains template syntax at all (plain text is used as is)."""
    return "{{" in text or "{%" in text


@functools.lru_cache(maxsize=4096)
def _compile(text: str) -> jinja2.Template:
    return _env().from_string(text)


_FILE_NODES = (
    jinja2.nodes.Include,
    jinja2.nodes.Import,
    jinja2.nodes.FromImport,
    jinja2.nodes.Extends,
)


class TemplateProblem(Exception):
    """A template that does not parse or render; ``line`` is 1-based within the template."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@functools.lru_cache(maxsize=4096)
def variables(text: str) -> frozenset[str]:
    """The top-level variable names a template reads."""
    if not is_template(text):
        return frozenset()
    try:
        ast = _env().parse(text)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateProblem(f"template syntax error: {exc.message}", exc.lineno or 1) from None
    for node in ast.find_all(_FILE_NODES):
        raise TemplateProblem(
            "templates cannot include, import or extend other templates; "
            "write the text in place or pass it in a variable",
            node.lineno,
        )
    try:
        return frozenset(jinja2.meta.find_undeclared_variables(ast))
    except jinja2.TemplateSyntaxError as exc:
        # Only compiling finds some mistakes, such as a filter that does not exist.
        raise TemplateProblem(f"template error: {exc.message}", exc.lineno or 1) from None


def render(text: str, vars: Mapping[str, Any]) -> str:
    """Render ``text`` with ``vars``; plain text comes back unchanged."""
    if not is_template(text):
        return text
    try:
        return _compile(text).render(**vars)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateProblem(f"template syntax error: {exc.message}", exc.lineno or 1) from None
    except jinja2.UndefinedError as exc:
        raise TemplateProblem(f"template error: {exc.message}") from None
    except SecurityError as exc:
        raise TemplateProblem(f"template error: {exc}") from None
    except jinja2.TemplateError as exc:
        raise TemplateProblem(f"template error: {exc.message or exc}") from None
    except OverflowError as exc:
        # The sandbox's own limit, as in range() over 100,000 items.
        raise TemplateProblem(f"template error: {exc}") from None


def render_value(value: Any, vars: Mapping[str, Any]) -> Any:
    """Render every string inside an assertion value."""
    if isinstance(value, str):
        return render(value, vars)
    if isinstance(value, list):
        return [render_value(v, vars) for v in value]
    if isinstance(value, dict):
        return {k: render_value(v, vars) for k, v in value.items()}
    return value
