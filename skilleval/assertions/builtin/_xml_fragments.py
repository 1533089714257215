"""Where XML may stand in free text, read the way promptfoo's lenient parser reads it.

:func:`xml_candidates` finds the stretches of an output that ``contains-xml`` tries, in
promptfoo's order (runs of sibling elements, then each outermost element), with a small tag
scanner that skips quoted attribute values, comments, CDATA and declarations.
:func:`lenient` rewrites a stretch so that expat accepts what promptfoo's parser lets through:
a bare ``&``, unquoted or valueless attributes, ``<`` inside an attribute value. The checks
themselves are in :mod:`.xml_checks`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from skilleval.util.frozen import frozen


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


def lenient(fragment: str) -> str:
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
