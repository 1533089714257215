"""The plugin manager: assertion types, providers, output formats and agent tool kinds.

See :mod:`skilleval.plugins.manager` for how plugins are found and
:mod:`skilleval.plugins.markers` for what each kind declares.
"""

from __future__ import annotations

from skilleval.api import KIND_LABELS, Kind, Registration
from skilleval.plugins.manager import ENTRY_POINT_GROUPS, Plugin, PluginManager
from skilleval.plugins.markers import (
    ConfigContext,
    ProviderType,
    ReporterType,
    ToolKindType,
    provider,
    registration_of,
    reporter,
    tool_kind,
)

__all__ = [
    "ENTRY_POINT_GROUPS",
    "KIND_LABELS",
    "ConfigContext",
    "Kind",
    "Plugin",
    "PluginManager",
    "ProviderType",
    "Registration",
    "ReporterType",
    "ToolKindType",
    "provider",
    "registration_of",
    "reporter",
    "tool_kind",
]
