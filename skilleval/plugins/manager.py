"""One plugin manager for every extension point, built fresh for every run.

Order of loading: the built-ins (:mod:`skilleval.plugins.builtins`), then installed packages
(the entry-point groups below), then every ``*.py`` in each plugin folder. All three are
scanned the same way, for the marks that :mod:`skilleval.plugins.markers` and
:func:`~skilleval.api.assertion` attach. A name defined twice within a kind is an
error naming both places.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, fields, is_dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from skilleval.api import KIND_LABELS, MARK, AssertionType, Kind, Registration
from skilleval.errors import Diagnostic, Location, PluginError
from skilleval.plugins.builtins import CALLABLES, builtin_modules, read_manifest
from skilleval.plugins.declared import declared_assertions
from skilleval.plugins.markers import LintCheckType, ProviderType, ReporterType, ToolKindType
from skilleval.sandbox.pyfile import import_plugin_file
from skilleval.sandbox.usercode import raised_at, user_output
from skilleval.userfile import lookup_problem
from skilleval.util.home import home_dir
from skilleval.util.installed import entry_points_in

ENTRY_POINT_GROUPS: tuple[str, ...] = ("skilleval.plugins", "skilleval.assertions")
"""Installed packages name a module in either group; ``skilleval.assertions`` is the older
name, kept working. A module named in both is scanned once."""


Plugin = Registration
"""Any registration the manager holds, of any kind (the name older code uses)."""


class PluginManager:
    """Registrations by kind and name. Build one per run; never share one between runs."""

    def __init__(self) -> None:
        self._tables: dict[Kind, dict[str, Plugin]] = {kind: {} for kind in KIND_LABELS}
        self._scanned: set[str] = set()
        self._pending: dict[tuple[Kind, str], str] = {}
        """Built-ins registered from the manifest whose module is not imported yet: the module."""
        self.sources: list[str] = []
        """Every plugin file or module scanned, for watch mode and the report."""

    # -- registering ---------------------------------------------------------------------

    def add(self, plugin: Plugin) -> None:
        """Add one registration, after its own checks (its name, its schemas); a second one of
        the same kind and name is an error."""
        problem = plugin.problem()
        if problem:
            raise PluginError([Diagnostic(_location(plugin), problem)])
        table = self._tables[plugin.kind]
        old = self.find(plugin.kind, plugin.name)
        if old is not None:
            raise PluginError(
                [
                    Diagnostic(
                        _location(plugin),
                        f"{KIND_LABELS[plugin.kind]} '{plugin.name}' is defined twice: at "
                        f"{old.defined_at} ({old.origin}) and at {plugin.defined_at} ({plugin.origin})",
                    )
                ]
            )
        if isinstance(plugin, ReporterType):
            clash = next((r for r in self.reporters() if r.suffix == plugin.suffix), None)
            if clash is not None:
                real = self.find("reporter", clash.name)  # a built-in's real place
                clash = real if isinstance(real, ReporterType) else clash
                raise PluginError(
                    [
                        Diagnostic(
                            _location(plugin),
                            f"output formats '{clash.name}' and '{plugin.name}' both write "
                            f"'{plugin.suffix}' files: at {clash.defined_at} ({clash.origin}) "
                            f"and at {plugin.defined_at} ({plugin.origin})",
                        )
                    ]
                )
        table[plugin.name] = plugin

    def scan(self, module: ModuleType, origin: str, *, external: bool = True) -> int:
        """Add every marked function defined in ``module``; return how many.

        ``external``: the module is not skilleval's own (see :attr:`Registration.external`).
        """
        if module.__name__ in self._scanned:
            return 0
        self._scanned.add(module.__name__)
        found = marked(module, origin, external=external)
        for plugin in found:
            self.add(plugin)
        return len(found)

    def load_builtins(self) -> None:
        """skilleval's own registrations, from the manifest, as scanning their modules makes them.

        A module is imported when one of its registrations is looked up (:meth:`find`, which
        every lookup by name goes through); until then each registration holds what the
        manifest says it declares, and its functions import the module when called.
        """
        modules: set[str] = set()
        for entry in read_manifest():
            kind, name, module = entry["kind"], entry["name"], entry["module"]
            deferred = {field: _Deferred(module, kind, name, field) for field in entry["deferred"]}
            make: Callable[..., Plugin] = _CLASSES[kind]
            plugin = make(name=name, **entry["fields"], **deferred)
            self._tables[plugin.kind][name] = plugin
            self._pending[(plugin.kind, name)] = module
            modules.add(module)
        # As scanning them would: an entry point naming one of them adds nothing.
        self._scanned.update(modules)

    def scan_builtins(self) -> None:
        """skilleval's own registrations, found by importing and scanning every module (what
        the manifest is written from)."""
        for module_name in builtin_modules():
            self.scan(importlib.import_module(module_name), "builtin", external=False)

    def _import_builtin(self, module_name: str) -> None:
        """Put the registrations of a built-in module in place of its manifest entries."""
        for plugin in builtin_registrations(module_name).values():
            key = (plugin.kind, plugin.name)
            if self._pending.get(key) == module_name:
                del self._pending[key]
                self._tables[plugin.kind][plugin.name] = plugin

    def load_entry_points(self) -> None:
        """Every module installed packages name in :data:`ENTRY_POINT_GROUPS`.

        That none are installed is remembered under the home
        (:mod:`~skilleval.util.installed`), so that most starts skip the scan.
        """
        for ep in entry_points_in(ENTRY_POINT_GROUPS, home_dir()):
            dist = ep.dist.name if ep.dist else "?"
            version = ep.dist.version if ep.dist else "?"
            try:
                with user_output():
                    module = ep.load()
            except (Exception, SystemExit) as exc:
                # Loading runs the plugin's code, which may raise anything.
                raise PluginError(
                    [
                        Diagnostic(
                            Location(f"entry point '{ep.name}' ({dist})"),
                            f"plugin failed to import: {type(exc).__name__}: {exc}",
                        )
                    ]
                ) from None
            if isinstance(module, ModuleType) and module.__name__ not in self._scanned:
                self.scan(module, f"entry point '{ep.name}' ({dist} {version})")
                self.sources.append(str(getattr(module, "__file__", ep.value)))

    def load_folder(
        self, folder: Path, *, where: Location | None = None, run_code: bool = True
    ) -> None:
        """Import every ``*.py`` in ``folder`` (sorted; ``_``-prefixed files are skipped).

        With ``run_code`` False, nothing is imported: each file's assertion types are read
        from its source (:func:`~skilleval.plugins.declared.declared_assertions`).
        """
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
            if not run_code:
                self.sources.append(str(file))
                for spec in declared_assertions(file):
                    self.add(spec)
                continue
            module = _import_guarded(file)
            self.sources.append(str(file))
            self.scan(module, str(file))

    # -- looking up ----------------------------------------------------------------------

    def find(self, kind: Kind, name: str) -> Plugin | None:
        module = self._pending.get((kind, name))
        if module is not None:
            self._import_builtin(module)
        return self._tables[kind].get(name)

    def names(self, kind: Kind) -> list[str]:
        return sorted(self._tables[kind])

    def entries(self, kind: Kind) -> Iterator[Plugin]:
        table = self._tables[kind]
        return iter([table[name] for name in sorted(table)])

    def unknown(self, kind: Kind, name: str, *, prefix: str = "") -> str:
        """The message for a name of ``kind`` that is not registered, with a suggestion.

        ``prefix`` is written before the name and the suggestion (``not-`` for assertions).
        """
        close = difflib.get_close_matches(name, list(self._tables[kind]), n=1, cutoff=0.6)
        hint = f"; did you mean '{prefix}{close[0]}'?" if close else ""
        return f"unknown {KIND_LABELS[kind]} '{prefix}{name}'{hint}"

    def lookup(self, kind: Kind, name: str, where: Location) -> Plugin:
        """The registration ``name`` of ``kind``, or a PluginError at ``where``."""
        found = self.find(kind, name)
        if found is None:
            raise PluginError([Diagnostic(where, self.unknown(kind, name))])
        return found

    def providers(self) -> list[ProviderType]:
        return [p for p in self.entries("provider") if isinstance(p, ProviderType)]

    def reporters(self) -> list[ReporterType]:
        return [p for p in self.entries("reporter") if isinstance(p, ReporterType)]

    def lint_checks(self) -> list[LintCheckType]:
        """In the order registered: skilleval's own, then plugins'."""
        return [p for p in self._tables["lint_check"].values() if isinstance(p, LintCheckType)]

    def tool_kinds(self) -> list[ToolKindType]:
        """In the order registered (built-ins as defined, then plugins), as messages list them."""
        return [p for p in self._tables["tool_kind"].values() if isinstance(p, ToolKindType)]

    def provider(self, name: str) -> ProviderType | None:
        found = self.find("provider", name)
        return found if isinstance(found, ProviderType) else None

    def reporter_for(self, suffix: str) -> ReporterType | None:
        """The output format for files ending in ``suffix`` (lower-cased), if any."""
        suffix = suffix.lower()
        return next((r for r in self.reporters() if r.suffix == suffix), None)

    def describe(self, kinds: Iterable[Kind] = tuple(KIND_LABELS)) -> list[dict[str, Any]]:
        """Every registration of ``kinds`` with its origin and summary, for ``skilleval plugins``."""
        out: list[dict[str, Any]] = []
        for kind in kinds:
            for p in self.entries(kind):
                row: dict[str, Any] = {
                    "kind": kind,
                    "name": p.name,
                    "origin": p.origin,
                    "summary": p.summary,
                    "defined_at": p.defined_at if p.external else None,
                }
                if isinstance(p, AssertionType):
                    row["tier"] = p.tier
                if isinstance(p, ReporterType):
                    row["suffix"] = p.suffix
                if isinstance(p, ProviderType):
                    row["capabilities"] = list(p.capabilities.names())
                if isinstance(p, LintCheckType):
                    row["checks"] = [c.id for c in p.checks]
                out.append(row)
        return out


def marked(module: ModuleType, origin: str, *, external: bool = True) -> list[Plugin]:
    """The registrations marked in ``module``, with ``origin``, in the order they are defined."""
    found: list[Plugin] = []
    for _, obj in inspect.getmembers(module, inspect.isfunction):
        if obj.__module__ != module.__name__:
            continue
        spec = getattr(obj, MARK, None)
        if isinstance(spec, Registration):
            found.append(replace(spec, origin=origin, external=external))
    found.sort(key=lambda p: (p.factory.__code__.co_firstlineno, p.kind))
    return found


@functools.cache
def builtin_registrations(module_name: str) -> dict[tuple[Kind, str], Plugin]:
    """The registrations of one built-in module, by kind and name (imported once a process)."""
    found = marked(importlib.import_module(module_name), "builtin", external=False)
    return {(p.kind, p.name): p for p in found}


def manifest_entries() -> list[dict[str, Any]]:
    """The manifest of the built-ins, made by importing and scanning their modules."""
    manager = PluginManager()
    manager.scan_builtins()
    entries: list[dict[str, Any]] = []
    for module_name in builtin_modules():
        for plugin in builtin_registrations(module_name).values():
            data = {f.name: _plain(getattr(plugin, f.name)) for f in fields(plugin)}
            entries.append(
                {
                    "kind": plugin.kind,
                    "name": plugin.name,
                    "module": module_name,
                    "fields": {
                        k: v
                        for k, v in data.items()
                        if k not in CALLABLES | {"name", "origin", "external"}
                    },
                    "deferred": sorted(k for k in CALLABLES if data.get(k) is not None),
                }
            )
    return entries


def _plain(value: Any) -> Any:
    """A registration's field as the manifest holds it: a declared object (capabilities, a
    lint check) as its fields."""
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


_CLASSES: dict[str, type[Registration]] = {
    "assertion": AssertionType,
    "provider": ProviderType,
    "reporter": ReporterType,
    "tool_kind": ToolKindType,
    "lint_check": LintCheckType,
}


class _Deferred:
    """A built-in registration's function, from the manifest: the module is imported when the
    function is first called (or inspected)."""

    __slots__ = ("_field", "_kind", "_module", "_name")

    def __init__(self, module: str, kind: Kind, name: str, field: str) -> None:
        self._module, self._kind, self._name, self._field = module, kind, name, field

    def _target(self) -> Callable[..., Any]:
        plugin = builtin_registrations(self._module)[(self._kind, self._name)]
        target: Callable[..., Any] = getattr(plugin, self._field)
        return target

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._target()(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.signature(self._target())

    def __getattr__(self, name: str) -> Any:
        # __code__, __name__, __doc__ …: the function's own.
        if name in _Deferred.__slots__:
            raise AttributeError(name)
        return getattr(self._target(), name)

    def __repr__(self) -> str:
        return f"<{self._field} of built-in {self._kind} '{self._name}' in {self._module}>"


def _location(plugin: Plugin) -> Location:
    code = getattr(plugin.factory, "__code__", None)
    if code is None:
        return Location(plugin.origin)
    return Location(code.co_filename, code.co_firstlineno, 1)


def _import_guarded(file: Path) -> ModuleType:
    """Import a plugin file with its prints sent to stderr; ``sys.exit()`` in it is a PluginError."""
    try:
        with user_output():
            return import_plugin_file(file)
    except SystemExit as exc:
        at = raised_at(exc, str(file.resolve()))
        raise PluginError(
            [
                Diagnostic(
                    Location(str(file), at.line if at else 1, 1),
                    f"plugin called sys.exit({exc.code!r}) while it was imported",
                )
            ]
        ) from None
