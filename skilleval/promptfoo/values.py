"""An assertion's ``value:`` in a promptfoo config, read as promptfoo reads it.

promptfoo compares YAML scalars as JavaScript prints them: ``42.0`` is ``"42"``, ``1e3``
is ``"1000"``, and ``equals: null`` is the text ``null``. The list types (``contains-any``
and its relatives) also take a string, split as one CSV row: quoted fields may hold commas,
and each field is trimmed. ``word-count`` takes its count as a numeric string (``"3"``), and
``is-json`` and ``contains-json`` a JSON Schema written as YAML text. Values with template syntax are rendered first and left as
written here. skilleval's own suites keep Python's reading.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from skilleval.api import AssertionType, Check, Verdict
from skilleval.errors import DiagnosticsError
from skilleval.promptfoo.rendering import js_number, js_string
from skilleval.util import fileref

__all__ = [
    "LIST_TYPES",
    "TEXT_TYPES",
    "as_promptfoo_reads",
    "javascript_reads_otherwise",
    "regex_entries",
    "weightless",
]

TEXT_TYPES = frozenset({"equals", "contains", "icontains", "starts-with"})
"""Types whose value promptfoo compares as text."""
LIST_TYPES = frozenset({"contains-any", "contains-all", "icontains-any", "icontains-all"})
"""Types whose value is a list of texts, or a string of them separated by commas."""
SCHEMA_TYPES = frozenset({"is-json", "contains-json"})
"""Types whose value is a JSON Schema, which promptfoo also takes as YAML text."""


def _scalar(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return js_string(value) if value is not None else "null"
    if isinstance(value, (int, float)):
        return js_number(value)
    return value


def split_csv(text: str) -> list[str]:
    """One CSV row's fields, each trimmed (promptfoo's reading of a list type's string)."""
    rows = list(csv.reader([text], skipinitialspace=True))
    return [field.strip() for field in rows[0]] if rows else []


YamlReader = Callable[[str], Any]
"""Parses YAML text into data, raising :class:`DiagnosticsError` (the suite's reader)."""


def _templated(text: str) -> bool:
    """Whether ``text`` holds template syntax: rendered with each test's vars, then read."""
    return "{{" in text or "{%" in text


def as_promptfoo_reads(type_name: str, value: Any, read_yaml: YamlReader | None = None) -> Any:
    """``value`` of an assertion of ``type_name`` (``not-`` removed) as promptfoo reads it.

    ``read_yaml`` parses a schema written as YAML text; without it, such text is left as is.
    """
    if type_name in TEXT_TYPES:
        if type_name == "equals" and (value is None or isinstance(value, bool)):
            return _scalar(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return js_number(value)
        return value
    if type_name == "word-count" and isinstance(value, str) and value.strip().isdecimal():
        return int(value.strip())
    if type_name in SCHEMA_TYPES and isinstance(value, str) and read_yaml is not None:
        return _schema_text(value, read_yaml)
    if type_name in LIST_TYPES:
        if isinstance(value, str) and not _templated(value):
            return split_csv(value)
        if isinstance(value, list):
            return [
                js_number(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
                for v in value
            ]
    return value


def _schema_text(value: str, read_yaml: YamlReader) -> Any:
    """A schema written as YAML text, parsed; anything else (a ``file://``, a template, text
    that is not a mapping) is left for the usual checks to read or refuse."""
    if fileref.is_ref(value) or _templated(value):
        return value
    try:
        parsed = read_yaml(str(value))
    except DiagnosticsError:
        return value
    return parsed if isinstance(parsed, dict) else value


def weightless(spec: AssertionType, negated: bool) -> AssertionType:
    """``spec`` for a promptfoo assertion of ``weight: 0``: promptfoo records it as passed
    and keeps its score and reason for metrics, and so does skilleval.

    Checks that compare outputs, and a user's code that returns its own shape, are left as
    they are: their verdict is formed after the call.
    """
    if spec.compares or spec.external or spec.name == "python":
        return spec
    check_fn = spec.fn

    @functools.wraps(check_fn)
    def passed(check: Check) -> Any:
        verdict = check_fn(check)
        # ``not-`` is applied after this: a negated check passes when this one fails.
        if not isinstance(verdict, Verdict) or verdict.error is not None:
            return verdict
        if verdict.passed != negated:
            return verdict
        default = 1.0 if verdict.passed else 0.0
        return dataclasses.replace(
            verdict,
            passed=not negated,
            score=default if verdict.score is None else verdict.score,
            reason=f"weight 0, counted as passed as in promptfoo: {verdict.reason}",
        )

    return dataclasses.replace(spec, factory=passed)


_PYTHON_ONLY = (
    (
        re.compile(r"\(\?[aiLmsux]+(?:-[imsx]+)?[):]|\(\?-[imsx]+[):]"),
        "an inline flag such as `(?i)`",
    ),
    (re.compile(r"(?<!\\)(?:\\\\)*\\[AZ]"), "`\\A` or `\\Z`"),
    (re.compile(r"\(\?P[<=]"), "a Python named group `(?P<name>…)`"),
    (re.compile(r"(?<!\\)(?:\\\\)*\\[pP]"), "a Unicode property `\\p{…}`"),
)


def javascript_reads_otherwise(pattern: str) -> str | None:
    """What in ``pattern`` promptfoo's JavaScript RegExp (no flags) reads otherwise than
    skilleval does, or None. See docs/promptfoo.md, "Deliberate differences"."""
    for found, what in _PYTHON_ONLY:
        if found.search(pattern):
            return what
    return None


def regex_entries(data: Mapping[str, Any]) -> Iterator[tuple[list[str | int], str]]:
    """The path and pattern of each inline ``regex``/``not-regex`` assertion of a config."""
    tests = data.get("tests")
    holders: list[tuple[list[str | int], Any]] = [(["defaultTest"], data.get("defaultTest"))]
    if isinstance(tests, list):
        holders += [(["tests", i], t) for i, t in enumerate(tests)]
    for at, test in holders:
        asserts = test.get("assert") if isinstance(test, Mapping) else None
        for i, entry in enumerate(asserts if isinstance(asserts, list) else []):
            if not isinstance(entry, Mapping) or not isinstance(entry.get("value"), str):
                continue
            if str(entry.get("type", "")).removeprefix("not-") == "regex":
                yield [*at, "assert", i, "value"], entry["value"]
