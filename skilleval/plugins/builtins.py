"""The modules that hold skilleval's own registrations.

They are loaded exactly like an installed plugin's entry-point module: imported by name and
scanned for marks. Naming them here, as strings, keeps this low layer free of imports of the
layers that implement them.
"""

from __future__ import annotations

BUILTIN_PACKAGES: tuple[str, ...] = ("skilleval.assertions.builtin",)
"""Packages whose every public module is scanned (one module per assertion family)."""

BUILTIN_MODULES: tuple[str, ...] = (
    "skilleval.engine.testing",
    "skilleval.engine.llama",
    "skilleval.engine.openai_provider",
    "skilleval.report.formats",
    "skilleval.agent.kinds",
)
"""Single modules with registrations: providers, output formats, tool kinds."""
