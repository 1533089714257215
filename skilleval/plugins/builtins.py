"""The modules that hold skilleval's own registrations, and the manifest of what they register.

They are loaded exactly like an installed plugin's entry-point module: imported by name and
scanned for marks. Naming them here, as strings, keeps this low layer free of imports of the
layers that implement them.

A run does not import them all to find out what they register: ``builtins.json`` (next to
this file) lists every registration with its module and everything it declares except its
functions, and the manager imports a module when one of its registrations is looked up
(:meth:`~skilleval.plugins.manager.PluginManager.load_builtins`). ``make schema`` rewrites the
manifest from the modules and ``make schema-check`` fails when it is stale;
``tests/plugins/test_builtins_manifest.py`` checks the same.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path
from typing import Any

BUILTIN_PACKAGES: tuple[str, ...] = ("skilleval.assertions.builtin",)
"""Packages whose every public module is scanned (one module per assertion family)."""

BUILTIN_MODULES: tuple[str, ...] = (
    "skilleval.engine.testing",
    "skilleval.engine.llama",
    "skilleval.engine.openai_provider",
    "skilleval.engine.python_provider",
    "skilleval.engine.exec_provider",
    "skilleval.engine.http_provider",
    "skilleval.report.formats",
    "skilleval.agent.kinds",
    "skilleval.lint.rawtext",
    "skilleval.lint.design",
    "skilleval.lint.leakage",
    "skilleval.lint.assertions",
    "skilleval.lint.promptfoo",
)
"""Single modules with registrations: providers, output formats, tool kinds, lint checks."""

MANIFEST = Path(__file__).with_name("builtins.json")
"""Every built-in registration, in the order scanning the modules registers them."""

CALLABLES: frozenset[str] = frozenset({"fn", "factory", "configure", "check_value", "side_by_side"})
"""The fields of a registration that hold its functions: left out of the manifest, and
imported with the module when first called."""


def builtin_modules() -> list[str]:
    """Every module with built-in registrations, in the order they are scanned."""
    names: list[str] = []
    for package_name in BUILTIN_PACKAGES:
        package = importlib.import_module(package_name)
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
            if not info.name.startswith("_"):
                names.append(f"{package_name}.{info.name}")
    names.extend(BUILTIN_MODULES)
    return names


def read_manifest() -> list[dict[str, Any]]:
    """The manifest's entries: ``kind``, ``name``, ``module``, ``fields`` and ``deferred``
    (the names of the function fields the registration sets)."""
    entries: list[dict[str, Any]] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return entries
