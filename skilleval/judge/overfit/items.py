"""What the overfitting judge labels: its vocabulary, its weights and limits, and the items.

An item is a rubric criterion, an ``llm-assert`` statement or a deterministic assertion,
numbered from 1 so the judge can refer to it without quoting it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final, Literal

from skilleval.suite.model import AssertionEntry, Suite
from skilleval.util.frozen import frozen

ItemKind = Literal["rubric", "statement", "assertion"]

CRITERION_LABELS: Final = ("outcome", "technique", "vocabulary")
ASSERTION_LABELS: Final = ("broad", "narrow")
WEIGHTS: Final[Mapping[str, float]] = {
    "outcome": 0.0,
    "technique": 0.5,
    "vocabulary": 1.0,
    "broad": 0.0,
    "narrow": 1.0,
}
HOLISTIC_SCORES: Final = (0, 0.25, 0.5, 0.75, 1)
"""What the judge may answer for the whole suite: 0 outcomes only, 1 mostly echoing."""

PER_ELEMENT_SHARE: Final = 0.6
HOLISTIC_SHARE: Final = 0.4
MODERATE: Final = 0.20
"""Scores from here up are Moderate; below it, Low."""
HIGH: Final = 0.50
"""Scores from here up are High."""

FLAGGED: Final = frozenset({"technique", "vocabulary", "narrow"})
UNCLASSIFIED: Final = "unclassified"

REASONING_CHARS: Final = 120
"""Longest reasoning per item; bounded so the reply fits its budget, which grows per item."""
SKILL_CHARS: Final = 12_000
"""SKILL.md is clipped to this many characters so the prompt fits a small model's context."""
MAX_PROMPTS: Final = 20
PROMPT_CHARS: Final = 200
ITEM_CHARS: Final = 300

# Token costs of the JSON around the reasoning text, rounded up. Text bounded to N ASCII
# characters costs at most N tokens, so the budget fits any reply the schema admits.
FRAME_TOKENS: Final = 32
ITEM_FRAME_TOKENS: Final = 24
HOLISTIC_FRAME_TOKENS: Final = 24


BLOCK_SCHEMA: Final[Mapping[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "overfitting judge report",
    "type": "object",
    "additionalProperties": False,
    "required": [
        "severity",
        "score",
        "per_element",
        "holistic",
        "items",
        "reason",
        "unclassified",
    ],
    "properties": {
        "severity": {"enum": ["Low", "Moderate", "High", "Unknown"]},
        "score": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "per_element": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "holistic": {"enum": [*HOLISTIC_SCORES, None]},
        "reason": {"type": "string"},
        "unclassified": {"type": "array", "items": {"type": "integer", "minimum": 1}},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["kind", "index", "test_id", "text", "label", "reasoning"],
                "properties": {
                    "kind": {"enum": ["rubric", "statement", "assertion"]},
                    "index": {"type": "integer", "minimum": 1},
                    "test_id": {"type": "string"},
                    "text": {"type": "string"},
                    "label": {"enum": [*CRITERION_LABELS, *ASSERTION_LABELS, UNCLASSIFIED]},
                    "reasoning": {"type": "string"},
                },
            },
        },
    },
}
"""The JSON Schema of what :func:`overfit_report` returns (for the results schema)."""


@frozen
class Item:
    """One thing the judge labels."""

    kind: ItemKind
    """``rubric`` (an llm-rubric criterion), ``statement`` (llm-assert) or ``assertion``."""
    index: int
    """1-based; the judge refers to items by this number only."""
    test_id: str
    """The first test that uses it (``defaultTest`` for the suite's default assertions)."""
    text: str

    @property
    def group(self) -> str:
        return "assertions" if self.kind == "assertion" else "criteria"

    @property
    def labels(self) -> tuple[str, ...]:
        return ASSERTION_LABELS if self.kind == "assertion" else CRITERION_LABELS


@frozen
class Label:
    label: str
    reasoning: str


def collect_items(suite: Suite) -> list[Item]:
    """Every distinct rubric criterion, statement and deterministic assertion, numbered.

    Criteria come first. An item used by several tests (a YAML anchor, ``defaultTest``) is
    listed once, under the first test that uses it.
    """
    criteria: list[tuple[ItemKind, str, str]] = []
    asserts: list[tuple[ItemKind, str, str]] = []
    seen: set[tuple[str, str]] = set()
    for test in suite.tests:
        test_id = re.sub(r"\[[^\]]*\]$", "", test.id)
        for entry in test.asserts:
            owner = "defaultTest" if entry.from_default else test_id
            if entry.tier == "model":
                kind: ItemKind = "statement" if entry.spec.name == "llm-assert" else "rubric"
                for text in _criteria(entry):
                    if ("criteria", text) not in seen:
                        seen.add(("criteria", text))
                        criteria.append((kind, owner, text))
                continue
            text = describe(entry)
            if ("assertions", text) not in seen:
                seen.add(("assertions", text))
                asserts.append(("assertion", owner, text))
    return [
        Item(kind, i, owner, text)
        for i, (kind, owner, text) in enumerate([*criteria, *asserts], start=1)
    ]


def _criteria(entry: AssertionEntry) -> list[str]:
    values = entry.value if isinstance(entry.value, list) else [entry.value]
    prefix = "NOT: " if entry.negated else ""
    return [f"{prefix}{clip(v, ITEM_CHARS)}" for v in values if isinstance(v, str) and v.strip()]


def describe(entry: AssertionEntry) -> str:
    """A deterministic assertion as the judge sees it: its type and its value as JSON."""
    parts = [entry.type]
    if entry.value is not None:
        parts.append(json.dumps(entry.value, ensure_ascii=False))
    if entry.threshold is not None and entry.value != entry.threshold:
        parts.append(f"(threshold {entry.threshold})")
    text = " ".join(parts[:1]) + (": " + " ".join(parts[1:]) if parts[1:] else "")
    return clip(text, ITEM_CHARS)


def clip(text: str, size: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= size else flat[: size - 1] + "…"
