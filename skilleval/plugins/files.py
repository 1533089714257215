"""Import one plugin file from a plugin folder, with errors that point into it."""

from __future__ import annotations

import ast
import hashlib
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from skilleval.assertions.api import AssertionType
from skilleval.errors import Diagnostic, Location, PluginError, SuiteError
from skilleval.userfile import read_bytes


def import_plugin_file(file: Path) -> ModuleType:
    """Import one plugin file under a stable, unique module name.

    The source is compiled afresh on every import instead of going through the bytecode
    cache, whose staleness check (whole-second mtime and size) can miss a quick edit.

    Raises:
        PluginError: The file has a syntax error or raised while it ran; the position is the
            deepest line of the file in the traceback.
    """
    resolved = file.resolve()
    digest = hashlib.sha256(str(resolved.parent).encode()).hexdigest()[:12]
    name = f"skilleval_plugins.d{digest}.{resolved.stem}"
    module = ModuleType(name)
    module.__file__ = str(resolved)
    sys.modules[name] = module
    try:
        source = read_bytes(resolved, Location(str(file)))
    except SuiteError as exc:
        sys.modules.pop(name, None)
        raise PluginError(exc.diagnostics) from None
    try:
        code = compile(source, str(resolved), "exec")
        exec(code, module.__dict__)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        where = Location(str(file), exc.lineno or 1, exc.offset or 1)
        raise PluginError([Diagnostic(where, f"plugin has a syntax error: {exc.msg}")]) from None
    except Exception as exc:
        # Importing runs the author's code, which may raise anything.
        sys.modules.pop(name, None)
        line = _line_in(exc, resolved)
        raise PluginError(
            [
                Diagnostic(
                    Location(str(file), line, 1),
                    f"plugin failed to import: {type(exc).__name__}: {exc}",
                )
            ]
        ) from None
    return module


def _line_in(exc: BaseException, file: Path) -> int:
    """The deepest line of ``file`` in the traceback, so the message points into the plugin."""
    line = 1
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == file:
            line = frame.lineno or line
    return line


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
        fn=_not_imported,
        value_schema=value if isinstance(value, dict) or value is None else {},
        tier="model" if tier == "model" else "deterministic",
        value_required=bool(required),
        options_schema=options if isinstance(options, dict) else {},
        summary=doc.strip().splitlines()[0] if doc.strip() else "",
        origin=f"{file} (read, not imported)",
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
