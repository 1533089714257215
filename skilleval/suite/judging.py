"""Which model grades a suite: ``judge:``, or promptfoo's graders read as one.

promptfoo names a grader per assertion (``provider:``), per test (``options.provider``) or
for every test (``defaultTest.options.provider``); skilleval grades a suite with one judge,
so every grader written must name the same model, which then stands for ``judge:``
(:mod:`skilleval.promptfoo.graders` reads each). ``judge:`` and a grader together are an
error at the grader.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from skilleval.errors import Diagnostic, Location
from skilleval.promptfoo.config import is_promptfoo
from skilleval.promptfoo.graders import Grader, read_grader
from skilleval.suite.columns import read_model
from skilleval.suite.context import Loader
from skilleval.suite.model import Suite
from skilleval.suite.model_config import ModelSpec, parse_model
from skilleval.suite.yamlio import Document

__all__ = ["read_judge", "self_graded_note"]


def read_judge(loader: Loader, doc: Document) -> ModelSpec | None:
    """The suite's judge: ``judge:`` (or ``--judge``), else the graders written, else None."""
    if "judge" not in doc.data and loader.overrides.judge is None:
        return _grader_judge(loader)
    judge = read_model(loader, doc, "judge", loader.overrides.judge)
    if loader.overrides.judge is None:
        for _, where in _distinct_graders(loader):
            loader.error(
                where,
                f"`judge:` (at {doc.key_at(['judge'])}) already names the judge, and"
                " skilleval grades a suite with one: remove this `provider:`",
            )
    return judge


def _distinct_graders(loader: Loader) -> list[tuple[tuple[Any, Path], Location]]:
    """The grader settings written (each place once: defaultTest's reaches every test)."""
    seen: dict[str, tuple[tuple[Any, Path], Location]] = {}
    for raw, where, base in loader.graders:
        seen.setdefault(str(where), ((raw, base), where))
    return sorted(seen.values(), key=lambda item: (item[1].path, item[1].line, item[1].col))


def _grader_judge(loader: Loader) -> ModelSpec | None:
    """promptfoo's graders, which must all name one model, as the suite's judge."""
    names = frozenset(loader.registry.names("provider"))
    first: tuple[Grader, Location, Path] | None = None
    for (raw, base), where in _distinct_graders(loader):
        grader = read_grader(raw, names)
        if isinstance(grader, str):
            loader.error(where, grader)
            continue
        if grader.note is not None:
            loader.foreign_notes.append(str(Diagnostic(where, grader.note, severity="warning")))
        if first is None:
            first = (grader, where, base)
        elif grader.key() != first[0].key():
            loader.error(
                where,
                f"this grader differs from the one at {first[1]}, and skilleval grades a suite"
                " with one judge: use the same provider everywhere, or set `judge:` once",
            )
    if first is None:
        return None
    spec, diags = parse_model(
        first[0].judge,
        key="judge",
        where=first[1],
        doc=None,
        manager=loader.registry,
        base_dir=first[2],
        reader=loader.reader,
    )
    loader.diags.extend(diags)
    return None if spec is None else replace(spec, where=first[1])


def self_graded_note(doc: Document, suite: Suite) -> list[str]:
    """For a promptfoo config graded by a model with no grader set: that the model under test
    grades itself (promptfoo would call its hosted default grader)."""
    graded = any(a.tier == "model" for t in suite.tests for a in t.every_assert)
    if not is_promptfoo(doc.data) or suite.judge is not None or not graded:
        return []
    message = (
        "no grader is set (promptfoo would call its hosted default), so the model under test"
        " grades its own outputs; set `defaultTest.options.provider` or `judge:` to choose one"
    )
    return [str(Diagnostic(doc.at(), message, severity="warning"))]
