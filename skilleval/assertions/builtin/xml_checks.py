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

import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.parsers import expat

from skilleval.api import Check, Verdict, assertion
from skilleval.util.frozen import frozen

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


@functools.cache
def _name_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """An XML name's first character and the rest; compiled on first use, as their wide
    character ranges take milliseconds to compile."""
    return (
        re.compile(r"[A-Za-z_:\u00c0-\uffff]"),
        re.compile(r"[A-Za-z0-9_:.\-\u00b7\u00c0-\uffff]*"),
    )


@frozen
class _Tag:
    kind: str  # "open", "close", "declaration"
    start: int
    end: int
    name: str = ""
    self_closing: bool = False


@frozen
class _Span:
    start: int
    end: int
    parent: int | None


def _tag_end(text: str, start: int) -> int:
    """The index of the ``>`` closing the tag at ``start``, or -1 if a ``<`` comes first.

    Quoted attribute values are skipped.
    """
    quote_char = ""
    for i in range(start + 1, len(text)):
        char = text[i]
        if quote_char:
            if char == quote_char:
                quote_char = ""
        elif char in "\"'":
            quote_char = char
        elif char == "<":
            return -1
        elif char == ">":
            return i
    return -1


def _delimited_end(text: str, start: int, closer: str) -> int:
    found = text.find(closer, start)
    return len(text) - 1 if found < 0 else found + len(closer) - 1


def _declaration_end(text: str, start: int) -> int:
    if text.startswith("<!--", start):
        return _delimited_end(text, start + 4, "-->")
    if text.startswith("<![CDATA[", start):
        return _delimited_end(text, start + 9, "]]>")
    quote_char = ""
    depth = 0
    for i in range(start + 2, len(text)):
        char = text[i]
        if quote_char:
            if char == quote_char:
                quote_char = ""
        elif char in "\"'":
            quote_char = char
        elif char == "[":
            depth += 1
        elif char == "]" and depth:
            depth -= 1
        elif char == ">" and not depth:
            return i
    return len(text) - 1


def _name_at(text: str, start: int) -> str:
    name_start, name_char = _name_patterns()
    if start >= len(text) or not name_start.match(text, start):
        return ""
    match = name_char.match(text, start + 1)
    return text[start : match.end() if match else start + 1]


def _read_tag(text: str, start: int) -> _Tag | None:
    following = text[start + 1 : start + 2]
    if not following:
        return None
    if following == "!":
        return _Tag("declaration", start, _declaration_end(text, start))
    if following == "?":
        return _Tag("declaration", start, _delimited_end(text, start + 2, "?>"))
    closing = following == "/"
    name = _name_at(text, start + 2 if closing else start + 1)
    if not name:
        return None
    end = _tag_end(text, start)
    if end < 0:
        return None
    if closing:
        return _Tag("close", start, end, name)
    return _Tag("open", start, end, name, text[start:end].rstrip().endswith("/"))


def _spans(text: str) -> Iterator[_Span]:
    """Every balanced element in ``text``, each with the start of the element around it."""
    open_tags: list[_Tag] = []
    i = text.find("<")
    while 0 <= i < len(text):
        tag = _read_tag(text, i)
        if tag is None:
            i = text.find("<", i + 1)
            continue
        parent = open_tags[-1].start if open_tags else None
        if tag.kind == "open" and tag.self_closing:
            yield _Span(tag.start, tag.end + 1, parent)
        elif tag.kind == "open":
            open_tags.append(tag)
        elif tag.kind == "close":
            if open_tags and open_tags[-1].name == tag.name:
                opened = open_tags.pop()
                yield _Span(opened.start, tag.end + 1, open_tags[-1].start if open_tags else None)
            else:
                open_tags.clear()
        i = text.find("<", tag.end + 1)


def xml_candidates(text: str) -> list[tuple[int, int]]:
    """Stretches of ``text`` that may be XML, in the order promptfoo tries them.

    First each run of two or more sibling elements that have no enclosing element of their
    own, taken together; then each outermost element, earliest first.
    """
    spans = list(_spans(text))
    starts = {s.start for s in spans}
    ordered: list[tuple[int, int]] = []
    by_parent: dict[int | None, list[_Span]] = {}
    for span in spans:
        by_parent.setdefault(span.parent, []).append(span)
    for parent, siblings in by_parent.items():
        if len(siblings) < 2 or (parent is not None and parent in starts):
            continue
        siblings.sort(key=lambda s: (s.start, s.end))
        ordered.append((siblings[0].start, siblings[-1].end))
    outermost = sorted(
        (s for s in spans if s.parent is None or s.parent not in starts),
        key=lambda s: (s.start, -s.end),
    )
    ordered.extend((s.start, s.end) for s in outermost)
    return list(dict.fromkeys(ordered))


_WRAPPER = "skilleval-fragment"
_ENTITY = re.compile(r"&(?!(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9A-Fa-f]+);)")
_ATTRIBUTE = re.compile(r"""([^\s=/>"']+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+)))?""")


def _attribute_text(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


def _lenient_tag(tag: str) -> str:
    """An opening tag rewritten so that expat reads it as promptfoo's parser does.

    Attribute values may hold ``<`` and ``&``, may be unquoted, and an attribute may have no
    value (it is true).
    """
    closing = "/>" if tag.rstrip(">").rstrip().endswith("/") else ">"
    body = tag[1:].rstrip(">").rstrip().removesuffix("/")
    name = _name_at(body, 0)
    pieces = [f"<{name}"]
    for match in _ATTRIBUTE.finditer(body, len(name)):
        double, single, bare = match.group(2, 3, 4)
        value = next((v for v in (double, single, bare) if v is not None), "true")
        pieces.append(f' {match.group(1)}="{_attribute_text(value)}"')
    return "".join(pieces) + closing


def _lenient(fragment: str) -> str:
    """``fragment`` with the laxities promptfoo's parser allows made well-formed."""
    pieces: list[str] = []
    last = 0
    at = fragment.find("<")
    while at >= 0:
        tag = _read_tag(fragment, at)
        if tag is None:
            at = fragment.find("<", at + 1)
            continue
        pieces.append(_ENTITY.sub("&amp;", fragment[last:at]))
        raw = fragment[at : tag.end + 1]
        pieces.append(_lenient_tag(raw) if tag.kind == "open" else raw)
        last = tag.end + 1
        at = fragment.find("<", last)
    pieces.append(_ENTITY.sub("&amp;", fragment[last:]))
    return "".join(pieces)


def _fragment_tree(fragment: str) -> dict[str, Any] | None:
    """A fragment's nested mapping (several top-level elements allowed), or None if malformed.

    As in promptfoo's parser, an ``&`` that starts no character reference, and an entity no
    DTD defines, are kept as text; attribute values need no quotes, and may hold ``<``.
    """
    escaped = _lenient(fragment)
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
