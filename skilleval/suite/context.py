"""What every stage of loading one suite shares: the overrides, the diagnostics, the reader."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skilleval.errors import Diagnostic, DiagnosticsError, Location
from skilleval.plugins.registry import Registry
from skilleval.suite import files as filerefs
from skilleval.suite.agent_config import ToolConfig
from skilleval.suite.model import AssertionEntry
from skilleval.suite.yamlio import PathKey
from skilleval.util.frozen import frozen

if TYPE_CHECKING:
    from skilleval.suite.agentic import AgentSources


@frozen
class Overrides:
    """Settings from the command line that win over the suite file."""

    model: str | None = None
    judge: str | None = None
    trials: int | None = None
    seed: int | None = None
    plugin_dirs: tuple[Path, ...] = ()
    entry_points: bool = True
    plugin_code: bool = True
    """False: run no plugin code; plugin folders' assertion types are read from source."""


@dataclass
class Loader:
    """The state of one load: where the suite is, what it read and what is wrong with it."""

    path: Path
    overrides: Overrides
    diags: list[Diagnostic] = field(default_factory=list)
    reader: filerefs.Reader = field(default_factory=filerefs.Reader)
    registry: Registry = field(default_factory=Registry)
    schema: Mapping[str, Any] = field(default_factory=dict)
    """The suite schema for what ``registry`` holds."""
    top: dict[str, Any] = field(default_factory=dict)
    """The suite's top-level mapping, as written (schema errors included)."""
    filters: Mapping[str, Any] = field(default_factory=dict)
    """A promptfoo config's ``nunjucksFilters``, given to rendering with each test's vars."""
    shared_tools: tuple[ToolConfig, ...] = ()
    """Tools from the top-level ``tools:`` and ``defaultTest.tools``, in that order."""
    skipped: frozenset[PathKey] = frozenset()
    """Parts of the suite file that broke the schema: reported already, not compiled."""
    graders: list[tuple[Any, Location, Path]] = field(default_factory=list)
    """promptfoo's grader settings (``options.provider``, an assertion's ``provider``), each
    with where it is written and the folder its paths are relative to; they become the judge."""
    plugins_incomplete: bool = False
    """A plugin folder could not be loaded, so an unknown type may be one of its own."""
    default_asserts: dict[int, AssertionEntry] = field(default_factory=dict)
    """``defaultTest`` assertions without templates, by index: compiled once, not per test."""
    agent_sources: AgentSources | None = None
    """What each test's agentic keys are read with, fixed once the shared tools are read."""
    foreign_notes: list[str] = field(default_factory=list)
    """For another tool's eval file: the format read and where its meaning is not kept."""
    expanded: int = 0
    """Tests made so far by expanding list vars (``suite/vars.py``), against the suite's limit."""
    default_templated: dict[int, AssertionEntry] = field(default_factory=dict)
    """``defaultTest`` assertions with templates, by index, compiled once without a problem:
    each further test checks only what depends on its vars
    (:func:`~skilleval.suite.assertion_config.value_vars_ok`)."""

    @functools.cached_property
    def base(self) -> Path:
        """The folder that paths written in the suite file are relative to."""
        return self.path.parent

    def error(self, where: Location, message: str) -> None:
        self.diags.append(Diagnostic(where, message))

    def add(self, diagnostic: Diagnostic) -> None:
        """Keep a diagnostic built elsewhere (one with a code, such as a missing file's)."""
        self.diags.append(diagnostic)

    def absorb(self, exc: DiagnosticsError) -> None:
        self.diags.extend(exc.diagnostics)
