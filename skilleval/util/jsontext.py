"""JSON read out of model text: the one home of every JSON parse of an output or a reply.

Three readings, each named for what it promises:

* :func:`loads_strict` parses the whole text as standard JSON and raises when it is not
  (``NaN`` and ``Infinity``, which :func:`json.loads` accepts, are refused). The ``is-json``
  family of assertions and the judge's reply check use it.
* :func:`loads_or_none` parses the whole text the way :func:`json.loads` does and gives None
  when it is not JSON. Transforms use it: ``json`` in an expression is None for prose.
* :func:`json_fragments` finds every JSON value embedded in prose or in a fenced block, and
  :func:`first_object` the first object among them. ``contains-json`` and the agent loop's
  reading of a step reply use them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

# A fence tagged json may hold any JSON value, even a bare string or number
_JSON_FENCE = re.compile(r"```[ \t]*json[ \t]*\r?\n(.*?)```", re.DOTALL | re.IGNORECASE)
_OPENERS = re.compile(r"[{\[]")


def reject_constant(name: str) -> Any:
    """A ``parse_constant`` hook for :mod:`json` that refuses ``NaN`` and ``Infinity``."""
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=reject_constant)


def loads_strict(text: str) -> Any:
    """Parse ``text`` as standard JSON; unlike :func:`json.loads`, ``NaN`` and ``Infinity`` are refused.

    Raises:
        json.JSONDecodeError: The text is not JSON.
        ValueError: The text uses a non-standard constant.
        RecursionError: The text nests deeper than Python's recursion limit.
    """
    return json.loads(text, parse_constant=reject_constant)


def loads_or_none(text: str) -> Any:
    """The JSON value of the whole of ``text`` as :func:`json.loads` reads it; None when it is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, TypeError, RecursionError):
        return None


def lower_first(message: str) -> str:
    """``message`` with its first letter lower-cased, for library messages used in reasons."""
    return message[:1].lower() + message[1:]


def json_error(exc: ValueError) -> str:
    """A short description of why text is not JSON, from the error :func:`loads_strict` raised."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{lower_first(exc.msg)} at line {exc.lineno} column {exc.colno}"
    return str(exc)


def json_fragments(text: str) -> Iterator[tuple[int, Any]]:
    """Every JSON fragment in ``text``, with its offset, in order.

    A fragment is the content of a fence tagged ``json`` that parses, or an object or array
    found by trying to decode at each ``{`` or ``[``. Once a fragment decodes, the scan resumes
    after it, so the members of a found object are not reported again.
    """
    fences = [
        (m.start(1), m.end(1), value)
        for m in _JSON_FENCE.finditer(text)
        for value in _decoded(m.group(1))
    ]
    found = sorted([(start, value) for start, _, value in fences], key=lambda f: f[0])
    covered = [(start, end) for start, end, _ in fences]
    pos = 0
    while (opener := _OPENERS.search(text, pos)) is not None:
        start = opener.start()
        inside = next((end for s, end in covered if s <= start < end), None)
        if inside is not None:
            pos = inside
            continue
        try:
            value, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            pos = start + 1
            continue
        found.append((start, value))
        pos = end
    yield from sorted(found, key=lambda f: f[0])


def _decoded(text: str) -> list[Any]:
    try:
        return [loads_strict(text)]
    except (ValueError, RecursionError):
        return []


def first_object(text: str) -> dict[str, Any] | None:
    """The whole of ``text`` when it is a JSON object, else the first object embedded in it."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        value = next((v for _, v in json_fragments(text) if isinstance(v, dict)), None)
    return value if isinstance(value, dict) else None
