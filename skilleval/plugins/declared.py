"""Assertion types read from a plugin file's source, for checking a suite without running it.

``validate --no-plugins`` registers these in place of importing the plugin folders: the
names, and what the ``@assertion`` decorator says about values where it says it in literals.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from skilleval.api import AssertionType
from skilleval.errors import Diagnostic, Location, PluginError, SuiteError
from skilleval.userfile import read_bytes

_DECORATOR = "assertion"


def declared_assertions(file: Path) -> list[AssertionType]:
    """The assertion types ``file`` declares, read from its source without running it.

    Each ``@assertion("name", …)`` decorator whose name is a string literal counts. Its
    ``value``, ``options``, ``tier`` and ``value_required`` are taken where they are literals;
    a ``value`` schema that is not one accepts any value. The function itself is replaced by
    one that refuses to run: this is for checking a suite without running its plugins.

    Raises:
        PluginError: The file cannot be read or has a syntax error.
    """
    try:
        source = read_bytes(file.resolve(), Location(str(file)))
    except SuiteError as exc:
        raise PluginError(exc.diagnostics) from None
    try:
        tree = ast.parse(source, str(file))
    except SyntaxError as exc:
        where = Location(str(file), exc.lineno or 1, exc.offset or 1)
        raise PluginError([Diagnostic(where, f"plugin has a syntax error: {exc.msg}")]) from None
    found: list[AssertionType] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for decorator in node.decorator_list:
            spec = _declared(decorator, node, file)
            if spec is not None:
                found.append(spec)
    return found


def _declared(
    decorator: ast.expr, node: ast.FunctionDef | ast.AsyncFunctionDef, file: Path
) -> AssertionType | None:
    if not isinstance(decorator, ast.Call):
        return None
    func = decorator.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    if name != _DECORATOR or not decorator.args:
        return None
    first = decorator.args[0]
    if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
        return None
    keywords = {k.arg: k.value for k in decorator.keywords if k.arg}
    value: Any = None
    if "value" in keywords:
        value = _literal(keywords["value"], {})
    options = _literal(keywords["options"], {}) if "options" in keywords else {}
    tier = _literal(keywords["tier"], "deterministic") if "tier" in keywords else "deterministic"
    required = (
        _literal(keywords["value_required"], value is not None)
        if "value_required" in keywords
        else value is not None
    )
    doc = ast.get_docstring(node) or ""
    return AssertionType(
        name=first.value,
        factory=_not_imported,
        schema=value if isinstance(value, dict) or value is None else {},
        tier="model" if tier == "model" else "deterministic",
        value_required=bool(required),
        options_schema=options if isinstance(options, dict) else {},
        summary=doc.strip().splitlines()[0] if doc.strip() else "",
        origin=f"{file} (read, not imported)",
        external=True,
        uses_threshold=bool(_literal(keywords.get("uses_threshold"), False)),
    )


def _literal(node: ast.expr | None, default: Any) -> Any:
    if node is None:
        return default
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return default


def _not_imported(check: Any) -> Any:
    raise RuntimeError("this plugin was read but not imported (validate --no-plugins)")
