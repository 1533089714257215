"""A test's vars: ``defaultTest`` merged in, ``file://`` values read."""

from __future__ import annotations

import copy
import glob
import itertools
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skilleval.errors import Diagnostic, DiagnosticsError, SuiteError
from skilleval.promptfoo.config import reads_as_promptfoo
from skilleval.suite.context import Loader
from skilleval.suite.yamlio import Document
from skilleval.util import fileref

_INHERITED = ("threshold", "metadata", "prompt")
"""Keys a test takes from ``defaultTest`` when it does not set them."""


def merge_default(test: dict[str, Any], default: Mapping[str, Any]) -> dict[str, Any]:
    """``test`` with ``defaultTest`` merged in: options key by key, the test winning.

    Vars are merged after each side is read (:func:`resolve_vars`), so that a ``file://``
    in ``defaultTest.vars`` is found next to the suite, which wrote it.
    """
    merged = dict(test)
    for key in _INHERITED:
        if key in default and key not in test:
            merged[key] = copy.deepcopy(default[key])
    options = {**(default.get("options") or {}), **(test.get("options") or {})}
    if options:
        merged["options"] = options
    return merged


def resolve_vars(loader: Loader, raw: Any, doc: Document, base: Path) -> dict[str, Any] | None:
    """The test's vars with every ``file://`` read; None (and the errors) when they cannot be.

    ``raw`` is a mapping or one ``file://`` reference to a mapping; a ``file://`` is relative
    to ``base``, the folder of the file that wrote it.
    """
    vars_ = raw or {}
    try:
        if fileref.is_ref(vars_):
            vars_ = loader.reader.value(str(vars_), base, doc.at(["vars"]))
            if not isinstance(vars_, dict):
                raise SuiteError([Diagnostic(doc.at(["vars"]), "a vars file must hold a mapping")])
        if reads_as_promptfoo(loader.top):
            # promptfoo reads a var's file as text for the prompt, trimmed; see Reader.
            return {
                k: loader.reader.promptfoo_value(v, base, doc.at(["vars", k]))
                if fileref.is_ref(v)
                else loader.reader.resolve(v, base, doc, ["vars", k])
                for k, v in vars_.items()
            }
        return {k: loader.reader.resolve(v, base, doc, ["vars", k]) for k, v in vars_.items()}
    except DiagnosticsError as exc:
        loader.absorb(exc)
        return None


def globbed(raw: Any) -> set[str]:
    """The names of the vars in ``raw`` written as a ``file://`` glob (one test per file)."""
    if not isinstance(raw, Mapping):
        return set()
    return {
        k for k, v in raw.items() if fileref.is_ref(v) and glob.has_magic(fileref.parse(v).path)
    }


MAX_EXPANDED = 10_000
"""The most tests one expansion (one test's list vars across its prompts, a suite's
scenarios) may make; the count is taken before anything is built."""
MAX_EXPANDED_TOTAL = 100_000
"""The most tests the list-var expansions of one suite may make together."""


def too_many(what: str, count: int, limit: int = MAX_EXPANDED) -> str:
    """The message for an expansion past its limit: what, the count and the limit."""
    return (
        f"{what}: {count:,} tests, more than the limit of {limit:,}; "
        "split the suite or list fewer values"
    )


def _choices(vars_: Mapping[str, Any], globs: set[str]) -> list[list[Any]]:
    choices: list[list[Any]] = []
    for key, value in vars_.items():
        listed = isinstance(value, list) and bool(value)
        if listed and (key in globs or isinstance(value[0], str)):
            choices.append(list(value))
        else:
            choices.append([value])
    return choices


def combinations(vars_: Mapping[str, Any], globs: set[str]) -> int:
    """How many sets of vars :func:`expand` would make, without making them."""
    if not any(isinstance(v, list) for v in vars_.values()):
        return 1
    return math.prod(len(c) for c in _choices(vars_, globs))


def expand(vars_: Mapping[str, Any], globs: set[str]) -> list[dict[str, Any]]:
    """promptfoo's var expansion: one set of vars per combination of the listed values.

    A var holding a list whose first item is a string stands for each of its items in turn,
    as does a ``file://`` glob (its files' contents); the tests are the cartesian product,
    the first var varying slowest. Any other list (of numbers, of mappings) is one value.
    """
    if not any(isinstance(v, list) for v in vars_.values()):
        return [dict(vars_)]
    choices = _choices(vars_, globs)
    return [dict(zip(vars_, combo, strict=True)) for combo in itertools.product(*choices)]
