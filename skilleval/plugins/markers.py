"""What a plugin declares: the registrations of providers, output formats and tool kinds,
and their markers (assertion types are declared in :mod:`skilleval.api`).

Every extension point works the same way. A decorator (:func:`provider`, :func:`reporter`,
:func:`tool_kind`, or :func:`~skilleval.api.assertion`) only attaches a declaration
to the function; nothing is registered at import time. A
:class:`~skilleval.plugins.manager.PluginManager` scans modules for the marks, so the
built-ins, installed packages and plugin folders all go through the same path.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from skilleval.api import KIND_LABELS, MARK, Capabilities, Kind, Registration
from skilleval.util.frozen import frozen

F = TypeVar("F", bound=Callable[..., Any])


class ConfigContext(Protocol):
    """What a provider's ``configure`` may use while it reads its ``model:`` mapping.

    Errors are collected, not raised, so one load reports every problem at its position.
    """

    @property
    def base_dir(self) -> Path:
        """The folder of the suite file; relative paths are relative to it."""
        ...

    def error(self, message: str, key: str | None = None) -> None:
        """Record a problem at ``key`` of the mapping (or at the mapping itself)."""
        ...

    def read_ref(self, ref: str, key: str) -> Any:
        """The value of a ``file://`` reference written at ``key``; None (and an error) if unreadable."""
        ...


@frozen(kw_only=True)
class ProviderType(Registration):
    """A model provider: ``model: {provider: NAME, ...}``.

    ``factory(config, context)`` builds the provider for a run (``context`` has ``home`` and
    ``jobs``); ``configure(mapping, ctx)`` turns the validated ``model:`` mapping (without
    ``provider:``) into the config the factory receives. Without ``configure`` the factory
    gets the mapping as a plain dict.
    """

    configure: Callable[[Mapping[str, Any], ConfigContext], Any] | None = None
    implied_by: str | None = None
    """A key whose presence selects this provider when ``provider:`` is left out."""
    capabilities: Capabilities = field(default_factory=Capabilities)
    """What its calls are (timed, costed, worth keeping loaded …); see :class:`~skilleval.api.Capabilities`."""

    kind: ClassVar[Kind] = "provider"

    def __post_init__(self) -> None:
        if isinstance(self.capabilities, Mapping):  # as the built-ins' manifest writes it
            object.__setattr__(self, "capabilities", Capabilities(**self.capabilities))

    def properties(self) -> Mapping[str, Any]:
        """The keys the provider's mapping accepts, as JSON Schema properties."""
        return dict((self.schema or {}).get("properties") or {})


@frozen(kw_only=True)
class ReporterType(Registration):
    """An output format for ``-o FILE``, chosen by the file's extension.

    ``factory(run, dest)`` writes the typed run (:class:`~skilleval.results.model.Run`) to
    the path ``dest``; ``side_by_side(matrix, dest)``, when the format has one, writes the
    report of a run on several models (:class:`~skilleval.results.matrix.Matrix`).
    """

    suffix: str
    side_by_side: Callable[..., Any] | None = None
    """Writes a run on several models side by side; None: the format cannot."""

    kind: ClassVar[Kind] = "reporter"

    def problem(self) -> str | None:
        if (
            not self.suffix.startswith(".")
            or len(self.suffix) < 2
            or self.suffix != self.suffix.lower()
        ):
            return f"output format '{self.name}' needs a lower-case suffix like '.txt', not {self.suffix!r}"
        return Registration.problem(self)


@frozen(kw_only=True)
class ToolKindType(Registration):
    """A way to implement an agent tool: the key ``NAME:`` on a tool, with ``schema`` for its value.

    ``factory(value, ctx)`` returns the tool's implementation (an object with ``kind``,
    ``run(arguments, workspace)`` and ``to_json()``), or None after ``ctx.error(...)``.
    """

    options: Mapping[str, Any] = field(default_factory=dict)
    """Sibling keys on the tool that only this kind accepts (``timeout`` …), as JSON Schema properties."""

    kind: ClassVar[Kind] = "tool_kind"


LintSeverity = Literal["error", "warning"]


@frozen
class LintCheck:
    """One lint check, as ``docs/lint.md`` lists skilleval's own: what a finding reports."""

    id: str
    """Letters and three digits, e.g. ``SE101``; skilleval's own start with ``SE``."""
    name: str
    """A kebab-case name that ``lint.ignore`` accepts in place of the id."""
    severity: LintSeverity
    summary: str
    silenceable: bool = True
    """False for findings that stop the suite from running at all."""

    def problem(self) -> str | None:
        """Why this check cannot be declared, or None."""
        if not (
            len(self.id) >= 4
            and self.id[:-3].isalpha()
            and self.id[:-3].isupper()
            and self.id[-3:].isdigit()
        ):
            return f"lint check id '{self.id}' must be capital letters and three digits, like SE101"
        if not self.name or not all(c.islower() or c.isdigit() or c == "-" for c in self.name):
            return f"lint check name '{self.name}' must be kebab-case"
        if self.severity not in ("error", "warning"):
            return f"lint check {self.id} has severity '{self.severity}', not error or warning"
        return None


@frozen(kw_only=True)
class LintCheckType(Registration):
    """A lint check (or a family of them) that ``skilleval lint`` runs on every suite.

    ``factory(view)`` gets the suite as lint sees it (:class:`~skilleval.lint.view.LintView`)
    and yields findings: a :class:`~skilleval.lint.finding.Finding` of one of :attr:`checks`,
    or ``(location, message)`` for the first of them.
    """

    checks: tuple[LintCheck, ...]
    """What it reports; its ids and names are what ``lint.ignore`` accepts."""

    kind: ClassVar[Kind] = "lint_check"

    def __post_init__(self) -> None:
        # As the built-ins' manifest writes them: one mapping per check.
        made = tuple(c if isinstance(c, LintCheck) else LintCheck(**c) for c in self.checks)
        object.__setattr__(self, "checks", made)

    def problem(self) -> str | None:
        if not self.checks:
            return f"lint check '{self.name}' declares no check"
        for check in self.checks:
            problem = check.problem()
            if problem is not None:
                return problem
        return Registration.problem(self)


def _summary(fn: Callable[..., Any]) -> str:
    doc = (inspect.getdoc(fn) or "").strip()
    return doc.splitlines()[0] if doc else ""


def provider(
    name: str,
    *,
    schema: Mapping[str, Any] | None = None,
    configure: Callable[[Mapping[str, Any], ConfigContext], Any] | None = None,
    implied_by: str | None = None,
    capabilities: Capabilities | None = None,
) -> Callable[[F], F]:
    """Mark ``fn(config, context) -> Provider`` as the provider ``name``.

    Args:
        name: What ``model: {provider: NAME}`` says.
        schema: JSON Schema of the ``model:`` mapping, ``provider:`` left out (an object with
            ``properties``; a key it does not list is refused).
        configure: Turns the validated mapping into the config object ``fn`` receives; report
            problems with ``ctx.error``. Default: the mapping as a dict.
        implied_by: A key that selects this provider when ``provider:`` is not written.
        capabilities: What its calls are: timed, costed, worth keeping loaded, backed by a
            model, able to return scores. Default: none of them.
    """

    def mark(fn: F) -> F:
        reg = ProviderType(
            name=name,
            factory=fn,
            schema=schema if schema is not None else {"type": "object", "properties": {}},
            summary=_summary(fn),
            configure=configure,
            implied_by=implied_by,
            capabilities=capabilities or Capabilities(),
        )
        setattr(fn, MARK, reg)
        return fn

    return mark


def reporter(
    name: str, *, suffix: str, side_by_side: Callable[..., Any] | None = None
) -> Callable[[F], F]:
    """Mark ``fn(run, dest: Path) -> None`` as the output format ``name`` for files ending in ``suffix``.

    Args:
        name: The format's name, as ``skilleval plugins`` lists it.
        suffix: The lower-case extension of the files it writes (``.tsv``).
        side_by_side: ``fn(matrix, dest: Path) -> None``, the same format for a run on several
            models; without it, such a run refuses this extension before it starts.
    """

    def mark(fn: F) -> F:
        reg = ReporterType(
            name=name,
            factory=fn,
            suffix=suffix,
            summary=_summary(fn),
            side_by_side=side_by_side,
        )
        setattr(fn, MARK, reg)
        return fn

    return mark


def tool_kind(
    name: str, *, schema: Mapping[str, Any], options: Mapping[str, Any] | None = None
) -> Callable[[F], F]:
    """Mark ``fn(value, ctx) -> ToolImpl | None`` as the tool kind written ``NAME: value`` on a tool.

    Args:
        name: The key on the tool (``mock``, ``command`` …).
        schema: JSON Schema for the key's value.
        options: Other keys on the tool that only this kind accepts, as JSON Schema properties.
    """

    def mark(fn: F) -> F:
        reg = ToolKindType(
            name=name,
            factory=fn,
            schema=schema,
            options=dict(options or {}),
            summary=_summary(fn),
        )
        setattr(fn, MARK, reg)
        return fn

    return mark


def lint_check(*checks: LintCheck, name: str | None = None) -> Callable[[F], F]:
    """Mark ``fn(view) -> Iterable[Finding | (Location, str)]`` as running the lint ``checks``.

    Args:
        checks: What it reports; a ``(location, message)`` it yields is a finding of the first.
        name: The registration's name; default: the first check's name.
    """

    def mark(fn: F) -> F:
        reg = LintCheckType(
            name=name or (checks[0].name if checks else ""),
            factory=fn,
            checks=tuple(checks),
            summary=_summary(fn),
        )
        setattr(fn, MARK, reg)
        return fn

    return mark


def registration_of(fn: Callable[..., Any]) -> Registration:
    """The declaration a marker attached to ``fn``."""
    reg = getattr(fn, MARK, None)
    if not isinstance(reg, Registration):
        raise TypeError(f"{fn!r} carries no skilleval plugin mark")
    return reg


__all__ = [
    "KIND_LABELS",
    "MARK",
    "ConfigContext",
    "Kind",
    "LintCheck",
    "LintCheckType",
    "LintSeverity",
    "ProviderType",
    "Registration",
    "ReporterType",
    "ToolKindType",
    "lint_check",
    "provider",
    "registration_of",
    "reporter",
    "tool_kind",
]
