"""What every reader of a foreign format shares: the file as read, its problems and notes.

A reader takes the :class:`Reading` of one file and returns a :class:`Part`: the tests it
holds, in skilleval's shape, and the suite-wide settings it implies. Problems are errors at
the file's ``line:col``; where a tool's meaning cannot be kept, a note (a warning) says so.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skilleval.errors import Diagnostic, Location
from skilleval.suite.formats.tree import At
from skilleval.suite.yamldoc import Document

ANNOTATIONS = frozenset(
    {"category", "categories", "tags", "note", "notes", "reason", "rationale", "intent", "comment"}
)
"""Keys people write beside an eval, query, stimulus or case for readers: not read, not warned."""


@dataclass
class Reading:
    """One foreign file being read into suite parts."""

    doc: Document
    path: Path
    base: Path
    """The folder that paths in the built suite are relative to."""
    skill: Path | None = None
    """The SKILL.md found beside the file, if any."""
    problems: list[Diagnostic] = field(default_factory=list)
    notes: list[Diagnostic] = field(default_factory=list)
    said: set[str] = field(default_factory=set)

    def at(self, path: Sequence[str | int] = ()) -> Location:
        return self.doc.at(path)

    def key_at(self, path: Sequence[str | int]) -> Location:
        return self.doc.key_at(path)

    def error(self, path: Sequence[str | int], message: str, *, key: bool = False) -> None:
        where = self.key_at(path) if key else self.at(path)
        self.problems.append(Diagnostic(where, message))

    def warn(self, path: Sequence[str | int], message: str, *, key: bool = False) -> None:
        where = self.key_at(path) if key else self.at(path)
        self.notes.append(Diagnostic(where, message, severity="warning"))

    def warn_once(self, path: Sequence[str | int], message: str) -> None:
        """A warning given at its first place only (it holds for the whole file)."""
        if message not in self.said:
            self.said.add(message)
            self.warn(path, f"{message} (here and wherever else it applies)")

    def wrap(self, path: Sequence[str | int], value: Any, source: str = "") -> At:
        """``value`` placed where ``path`` is written."""
        return At(value, self.at(path), self.key_at(path), source)

    def origin(self, path: Sequence[str | int], what: str) -> str:
        """A comment naming where ``what`` was written, for ``import``."""
        where = self.at(path)
        return f"{what}: {Path(where.path).name}:{where.line}"

    def text(self, node: Any, path: Sequence[str | int], name: str) -> str | None:
        """``node`` as a non-blank text, or None after an error naming ``name``."""
        if isinstance(node, bool) or node is None or isinstance(node, (dict, list)):
            self.error(path, f"`{name}` must be a text")
            return None
        text = str(node)
        if not text.strip():
            self.error(path, f"`{name}` is empty")
            return None
        return text

    def texts(self, node: Any, path: Sequence[str | int], name: str) -> list[tuple[str, int]]:
        """A text or a list of texts, each with its index (-1 for a single text)."""
        if isinstance(node, list):
            out = []
            for i, item in enumerate(node):
                text = self.text(item, [*path, i], f"{name}[{i}]")
                if text is not None:
                    out.append((text, i))
            return out
        text = self.text(node, path, name)
        return [] if text is None else [(text, -1)]

    def relative(self, target: Path) -> str:
        """``target`` written relative to the suite's folder."""

        return Path(os.path.relpath(target.resolve(), self.base.resolve())).as_posix()


@dataclass
class Part:
    """What one file contributes to the suite."""

    format: str
    """``skill-creator evals``, ``trigger set``, ``Vally spec``, ``PAI suite`` …"""
    variant: str
    tests: list[Any] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    """Top-level suite keys (``trials``, ``decoding``, ``type``, ``description`` …)."""
    needs_skill: bool = False
    """The part's tests route (``should_trigger``): a SKILL.md must be found."""


def unavailable(reading: Reading, path: Sequence[str | int], text: str, why: str) -> At:
    """An assertion the local run cannot make: an ``error`` verdict naming ``why``."""
    return reading.wrap(
        path,
        {"type": "unavailable", "value": {"text": text, "reason": why}},
        reading.origin(path, "not checkable here"),
    )


_FILE_NAME = r"(?:scripts?/\S+|[\w./-]+\.(?:py|sh|js|ts|ps1|rb))"
_RAN = re.compile(
    # "ran the script", "executed a command", "used scripts/fill.py", "calls tools/x.sh"
    r"\b(?:ran|executed|invoked|called|used)\b[^.;\n]{0,40}?\b(?:scripts?|tools?|commands?)\b"
    rf"|\b(?:ran|runs?|running|executed|executes|invoked|invokes|called|calls|used|uses|using)"
    rf"\b[^.;\n]{{0,30}}?{_FILE_NAME}",
    re.IGNORECASE,
)
_WROTE = re.compile(
    # "creates a file", "saved output.pdf", "writes the results to report.csv"
    r"\b(?:creat\w*|wr[io]te\w*|sav(?:e|es|ed|ing)|produc\w*|generat\w*|export\w*)\b"
    r"[^.;\n]{0,30}?(?:\bfiles?\b|\b[\w-]+\.(?:pdf|xlsx|docx|pptx|csv|png|jpg|svg|zip|json|md|txt|html)\b)",
    re.IGNORECASE,
)


def needs_more_than_reply(text: str) -> str | None:
    """Why an expectation cannot be judged from the reply alone, or None when it can.

    A judge sees the prompt and the reply; an expectation about a script the agent ran or a
    file it wrote needs a record the local run does not give the judge.
    """
    if _RAN.search(text):
        return (
            "it asks what the agent ran (a script, tool or command), and the judge sees "
            "only the reply"
        )
    if _WROTE.search(text):
        return "it asks about a file the agent wrote, and the judge sees only the reply"
    return None


def slug(text: str, limit: int = 48) -> str:
    """A test id made from ``text``."""
    out = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return out[:limit].rstrip("-") or "test"


_TEMPLATE_MARKS = ("{{", "{%", "{#")


def literal(text: str) -> str:
    """``text`` as a template that renders to itself (skilleval renders prompts and values)."""
    if not any(mark in text for mark in _TEMPLATE_MARKS):
        return text
    if "endraw" not in text:
        return "{% raw %}" + text + "{% endraw %}"
    return "".join("{{ " + repr(ch) + " }}" if ch in "{}%#" else ch for ch in text)
