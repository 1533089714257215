"""The JSON Schemas that lock the judge's replies, and token budgets that fit them.

Every schema is written for llama.cpp's schema-to-grammar converter as much as for
``jsonschema``: closed objects whose properties are all required (so keys come in the order
written), ``enum`` instead of ``minimum``/``maximum`` (which the converter ignores), and
``prefixItems`` to pin one list entry per rubric item or statement.

Free text is bounded by a ``pattern`` rather than ``maxLength``. The converter's own string
rule lets raw control characters through, which strict JSON parsers reject; this pattern
excludes them, and excludes ``"`` and ``\\`` so the grammar never has to reason about escapes.
The bound also stops a small model from rambling until it runs out of tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

SCORES: Final = (1, 2, 3, 4, 5)
"""The judge's score scale; 1 fails the rubric, 5 fully meets it."""

TRUTH: Final = ("TRUE", "FALSE", "UNKNOWN")
"""What the judge may say about one statement."""

REASON_CHARS: Final = 240
"""Longest ``reason`` in an ``llm-rubric`` reply."""

NOTES_CHARS: Final = 120
"""Longest ``notes`` of one rubric check."""

STATEMENT_REASON_CHARS: Final = 160
"""Longest ``reason`` for one ``llm-assert`` statement."""

# Token costs of the JSON around the free text (keys, punctuation, numbers, booleans), rounded
# up. A token is at least one ASCII character, so text bounded to N characters costs at most N
# tokens; the budgets below therefore fit any ASCII reply the schema admits.
_RUBRIC_FRAME_TOKENS: Final = 32
CHECK_FRAME_TOKENS: Final = 24
_ASSERT_FRAME_TOKENS: Final = 16
_STATEMENT_FRAME_TOKENS: Final = 24


def bounded_text(max_chars: int) -> dict[str, Any]:
    """A string schema of at most ``max_chars`` characters, without quotes, backslashes or controls."""
    return {"type": "string", "pattern": f'^[^"\\\\\\x00-\\x1f]{{0,{max_chars}}}$'}


def closed(properties: dict[str, Any]) -> dict[str, Any]:
    """An object with exactly these properties, all required, in this order (constrained
    decoding writes them in schema order)."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def pinned_list(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """An array of exactly these entries, in this order."""
    return {
        "type": "array",
        "prefixItems": entries,
        "items": False,
        "minItems": len(entries),
    }


def checks_schema(items: int) -> dict[str, Any]:
    """A list rubric's ``checks``: one ``{id, pass, notes}`` per numbered item, in order."""
    return pinned_list(
        [
            closed(
                {
                    "id": {"type": "integer", "enum": [i]},
                    "pass": {"type": "boolean"},
                    "notes": bounded_text(NOTES_CHARS),
                }
            )
            for i in range(1, items + 1)
        ]
    )


def rubric_schema(items: int = 0) -> dict[str, Any]:
    """The reply schema of ``llm-rubric``: ``reason``, ``score``, ``pass``, then ``checks``.

    Args:
        items: How many rubric items there are; 0 for a single free-text rubric, which has
            no ``checks``.
    """
    properties: dict[str, Any] = {
        "reason": bounded_text(REASON_CHARS),
        "score": {"type": "integer", "enum": list(SCORES)},
        "pass": {"type": "boolean"},
    }
    if items:
        properties["checks"] = checks_schema(items)
    return closed(properties)


def assert_schema(statements: int) -> dict[str, Any]:
    """The reply schema of ``llm-assert``: one ``{id, reason, verdict}`` per statement, in order."""
    return verdicts_schema(statements, TRUTH, STATEMENT_REASON_CHARS)


def verdicts_schema(count: int, vocabulary: Sequence[str], reason_chars: int) -> dict[str, Any]:
    """``{verdicts}``: one ``{id, reason, verdict}`` per numbered item 1..``count``, in order,
    each verdict one word of ``vocabulary``."""
    return closed(
        {
            "verdicts": pinned_list(
                [
                    closed(
                        {
                            "id": {"type": "integer", "enum": [i]},
                            "reason": bounded_text(reason_chars),
                            "verdict": {"type": "string", "enum": list(vocabulary)},
                        }
                    )
                    for i in range(1, count + 1)
                ]
            )
        }
    )


def rubric_budget(items: int = 0) -> int:
    """``max_tokens`` for an ``llm-rubric`` reply with ``items`` checks."""
    return _RUBRIC_FRAME_TOKENS + REASON_CHARS + items * (CHECK_FRAME_TOKENS + NOTES_CHARS)


def assert_budget(statements: int) -> int:
    """``max_tokens`` for an ``llm-assert`` reply on ``statements`` statements."""
    return _ASSERT_FRAME_TOKENS + statements * (_STATEMENT_FRAME_TOKENS + STATEMENT_REASON_CHARS)
