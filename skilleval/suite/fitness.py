"""Read the fitness sets that ship in ``suites/``: a YAML list of items, every field checked.

The judge-fitness set (``judge-fitness.yaml``) and the router-fitness set
(``router-fitness.yaml``) are plain YAML, written by hand. Both are read here, field by field,
so that a mistake in either is reported like a mistake in a suite: at its ``file:line:col``,
all at once, as a :class:`~skilleval.errors.SuiteError`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from typing import Any

from skilleval.errors import Diagnostic, SuiteError
from skilleval.suite.yamlio import Document, parse_yaml


class ItemReader:
    """Reads the fields of one item (a mapping), collecting a diagnostic per problem."""

    def __init__(
        self, doc: Document, diagnostics: list[Diagnostic], allowed: Collection[str]
    ) -> None:
        self.doc = doc
        self.diagnostics = diagnostics
        self.data: dict[str, Any] = doc.data
        for key in self.data:
            if key not in allowed:
                self.fail([key], f"unknown field '{key}' (allowed: {', '.join(allowed)})", key=True)

    def fail(self, path: Sequence[str | int], message: str, *, key: bool = False) -> None:
        where = self.doc.key_at(path) if key else self.doc.at(path)
        self.diagnostics.append(Diagnostic(where, message))

    def text(self, name: str, *, required: bool = True) -> str | None:
        """A non-blank string field; None (with a diagnostic when required) otherwise."""
        if name not in self.data:
            if required:
                self.fail([], f"missing field '{name}'")
            return None
        value = self.data[name]
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.fail([name], f"'{name}' must be a text")
            return None
        if not str(value).strip():
            self.fail([name], f"'{name}' is blank")
            return None
        return str(value)

    def texts(self, name: str) -> str | tuple[str, ...] | None:
        """A non-blank string, or a non-empty list of non-blank strings."""
        value = self.data.get(name)
        if not isinstance(value, list):
            return self.text(name)
        if not value:
            self.fail([name], f"'{name}' is an empty list")
            return None
        out: list[str] = []
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                self.fail([name, i], f"'{name}' item {i + 1} must be a non-blank text")
            else:
                out.append(item)
        return tuple(out) if len(out) == len(value) else None

    def choice(self, name: str, options: Collection[str]) -> str | None:
        """A string field that must be one of ``options``."""
        value = self.text(name)
        if value is not None and value not in options:
            self.fail([name], f"'{name}' is {value!r}; expected one of: {', '.join(options)}")
            return None
        return value

    def flag(self, name: str, *, default: bool = False) -> bool:
        """An optional boolean field."""
        value = self.data.get(name, default)
        if not isinstance(value, bool):
            self.fail([name], f"'{name}' must be true or false")
            return default
        return value


def read_items(
    text: str,
    display: str,
    key: str,
    diagnostics: list[Diagnostic],
    *,
    other_keys: Collection[str] = (),
) -> tuple[Document, Iterator[Document]]:
    """The document, and a view of each mapping under its top-level ``key`` list.

    A top-level key that is neither ``key`` nor one of ``other_keys`` is a diagnostic.

    Raises:
        SuiteError: The text is not YAML, or ``key`` is not a non-empty list.
    """
    doc = parse_yaml(text, display)
    if not isinstance(doc.data, dict) or not isinstance(doc.data.get(key), list):
        raise SuiteError([Diagnostic(doc.at(), f"expected a mapping with a '{key}' list")])
    if not doc.data[key]:
        raise SuiteError([Diagnostic(doc.at([key]), f"'{key}' is empty")])
    for name in doc.data:
        if name != key and name not in other_keys:
            diagnostics.append(Diagnostic(doc.key_at([name]), f"unknown top-level key '{name}'"))

    def views() -> Iterator[Document]:
        for i, item in enumerate(doc.data[key]):
            if isinstance(item, dict):
                yield doc.sub([key, i])
            else:
                diagnostics.append(Diagnostic(doc.at([key, i]), "expected a mapping"))

    return doc, views()


def check_unique(readers: Sequence[ItemReader], name: str = "id") -> None:
    """Report every repeated value of field ``name``, at the repeat."""
    seen: dict[str, int] = {}
    for reader in readers:
        value = reader.data.get(name)
        if not isinstance(value, str):
            continue
        if value in seen:
            reader.fail([name], f"duplicate {name} '{value}' (first at line {seen[value]})")
        else:
            seen[value] = reader.doc.at([name]).line


def raise_if(diagnostics: Sequence[Diagnostic]) -> None:
    """Raise every collected diagnostic at once, in file order."""
    if diagnostics:
        raise SuiteError(diagnostics)
