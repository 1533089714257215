"""Helpers shared by the built-in assertion families: quoting and JSON comparison.

Parsing JSON out of an output lives in :mod:`skilleval.util.jsontext`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from skilleval.api import Check

CLIP = 80
"""Longest excerpt of an output or value quoted in a reason."""


def clip(text: str, limit: int = CLIP) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quote(text: str, limit: int = CLIP) -> str:
    """``text`` clipped and quoted the way Python shows a string."""
    return repr(clip(text, limit))


def as_text(value: Any) -> str:
    """A scalar value as the text an output would contain (``true``, ``42``, ``3.5``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def lower_first(message: str) -> str:
    """``message`` with its first letter lower-cased, for library messages used in reasons."""
    return message[:1].lower() + message[1:]


def transformed_object(check: Check) -> Any:
    """The transform's result when it is structured data rather than text, else None."""
    if isinstance(check.transformed, str):
        return None
    return check.transformed


def dump(value: Any, limit: int = CLIP) -> str:
    """A JSON value rendered compactly for a reason."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return clip(text, limit)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def json_difference(actual: Any, expected: Any, path: str = "$") -> str | None:
    """Where two JSON values first differ, described for a reason; None when they are equal.

    Unlike ``==``, ``true`` and ``1`` differ, as they do in JSON; ``1`` and ``1.0`` do not.
    """
    kind = _kind(actual)
    if kind != _kind(expected):
        return f"{path} is {dump(actual, 40)}, expected {dump(expected, 40)}"
    if kind == "object":
        for key in expected:
            if key not in actual:
                return f"{path} lacks key {key!r}"
        for key in actual:
            if key not in expected:
                return f"{path} has unexpected key {key!r}"
        for key in expected:
            found = json_difference(actual[key], expected[key], f"{path}.{key}")
            if found is not None:
                return found
        return None
    if kind == "array":
        if len(actual) != len(expected):
            return f"{path} has {len(actual)} items, expected {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            found = json_difference(a, e, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    if actual == expected:
        return None
    return f"{path} is {dump(actual, 40)}, expected {dump(expected, 40)}"
