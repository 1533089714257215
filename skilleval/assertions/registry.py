"""Assertion types by name, built fresh for every run.

Order of loading: the built-ins, then the ``skilleval.assertions`` entry-point group, then
every ``*.py`` in each plugin folder. A name defined twice is an error naming both places.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import inspect
import pkgutil
import sys
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from skilleval.assertions.api import MARK, NEGATION_PREFIX, AssertionType
from skilleval.errors import Diagnostic, Location, PluginError, SuiteError
from skilleval.userfile import lookup_problem, read_bytes

ENTRY_POINT_GROUP = "skilleval.assertions"

#: Types people bring from promptfoo that skilleval cannot run, and what to use instead.
UNSUPPORTED: dict[str, str] = {
    "javascript": "skilleval does not run JavaScript; use `expr` or `python`",
    "ruby": "skilleval does not run Ruby; use `expr` or `python`",
    "webhook": "webhooks are not supported; write an assertion plugin",
    "assert-set": "assert-set is not supported; list the assertions on the test",
    "select-best": "select-best compares providers, and a suite runs one model",
    "human": "manual grading is not supported",
}


@dataclass(frozen=True, slots=True)
class Resolved:
    """An assertion type as written in a suite: the spec, and whether ``not-`` negates it."""

    spec: AssertionType
    negated: bool


class Registry:
    """Assertion types by name. Build one per run; never share one between runs."""

    def __init__(self) -> None:
        self._specs: dict[str, AssertionType] = {}
        self.sources: list[str] = []
        """Every plugin file or module scanned, for watch mode and the report."""

    def __contains__(self, name: str) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[AssertionType]:
        return iter(sorted(self._specs.values(), key=lambda s: s.name))

    def __len__(self) -> int:
        return len(self._specs)

    def get(self, name: str) -> AssertionType | None:
        return self._specs.get(name)

    def add(self, spec: AssertionType) -> None:
        """Add one type; a second definition of the same name is an error."""
        problem = _check_spec(spec)
        if problem:
            raise PluginError([Diagnostic(_fn_location(spec), problem)])
        old = self._specs.get(spec.name)
        if old is not None:
            raise PluginError(
                [
                    Diagnostic(
                        _fn_location(spec),
                        f"assertion type '{spec.name}' is defined twice: at {old.defined_at} "
                        f"({old.origin}) and at {spec.defined_at} ({spec.origin})",
                    )
                ]
            )
        self._specs[spec.name] = spec

    def scan(self, module: ModuleType, origin: str) -> int:
        """Add every marked function defined in ``module``; return how many."""
        found = [
            getattr(obj, MARK)
            for _, obj in inspect.getmembers(module, inspect.isfunction)
            if obj.__module__ == module.__name__ and hasattr(obj, MARK)
        ]
        found.sort(key=lambda s: s.fn.__code__.co_firstlineno)
        for spec in found:
            self.add(replace(spec, origin=origin))
        return len(found)

    def load_builtins(self) -> None:
        from skilleval.assertions import builtin

        for info in sorted(pkgutil.iter_modules(builtin.__path__), key=lambda i: i.name):
            if info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{builtin.__name__}.{info.name}")
            self.scan(module, "builtin")

    def load_entry_points(self) -> None:
        from importlib.metadata import entry_points

        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            dist = ep.dist.name if ep.dist else "?"
            version = ep.dist.version if ep.dist else "?"
            try:
                module = ep.load()
            except Exception as exc:
                raise PluginError(
                    [
                        Diagnostic(
                            Location(f"entry point '{ep.name}' ({dist})"),
                            f"plugin failed to import: {type(exc).__name__}: {exc}",
                        )
                    ]
                ) from None
            if isinstance(module, ModuleType):
                self.scan(module, f"entry point '{ep.name}' ({dist} {version})")
                self.sources.append(str(getattr(module, "__file__", ep.value)))

    def load_folder(self, folder: Path, *, where: Location | None = None) -> None:
        """Import every ``*.py`` in ``folder`` (sorted; ``_``-prefixed files are skipped)."""
        problem = lookup_problem(folder)
        if problem is not None:
            raise PluginError([Diagnostic(where or Location(str(folder)), problem)])
        if not folder.is_dir():
            raise PluginError(
                [Diagnostic(where or Location(str(folder)), f"plugin folder not found: {folder}")]
            )
        for file in sorted(folder.glob("*.py")):
            if file.name.startswith("_"):
                continue
            module = import_plugin_file(file)
            self.sources.append(str(file))
            self.scan(module, str(file))

    def resolve(self, type_name: str, where: Location) -> Resolved:
        """Look up ``type_name``, which may carry a ``not-`` prefix."""
        base = type_name.removeprefix(NEGATION_PREFIX)
        spec = self._specs.get(base)
        if spec is not None:
            return Resolved(spec, negated=base != type_name)
        if base in UNSUPPORTED:
            message = f"unsupported assertion type '{type_name}': {UNSUPPORTED[base]}"
        else:
            close = difflib.get_close_matches(base, list(self._specs), n=1, cutoff=0.6)
            hint = f"; did you mean '{_with_prefix(close[0], type_name)}'?" if close else ""
            message = f"unknown assertion type '{type_name}'{hint}"
        raise PluginError([Diagnostic(where, message)])

    def listing(self) -> list[dict[str, Any]]:
        """Every type with its origin and one-line summary, for ``plugins`` and reports."""
        return [
            {
                "name": s.name,
                "tier": s.tier,
                "origin": s.origin,
                "summary": s.summary,
                "defined_at": s.defined_at if s.origin != "builtin" else None,
            }
            for s in self
        ]


def _with_prefix(name: str, written: str) -> str:
    return NEGATION_PREFIX + name if written.startswith(NEGATION_PREFIX) else name


def _fn_location(spec: AssertionType) -> Location:
    code = getattr(spec.fn, "__code__", None)
    if code is None:
        return Location(spec.origin)
    return Location(code.co_filename, code.co_firstlineno, 1)


def _check_spec(spec: AssertionType) -> str | None:
    if spec.name.startswith(NEGATION_PREFIX):
        return f"assertion type '{spec.name}' must not start with '{NEGATION_PREFIX}'; negation is automatic"
    if not spec.name or not all(c.isalnum() or c in "-_:" for c in spec.name):
        return f"assertion type name '{spec.name}' may only use letters, digits, '-', '_' and ':'"
    if spec.tier not in ("deterministic", "model"):
        return f"assertion type '{spec.name}' has an unknown tier '{spec.tier}'"
    try:
        params = inspect.signature(spec.fn).parameters
    except (TypeError, ValueError):
        return None
    if len(params) != 1:
        return f"assertion type '{spec.name}' must take exactly one argument (a Check), not {len(params)}"
    if spec.value_schema is not None:
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(dict(spec.value_schema))
        except SchemaError as exc:
            return f"assertion type '{spec.name}' has an invalid value schema: {exc.message}"
    return None


def import_plugin_file(file: Path) -> ModuleType:
    """Import one plugin file under a stable, unique module name.

    The source is compiled afresh on every import instead of going through the bytecode
    cache, whose staleness check (whole-second mtime and size) can miss a quick edit.
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


def default_registry(
    folders: Iterable[tuple[Path, Location | None]] = (), *, entry_points: bool = True
) -> Registry:
    """Built-ins, then installed plugins, then folders: the registry a run uses."""
    registry = Registry()
    registry.load_builtins()
    if entry_points:
        registry.load_entry_points()
    for folder, where in folders:
        registry.load_folder(folder, where=where)
    return registry
