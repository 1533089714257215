"""XML checks on the model's output, with promptfoo's rules.

``is-xml`` wants the whole output to be one well-formed XML document; ``contains-xml`` looks
for a balanced run of tags anywhere in it. Both may require element paths (``root.item.name``,
``root.@_id`` for an attribute, ``root.item.1`` for the second of repeated elements), written
as a comma-separated string, a list, or ``{requiredElements: [...]}``. A path is looked up in
the document read the way promptfoo's parser reads it: an element with neither children nor
attributes is its text, repeated elements form a list, attributes are ``@_`` keys and the
text beside children is ``#text``. The HTML checks are in :mod:`.html_checks`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.parsers import expat

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.builtin._xml_fragments import lenient, xml_candidates

_PATHS: dict[str, Any] = {
    "oneOf": [
        {"type": "string", "description": "comma-separated element paths"},
        {"type": "array", "items": {"type": ["string", "number"]}},
        {
            "type": "object",
            "properties": {
                "requiredElements": {"type": "array", "items": {"type": ["string", "number"]}}
            },
            "additionalProperties": False,
        },
    ],
    "description": "element paths the XML must contain, e.g. 'analysis.summary, analysis.score'",
}

_LISTED = 5


def required_paths(value: Any) -> list[str]:
    """The element paths a value asks for, in promptfoo's three spellings."""
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(",")]
    if isinstance(value, Mapping):
        value = value.get("requiredElements") or []
    return [_path_text(v) for v in value]


def _path_text(item: Any) -> str:
    if isinstance(item, float) and item.is_integer():
        return str(int(item))
    return str(item)


# --- the document as promptfoo's parser sees it -----------------------------------------------


@dataclass
class _Open:
    name: str
    attributes: dict[str, str]
    children: dict[str, Any] = field(default_factory=dict)
    text: list[str] = field(default_factory=list)


def _add(children: dict[str, Any], name: str, value: Any) -> None:
    if name not in children:
        children[name] = value
    elif isinstance(children[name], _Repeated):
        children[name].append(value)
    else:
        children[name] = _Repeated([children[name], value])


class _Repeated(list[Any]):
    """Elements of one name under one parent, which promptfoo's parser turns into a list."""


class _TreeBuilder:
    """Builds the nested mapping of one document from expat's events."""

    def __init__(self) -> None:
        self.top = _Open("", {})
        self.stack = [self.top]

    def attach(self, parser: Any) -> None:
        parser.StartElementHandler = self.start
        parser.EndElementHandler = self.end
        parser.CharacterDataHandler = self.text
        parser.XmlDeclHandler = self.declaration

    def declaration(self, version: str | None, encoding: str | None, standalone: int) -> None:
        found = {"@_version": version, "@_encoding": encoding}
        _add(self.top.children, "?xml", {k: v for k, v in found.items() if v is not None})

    def start(self, name: str, attributes: dict[str, str]) -> None:
        self.stack.append(_Open(name, attributes))

    def text(self, data: str) -> None:
        self.stack[-1].text.append(data)

    def end(self, name: str) -> None:
        done = self.stack.pop()
        text = "".join(done.text).strip()
        value: Any
        if not done.children and not done.attributes:
            value = text
        else:
            value = {f"@_{k}": v for k, v in done.attributes.items()}
            value.update(done.children)
            if text:
                value["#text"] = text
        _add(self.stack[-1].children, name, value)


def _parse_tree(text: str) -> dict[str, Any]:
    """The document's nested mapping; raises ExpatError when it is not well-formed."""
    builder = _TreeBuilder()
    parser = expat.ParserCreate()
    builder.attach(parser)
    parser.Parse(text, True)
    return builder.top.children


def _has_path(tree: Any, path: Sequence[str]) -> bool:
    current = tree
    for key in path:
        if isinstance(current, _Repeated):
            if not key.isdigit() or str(int(key)) != key or int(key) >= len(current):
                return False
            current = current[int(key)]
        elif isinstance(current, Mapping):
            if key not in current:
                return False
            current = current[key]
        else:
            return False
    return True


def _missing(tree: Any, paths: Sequence[str]) -> list[str]:
    return [p for p in paths if not _has_path(tree, p.split("."))]


def _listing(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:_LISTED])
    rest = len(paths) - _LISTED
    return f"{shown} and {rest} more" if rest > 0 else shown


# --- is-xml -----------------------------------------------------------------------------------


class _InternalSubset(Exception):
    """The document declares a DTD internal subset, which is refused (entity expansion)."""


def _doctype(name: str, system_id: str | None, public_id: str | None, internal: int) -> None:
    if internal:
        raise _InternalSubset


def xml_problem(text: str) -> str | None:
    """Why ``text`` is not one well-formed, namespace-correct XML document, or None."""
    parser = expat.ParserCreate(namespace_separator=" ")
    parser.StartDoctypeDeclHandler = _doctype
    try:
        parser.Parse(text, True)
    except _InternalSubset:
        return "it declares a DTD internal subset, which is not supported"
    except expat.ExpatError as exc:
        return f"{expat.ErrorString(exc.code)} at line {exc.lineno}, column {exc.offset + 1}"
    return None


@assertion("is-xml", value=_PATHS, value_required=False)
def is_xml(check: Check) -> Verdict:
    """Whole output is well-formed XML, optionally holding the listed element paths.

    The value lists paths such as `root.item.name`, comma-separated or as a list.
    """
    problem = xml_problem(check.output)
    if problem is not None:
        return Verdict.of(False, f"output is not well-formed XML: {problem}")
    paths = required_paths(check.value)
    missing = _missing(_parse_tree(check.output), paths)
    if missing:
        return Verdict.of(False, f"output XML lacks {_listing(missing)}")
    held = f", with {_listing(paths)}" if paths else ""
    return Verdict.of(True, f"output is well-formed XML{held}")


# --- contains-xml -----------------------------------------------------------------------------

_WRAPPER = "skilleval-fragment"


def _fragment_tree(fragment: str) -> dict[str, Any] | None:
    """A fragment's nested mapping (several top-level elements allowed), or None if malformed.

    As in promptfoo's parser, an ``&`` that starts no character reference, and an entity no
    DTD defines, are kept as text; attribute values need no quotes, and may hold ``<``.
    """
    escaped = lenient(fragment)
    try:
        tree = _parse_tree(f"<{_WRAPPER}>{escaped}</{_WRAPPER}>")[_WRAPPER]
    except expat.ExpatError:
        return None
    return tree if isinstance(tree, dict) else {}


@assertion("contains-xml", value=_PATHS, value_required=False)
def contains_xml(check: Check) -> Verdict:
    """Output contains well-formed XML, optionally holding the listed element paths.

    The value lists paths such as `root.item.name`, comma-separated or as a list.
    """
    candidates = xml_candidates(check.output)
    if not candidates:
        return Verdict.of(False, "output contains no XML elements")
    paths = required_paths(check.value)
    well_formed: list[tuple[int, int]] = []
    for start, end in candidates:
        if any(start >= s and end <= e for s, e in well_formed):
            continue
        tree = _fragment_tree(check.output[start:end])
        if tree is None:
            continue
        if not _missing(tree, paths):
            held = f" with {_listing(paths)}" if paths else ""
            return Verdict.of(True, f"output contains well-formed XML{held} at offset {start}")
        well_formed.append((start, end))
    if paths:
        return Verdict.of(False, f"no well-formed XML in the output holds all of {_listing(paths)}")
    return Verdict.of(False, "output contains no well-formed XML")
