"""Reading one step's reply: a tool call, a final answer, or why it is neither.

The reader is lenient about a missing ``action`` wrapper and about prose around the JSON.
Text from the reply is scrubbed where it enters (:mod:`skilleval.util.scrub`): a NUL byte or a
lone surrogate in an argument would stop a command from starting or the results from being
written, so each becomes U+FFFD and the step records what was replaced.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skilleval.trajectory import result_text
from skilleval.util.frozen import frozen
from skilleval.util.jsontext import first_object
from skilleval.util.scrub import scrub


@frozen
class ParsedReply:
    """One reply read: at most one of ``tool`` and ``final``, or ``error``."""

    thought: str | None = None
    tool: str | None = None
    arguments: Any = None
    final: str | None = None
    error: str | None = None
    replaced: tuple[str, ...] = ()
    """What scrubbing replaced, one note per place (``action.arguments.path: 1 NUL byte``)."""


def parse_step(text: str) -> ParsedReply:
    """Read one reply; lenient about a missing ``action`` wrapper and surrounding prose."""
    found = first_object(text)
    if found is None:
        shown = " ".join(text.split())[:120]
        return ParsedReply(error=f"reply is not a JSON object: {shown!r}")
    data, notes = scrub(found)
    replaced = tuple(notes)
    thought = data.get("thought")
    thought = thought if isinstance(thought, str) else None
    action = data.get("action", data)
    if not isinstance(action, Mapping):
        error = "`action` must be an object with `tool` or `final`"
        return ParsedReply(thought, error=error, replaced=replaced)
    if "final" in action:
        final = action["final"]
        answer = final if isinstance(final, str) else result_text(final)
        return ParsedReply(thought, final=answer, replaced=replaced)
    if "tool" in action:
        name = action["tool"]
        if not isinstance(name, str):
            error = f"`tool` must be a tool name, not {result_text(name)}"
            return ParsedReply(thought, error=error, replaced=replaced)
        arguments = action.get("arguments", {})
        return ParsedReply(thought, tool=name, arguments=arguments, replaced=replaced)
    error = "reply is neither a tool call nor a final answer"
    return ParsedReply(thought, error=error, replaced=replaced)
