"""SE305: in a promptfoo config, values that promptfoo reads otherwise than skilleval.

Each finding names a deliberate difference of docs/promptfoo.md ("Deliberate differences")
that the config depends on: a regex JavaScript reads otherwise, a ``contains-json`` that
relies on promptfoo's lenient JSON finder, an ``i`` type whose value folds otherwise than it
lower-cases, a ``levenshtein`` reference with characters JavaScript counts twice, a negative
zero in a JSON value, a value promptfoo refuses, and a SQL database sqlglot has no dialect
for. ``skilleval import promptfoo``
prints the same (:func:`value_differences`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from skilleval.assertions.builtin._wordnet import wordnet_dir
from skilleval.errors import Location
from skilleval.lint.checks import PROMPTFOO_READS_OTHERWISE
from skilleval.lint.finding import Finding
from skilleval.lint.view import LintView
from skilleval.plugins.markers import lint_check
from skilleval.promptfoo.config import is_promptfoo
from skilleval.promptfoo.differences import pattern_differences
from skilleval.suite.yamlio import Document

_SEE = "(docs/promptfoo.md, deliberate differences)"
_SCALAR_TYPES = {"string", "number", "integer", "boolean", "null"}
_NO_DIALECT = {"db2", "flinksql", "noql"}

Path = list[str | int]


@lint_check(PROMPTFOO_READS_OTHERWISE)
def check(view: LintView) -> Iterator[Finding]:
    """SE305: each place a promptfoo config depends on a deliberate difference."""
    doc = view.doc
    if doc is None or not is_promptfoo(doc.data):
        return
    for difference in pattern_differences(doc):
        yield Finding(PROMPTFOO_READS_OTHERWISE, difference.where, difference.message)
    for where, message in value_differences(doc):
        yield Finding(PROMPTFOO_READS_OTHERWISE, where, message)


def _assertions(data: Mapping[str, Any]) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    """Each inline assertion of the config's tests and defaultTest, sets' members included."""
    tests = data.get("tests")
    holders: list[tuple[Path, Any]] = [(["defaultTest"], data.get("defaultTest"))]
    if isinstance(tests, list):
        holders += [(["tests", i], t) for i, t in enumerate(tests)]
    stack: list[tuple[Path, Any]] = []
    for at, test in holders:
        if isinstance(test, Mapping) and isinstance(test.get("assert"), list):
            stack += [([*at, "assert", i], a) for i, a in enumerate(test["assert"])]
    while stack:
        at, entry = stack.pop(0)
        if not isinstance(entry, Mapping):
            continue
        yield at, entry
        if entry.get("type") == "assert-set" and isinstance(entry.get("assert"), list):
            stack += [([*at, "assert", i], a) for i, a in enumerate(entry["assert"])]


def _schema_type(schema: Any) -> set[str]:
    kinds = schema.get("type") if isinstance(schema, Mapping) else None
    if isinstance(kinds, str):
        return {kinds}
    return {str(k) for k in kinds} if isinstance(kinds, list) else set()


def _has_negative_zero(value: Any) -> bool:
    if isinstance(value, float):
        return value == 0 and math.copysign(1.0, value) < 0
    if isinstance(value, Mapping):
        return any(_has_negative_zero(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_negative_zero(v) for v in value)
    return False


def _folds_otherwise(text: str) -> bool:
    return text.casefold() != text.lower()


def _message(base: str, negated: bool, value: Any, entry: Mapping[str, Any]) -> str | None:
    """The difference this one assertion depends on, or None."""
    if base == "contains-json":
        if negated:
            return (
                "not-contains-json: promptfoo's lenient finder takes YAML, comments and cut-off"
                " objects for JSON where skilleval does not, so this passes on outputs promptfoo"
                " fails"
            )
        if _schema_type(value) and _schema_type(value) <= _SCALAR_TYPES:
            return (
                "contains-json with a schema only a scalar satisfies: promptfoo finds numbers and"
                " strings in prose, skilleval finds only JSON objects and arrays"
            )
    if base in ("icontains", "icontains-any", "icontains-all"):
        items = value if isinstance(value, list) else [value]
        odd = [str(v) for v in items if isinstance(v, str) and _folds_otherwise(v)]
        if odd:
            return (
                f"{base}: {odd[0]!r} folds otherwise than it lower-cases (ß, ﬁ, final σ);"
                " skilleval matches it as Unicode case folding does, promptfoo lower-cases"
            )
    if base == "levenshtein" and isinstance(value, str) and any(ord(c) > 0xFFFF for c in value):
        return (
            "levenshtein: the reference has characters outside the Basic Multilingual Plane"
            " (emoji), which promptfoo counts as two edits and skilleval as one"
        )
    if base in ("contains", "icontains") and value == "":
        return f"{base}: promptfoo stops the test on an empty value; skilleval reads it as text"
    if base == "starts-with" and (value == "" or isinstance(value, int | float)):
        return "starts-with: promptfoo wants a non-empty text and stops the test; skilleval reads it as text"
    if base == "levenshtein" and isinstance(value, int | float) and not isinstance(value, bool):
        return "levenshtein: promptfoo wants a text and stops the test; skilleval reads the number as text"
    if base in ("equals", "is-json", "contains-json") and _has_negative_zero(value):
        return f"{base}: the value holds -0, which skilleval reads as equal to 0 and promptfoo does not"
    if base == "skill-used":
        return (
            "skill-used reads skilleval's router decision for the test (`should_trigger` or the"
            " `routed` arm), not the skills an agent SDK reports invoking"
        )
    if base.startswith("trajectory:") and base != "trajectory:goal-success":
        return (
            f"{base} reads skilleval's agent loop steps, not a provider's trace spans; a test"
            " that runs no agent loop gives an error"
        )
    if base == "meteor":
        found = (
            ""
            if wordnet_dir() is not None
            else "; this machine has no WordNet, so synonyms are not matched"
        )
        return (
            "meteor: promptfoo 0.123.1 cannot load its stemmer for meteor and records an error;"
            f" skilleval scores METEOR as promptfoo's code means to{found}"
        )
    if base in ("is-sql", "contains-sql") and isinstance(value, Mapping):
        database = str(value.get("databaseType", ""))
        if database.lower() in _NO_DIALECT:
            return (
                f"{base}: sqlglot has no {database} dialect; skilleval checks the SQL with its"
                " generic grammar, promptfoo with node-sql-parser's"
            )
    return None


def value_differences(doc: Document) -> list[tuple[Location, str]]:
    """Each assertion of a promptfoo config whose verdict depends on a deliberate difference,
    at the assertion's value (or its type), with what differs."""
    data = doc.data
    if not isinstance(data, Mapping):
        return []
    out = []
    for at, entry in _assertions(data):
        kind = str(entry.get("type", ""))
        base = kind.removeprefix("not-")
        value = entry.get("value")
        message = _message(base, kind != base, value, entry)
        if message is not None:
            where = doc.at([*at, "value"]) if "value" in entry else doc.at([*at, "type"])
            out.append((where, f"{message} {_SEE}"))
    return out
