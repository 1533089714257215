"""HTML checks on the model's output, with promptfoo's rules.

``is-html`` parses the output with the WHATWG algorithm browsers use and accepts it when it
holds a known HTML element (or a custom element, whose name has a dash) and no loose text
outside an element, unless a ``<body>`` tag is written out. ``contains-html`` is promptfoo's
heuristic: at least two signs of HTML among tags, entities, a doctype, comments and attributes.
The known element names are data, in ``html_elements.txt`` beside this module. The XML checks
are in :mod:`.xml_checks`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.builtin._common import quote

MAX_HTML_CHARS = 10 * 1024 * 1024
"""promptfoo's size limit for HTML checks: a longer output neither is nor contains HTML."""

ELEMENT_NAMES: Final = Path(__file__).with_name("html_elements.txt")
"""The element names promptfoo recognises as HTML, one per line; ``#`` starts a comment."""


def _read_names(path: Path) -> frozenset[str]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text("utf-8").splitlines())
    return frozenset(line for line in lines if line)


HTML_ELEMENTS: Final = _read_names(ELEMENT_NAMES)
"""The element names promptfoo recognises as HTML; a name with a dash is a custom element."""


_HTML_SIGNS: tuple[tuple[str, re.Pattern[str], int], ...] = (
    ("a self-closing tag", re.compile(r"<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?/>"), 1),
    ("an entity", re.compile(r"&(?:[a-zA-Z]+|#[0-9]+|#x[0-9a-fA-F]+);"), 1),
    ("a doctype", re.compile(r"<!DOCTYPE\s+html", re.IGNORECASE), 2),
    ("a comment", re.compile(r"<!--[^-]*(?:-[^-]+)*-->"), 1),
    ("an attribute", re.compile(r"\s[a-zA-Z-]+=\s*[\"'][^\"']*[\"']"), 1),
    (
        "a common HTML tag",
        re.compile(
            r"<(?:html|head|body|div|span|p|a|img|h[1-6]|ul|ol|li|table|tr|td|th|form|input"
            r"|button|script|style|link|meta|br|hr)\b",
            re.IGNORECASE,
        ),
        2,
    ),
)
_OPENING_TAG = re.compile(r"<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?>")
_CLOSING_TAG = re.compile(r"</[a-zA-Z][a-zA-Z0-9-]*\s*>")
_HTML_SIGNS_NEEDED = 2


def html_signs(text: str) -> tuple[int, list[str]]:
    """promptfoo's count of signs that ``text`` holds HTML, with what was seen."""
    seen: list[str] = []
    weight = 0
    opening, closing = bool(_OPENING_TAG.search(text)), bool(_CLOSING_TAG.search(text))
    if opening and closing:
        weight, seen = 2, ["opening and closing tags"]
    elif opening or closing:
        weight, seen = 1, ["an opening tag" if opening else "a closing tag"]
    for label, pattern, points in _HTML_SIGNS:
        if pattern.search(text):
            weight += points
            seen.append(label)
    return weight, seen


@assertion("contains-html", value=None)
def contains_html(check: Check) -> Verdict:
    """Output contains HTML: at least two signs among tags, entities, comments and attributes."""
    if len(check.output) > MAX_HTML_CHARS:
        return Verdict.of(False, f"output is longer than {MAX_HTML_CHARS} characters")
    weight, seen = html_signs(check.output)
    found = ", ".join(seen) if seen else "no sign of HTML"
    return Verdict.of(
        weight >= _HTML_SIGNS_NEEDED,
        f"output has {found} (weight {weight}; {_HTML_SIGNS_NEEDED} needed)",
    )


_WRAPPERS = ("html", "head", "body")
_WRAPPER_TAG = {name: re.compile(f"<{name}(?=[\\s>/])") for name in _WRAPPERS}


def _local_name(tag: Any) -> str | None:
    if not isinstance(tag, str):
        return None  # a comment or processing instruction
    return tag.rsplit("}", 1)[-1].lower()


def _loose_text(body: Any) -> str | None:
    """Text written directly in ``body``, outside any element, or None."""
    pieces = [body.text or ""] + [child.tail or "" for child in body]
    for piece in pieces:
        if piece.strip():
            return piece.strip()
    return None


@functools.cache
def _recording_builder() -> Any:
    """html5lib's ElementTree builder, noting which head and body elements were written.

    The parser adds them when a document leaves them out; only the ones made from a tag in
    the text count as written. A tag from the text is told apart from one the parser implies
    by the tokenizer's ``selfClosingAcknowledged`` key, which implied tags lack. (html5lib
    always implies the html element; :func:`_html_tag_first` says whether it was written.)
    """
    from html5lib import treebuilders  # lazy: start-up time

    base: Any = treebuilders.getTreeBuilder("etree")

    class Recording(base):  # type: ignore[misc]
        def reset(self) -> None:
            super().reset()
            self.written: set[int] = set()

        def _note(self, token: Mapping[str, Any], element: Any) -> None:
            if token.get("name") in _WRAPPERS and "selfClosingAcknowledged" in token:
                self.written.add(id(element._element))

        def insertElementNormal(self, token: Mapping[str, Any]) -> Any:
            element = super().insertElementNormal(token)
            self._note(token, element)
            return element

        def insertElementTable(self, token: Mapping[str, Any]) -> Any:
            element = super().insertElementTable(token)
            self._note(token, element)
            return element

    return Recording


_IGNORED_BEFORE_HTML = frozenset({"Comment", "Doctype", "SpaceCharacters", "ParseError"})


def _html_tag_first(text: str) -> bool:
    """Whether an ``<html>`` tag makes the html element: no content comes before it.

    Comments, a doctype, whitespace and stray end tags (other than head, body, html and br)
    may precede it, as the HTML algorithm ignores them there.
    """
    from html5lib._tokenizer import HTMLTokenizer  # lazy: start-up time
    from html5lib.constants import tokenTypes

    kinds = {number: name for name, number in tokenTypes.items()}
    for token in HTMLTokenizer(text):
        kind = kinds.get(token["type"], "")
        if kind in _IGNORED_BEFORE_HTML:
            continue
        if kind == "EndTag" and token["name"] not in ("head", "body", "html", "br"):
            continue
        return kind == "StartTag" and str(token["name"]) == "html"
    return False


def html_problem(text: str) -> str | None:
    """Why ``text`` is not an HTML document or fragment by promptfoo's rules, or None."""
    import html5lib  # lazy: start-up time

    trimmed = text.strip()
    if not trimmed:
        return "output is empty"
    if len(trimmed) > MAX_HTML_CHARS:
        return f"output is longer than {MAX_HTML_CHARS} characters"
    if re.match(r"\s*<\?xml", trimmed, re.IGNORECASE):
        return "output is XML, not HTML"
    parser = html5lib.HTMLParser(tree=_recording_builder(), namespaceHTMLElements=False)
    root = parser.parse(trimmed, scripting=True)
    lowered = trimmed.lower()

    def written(name: str, element: Any) -> bool:
        if not _WRAPPER_TAG[name].search(lowered):
            return False
        if name == "html":
            return _html_tag_first(trimmed)
        return id(element) in parser.tree.written

    elements = [(name, el) for el in root.iter() if (name := _local_name(el.tag)) is not None]
    body = next((el for name, el in elements if name == "body"), None)
    if body is not None and not written("body", body):
        loose = _loose_text(body)
        if loose is not None:
            return f"text {quote(loose, 40)} stands outside any element"
    for name, element in elements:
        if name in _WRAPPERS:
            if written(name, element):
                return None
        elif name in HTML_ELEMENTS or "-" in name:
            return None
    return "output holds no known HTML element"


@assertion("is-html", value=None)
def is_html(check: Check) -> Verdict:
    """Whole output is HTML: known elements, and no loose text outside them."""
    problem = html_problem(check.output)
    if problem is None:
        return Verdict.of(True, "output is HTML")
    return Verdict.of(False, f"output is not HTML: {problem}")
