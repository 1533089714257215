"""Where a suite's tests come from: written inline, or in YAML, JSON, JSONL and CSV files."""

from __future__ import annotations

import re
from typing import Any

from skilleval.api import NEGATION_PREFIX
from skilleval.errors import DiagnosticsError
from skilleval.plugins.registry import UNSUPPORTED
from skilleval.suite import files as filerefs
from skilleval.suite.context import Loader
from skilleval.suite.schema import validate
from skilleval.suite.yamlio import Document
from skilleval.util import fileref

_SCHEME = re.compile(r"^([a-zA-Z][\w+.-]*)://")


def is_type(loader: Loader, name: str) -> bool:
    """Whether ``name`` is an assertion type (a CSV cell ``name:value`` is then an assertion)."""
    base = name.removeprefix(NEGATION_PREFIX)
    return base in loader.registry or base in UNSUPPORTED


def raw_tests(loader: Loader, doc: Document) -> list[filerefs.RawTest]:
    """Every test as written, in order; a tests file's tests are checked against the schema.

    Inline tests are checked with the suite; those it found wrong are left out here.
    """
    raw = doc.data.get("tests")
    if raw is None:
        return []
    entries: list[tuple[Any, list[str | int]]] = (
        [(raw, ["tests"])]
        if isinstance(raw, str)
        else [(t, ["tests", i]) for i, t in enumerate(raw)]
    )
    out: list[filerefs.RawTest] = []
    test_schema = {"$defs": loader.schema["$defs"], "$ref": "#/$defs/test"}
    for item, at in entries:
        if tuple(at) in loader.skipped:
            continue
        if not isinstance(item, str):
            out.append(filerefs.RawTest(doc.sub(at), loader.base))
            continue
        scheme = _SCHEME.match(item)
        if scheme and scheme[1] != "file":
            loader.error(
                doc.at(at),
                f"tests from {scheme[1]}:// are not read: save them as a CSV, YAML or JSONL file"
                " beside the suite and name that file",
            )
            continue
        # promptfoo reads a bare string in `tests:` as a path (or glob) relative to the suite.
        ref = item if fileref.is_ref(item) else f"file://{item}"
        try:
            for path in loader.reader.paths(ref, loader.base, doc.at(at)):
                for rt in filerefs.tests_from_file(path, doc.at(at), lambda n: is_type(loader, n)):
                    problems = validate(rt.doc, test_schema, what="the test")
                    if problems:
                        loader.diags.extend(problems)
                    else:
                        out.append(rt)
        except DiagnosticsError as exc:
            loader.absorb(exc)
    return out
