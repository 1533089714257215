"""Run every check on a suite, apply the suite's ``lint.ignore``, and sort the findings."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from skilleval.errors import FILE_CODES, Diagnostic, DiagnosticsError, SkillevalError
from skilleval.lint import assertions, design, leakage, promptfoo, rawtext
from skilleval.lint.checks import BAD_IGNORE, INVALID_SUITE, MISSING_FILE, find_check
from skilleval.lint.finding import Finding
from skilleval.lint.view import MODEL_TYPES, LintView, from_document, from_suite
from skilleval.plugins.registry import Registry
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
        return sorted((_from_loader(d) for d in exc.diagnostics), key=Finding.sort_key)
    findings: list[Finding] = []
    view: LintView
    try:
        suite, _ = load_suite(path, overrides)
    except DiagnosticsError as exc:
        findings.extend(_from_loader(d) for d in exc.diagnostics)
        view = from_document(path, doc, _builtin_tiers())
    else:
        view = from_suite(suite, doc, sorted(suite.files))
    findings.extend(rawtext.missing_files(doc, base))
    findings.extend(rawtext.rubric_cuts(doc))
    for extra in view.yaml_files:
        if extra.resolve() != path.resolve():
            findings.extend(_cuts_in(extra))
    findings.extend(design.check(view))
    findings.extend(leakage.check(view))
    findings.extend(assertions.check(view))
    findings.extend(promptfoo.check(doc))
    findings = _unique(findings)
    findings = list(_silence(findings, doc))
    return sorted(findings, key=Finding.sort_key)


def _cuts_in(file: Path) -> Iterator[Finding]:
    try:
        doc = load_yaml(file)
    except SkillevalError:
        return
    yield from rawtext.rubric_cuts(doc)


def _from_loader(diag: Diagnostic) -> Finding:
    check = MISSING_FILE if diag.code in FILE_CODES else INVALID_SUITE
    return Finding(check, diag.where, diag.message)


def _builtin_tiers() -> dict[str, str]:
    registry = Registry()
    registry.load_builtins()
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


def ignores(doc: Document) -> tuple[dict[str, str], list[Finding]]:
    """The suite's ``lint.ignore`` as {check id: reason}, and problems with its entries."""
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
        check = find_check(key)
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


def _silence(findings: list[Finding], doc: Document) -> Iterator[Finding]:
    reasons, problems = ignores(doc)
    for f in [*findings, *problems]:
        reason = reasons.get(f.check.id)
        yield f.silence(reason) if reason is not None else f
