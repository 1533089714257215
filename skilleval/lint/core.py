"""Run every registered lint check on a suite, apply the suite's ``lint.ignore``, and sort the
findings.

The checks are registrations (:func:`~skilleval.plugins.markers.lint_check`): skilleval's own,
then those of installed plugins and of the suite's plugin folders, found by the plugin
manager that loads the suite. A check's function gets the :class:`LintView` and yields
findings; one that raises is an error at its line.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from skilleval.errors import (
    FILE_CODES,
    Diagnostic,
    DiagnosticsError,
    Location,
    PluginError,
)
from skilleval.lint.checks import (
    BAD_IGNORE,
    INVALID_SUITE,
    MISSING_FILE,
    LintCheck,
    find_check,
    registered_checks,
)
from skilleval.lint.finding import Finding
from skilleval.lint.view import MODEL_TYPES, LintView, from_document, from_suite
from skilleval.plugins.markers import LintCheckType
from skilleval.plugins.registry import Registry, default_registry
from skilleval.suite import formats
from skilleval.suite.load import Overrides, load_suite
from skilleval.suite.yamlio import Document, load_yaml


def lint_suite(path: Path, overrides: Overrides | None = None) -> list[Diagnostic]:
    """Every lint finding for the suite at ``path``, as diagnostics whose ``code`` is the check id.

    Silenced findings are included with severity ``note`` and ``(silenced: reason)`` after
    their message. Needs no model.
    """
    return [f.diagnostic() for f in lint_findings(path, overrides)]


def lint_findings(path: Path, overrides: Overrides | None = None) -> list[Finding]:
    """Every lint finding for the suite at ``path``, in file order."""
    base = path if path.is_dir() else path.parent
    foreign: formats.Translated | None
    try:
        if path.is_dir():
            foreign = formats.read_folder(path)
            doc = foreign.doc
        else:
            doc = load_yaml(path)
            foreign = formats.read_file(path, doc)
        if foreign is not None:
            # Another tool's eval file: the checks look at the suite it stands for.
            doc, base = foreign.doc, foreign.base
    except DiagnosticsError as exc:
        return sorted((from_loader(d) for d in exc.diagnostics), key=Finding.sort_key)
    findings: list[Finding] = []
    view: LintView
    registry: Registry
    try:
        suite, registry = load_suite(path, overrides)
    except DiagnosticsError as exc:
        findings.extend(from_loader(d) for d in exc.diagnostics)
        # The suite's plugin folders may be what failed: the installed plugins' checks run.
        chosen = overrides or Overrides()
        registry = default_registry(
            entry_points=chosen.entry_points and chosen.plugin_code, run_code=chosen.plugin_code
        )
        view = from_document(path, doc, _builtin_tiers(registry))
    else:
        view = from_suite(suite, doc, sorted(suite.files))
    view = replace(view, base=base)
    for registration in registry.lint_checks():
        findings.extend(run_check(registration, view))
    checks = registered_checks(registry)
    findings = _unique(findings)
    findings = list(_silence(findings, doc, checks))
    return sorted(findings, key=Finding.sort_key)


def run_check(registration: LintCheckType, view: LintView) -> list[Finding]:
    """What one registered check finds in ``view``.

    Raises:
        PluginError: The check raised, or yielded something that is not a finding of one of
            the checks it declares; at the line of its function.
    """
    own = {c.id for c in registration.checks}
    found: list[Finding] = []
    try:
        for item in registration.factory(view):
            if isinstance(item, Finding) and item.check.id in own:
                found.append(item)
            elif (
                isinstance(item, tuple)
                and len(item) == 2
                and isinstance(item[0], Location)
                and isinstance(item[1], str)
            ):
                found.append(Finding(registration.checks[0], item[0], item[1]))
            else:
                raise TypeError(
                    f"yielded {type(item).__name__}, not a Finding of "
                    f"{', '.join(sorted(own))} or a (Location, message) pair"
                )
    except Exception as exc:
        message = f"lint check '{registration.name}' failed: {type(exc).__name__}: {exc}"
        raise PluginError([Diagnostic(_defined_at(registration), message)]) from exc
    return found


def _defined_at(registration: LintCheckType) -> Location:
    code = getattr(registration.factory, "__code__", None)
    if code is None:
        return Location(registration.origin)
    return Location(code.co_filename, code.co_firstlineno, 1)


def from_loader(diag: Diagnostic) -> Finding:
    """The finding a loader diagnostic is: a missing file's, or the invalid suite's."""
    check = MISSING_FILE if diag.code in FILE_CODES else INVALID_SUITE
    return Finding(check, diag.where, diag.message)


def _builtin_tiers(registry: Registry) -> dict[str, str]:
    tiers: dict[str, str] = {spec.name: spec.tier for spec in registry}
    return tiers | dict.fromkeys(MODEL_TYPES, "model")


def _unique(findings: Iterable[Finding]) -> list[Finding]:
    seen: set[tuple[Any, ...]] = set()
    out: list[Finding] = []
    for f in findings:
        # The loader and the raw scan both report a missing file; keep one of the two.
        key: tuple[Any, ...] = (f.check.id, f.where)
        if f.check.silenceable:
            key = (*key, f.message)
        if key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out


def ignores(doc: Document, checks: Sequence[LintCheck]) -> tuple[dict[str, str], list[Finding]]:
    """The suite's ``lint.ignore`` as {check id: reason}, and problems with its entries.

    ``checks`` are every check registered (:func:`~skilleval.lint.checks.registered_checks`).
    """
    data = doc.data if isinstance(doc.data, dict) else {}
    lint = data.get("lint")
    entries = lint.get("ignore") if isinstance(lint, dict) else None
    reasons: dict[str, str] = {}
    problems: list[Finding] = []
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        if not isinstance(entry, dict):
            continue
        key, reason = entry.get("id"), entry.get("reason")
        where = doc.at(["lint", "ignore", i])
        if not isinstance(key, str) or not isinstance(reason, str) or not reason.strip():
            problems.append(
                Finding(BAD_IGNORE, where, "each `lint.ignore` entry needs `id:` and a `reason:`")
            )
            continue
        check = find_check(key, checks)
        if check is None:
            problems.append(Finding(BAD_IGNORE, where, f"no lint check is called '{key}'"))
            continue
        if not check.silenceable:
            problems.append(
                Finding(
                    BAD_IGNORE,
                    where,
                    f"{check.id} {check.name} cannot be silenced: the suite would not run",
                )
            )
            continue
        reasons[check.id] = " ".join(reason.split())
    return reasons, problems


def _silence(
    findings: list[Finding], doc: Document, checks: Sequence[LintCheck]
) -> Iterator[Finding]:
    reasons, problems = ignores(doc, checks)
    for f in [*findings, *problems]:
        reason = reasons.get(f.check.id)
        yield f.silence(reason) if reason is not None else f
