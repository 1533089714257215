"""The overfitting judge: does a suite measure what a skill adds, or reward echoing it?

One judge call sees SKILL.md and the suite (its test prompts and grading items), never a
run result. It labels every rubric criterion and ``llm-assert`` statement ``outcome``,
``technique`` or ``vocabulary``, and every deterministic assertion ``broad`` or ``narrow``,
with one sentence of reasoning before each label. The labels are pinned by a JSON-Schema
``enum`` and items are referenced by number, so the judge can neither invent a label nor
misquote an item.

Scoring. Each label has a weight (outcome 0, technique 0.5, vocabulary 1, broad 0,
narrow 1); the per-element score is their mean over the classified items. The final score
is 0.6 × per-element + 0.4 × the judge's holistic score. The systematic part dominates
because a judge can call a suite clean while labelling one of its items ``vocabulary``.

Items the judge skipped get one repair pass that asks for them alone; any still missing are
``unclassified`` and left out of the score, since counting them as ``outcome`` would make an
unassessed suite look clean. When nothing at all could be classified (an empty, truncated or
unusable reply) the severity is ``Unknown``, never ``Low``.

The result is informational: it never changes an exit code.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from skilleval.errors import ProviderError, UsageError
from skilleval.suite import template
from skilleval.suite.model import AssertionEntry, Suite

if TYPE_CHECKING:
    import jinja2

    from skilleval.assertions.api import Judge

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
_FRAME_TOKENS: Final = 32
_ITEM_FRAME_TOKENS: Final = 24
_HOLISTIC_FRAME_TOKENS: Final = 24


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


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class Label:
    label: str
    reasoning: str


# -- items ----------------------------------------------------------------------------------


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
            if entry.spec.tier == "model":
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
    return [f"{prefix}{_clip(v, ITEM_CHARS)}" for v in values if isinstance(v, str) and v.strip()]


def describe(entry: AssertionEntry) -> str:
    """A deterministic assertion as the judge sees it: its type and its value as JSON."""
    parts = [entry.type]
    if entry.value is not None:
        parts.append(json.dumps(entry.value, ensure_ascii=False))
    if entry.threshold is not None and entry.value != entry.threshold:
        parts.append(f"(threshold {entry.threshold})")
    text = " ".join(parts[:1]) + (": " + " ".join(parts[1:]) if parts[1:] else "")
    return _clip(text, ITEM_CHARS)


def _clip(text: str, size: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= size else flat[: size - 1] + "…"


# -- the call -------------------------------------------------------------------------------


def _reasoning() -> dict[str, Any]:
    # No quotes, backslashes or control characters: the grammar never has to handle escapes.
    return {"type": "string", "pattern": f'^[^"\\\\\\x00-\\x1f]{{0,{REASONING_CHARS}}}$'}


def _entry(index: int, labels: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "index": {"type": "integer", "enum": [index]},
            "reasoning": _reasoning(),
            "label": {"type": "string", "enum": list(labels)},
        },
        "required": ["index", "reasoning", "label"],
        "additionalProperties": False,
    }


def reply_schema(items: Sequence[Item], *, holistic: bool = True) -> dict[str, Any]:
    """The JSON Schema of the judge's reply about ``items``.

    Each list pins one entry per item, in order (``prefixItems``), so a grammar-constrained
    model writes them all. There is no ``minItems``: a server that does not enforce the
    schema may stop early, and the items it skipped then get a repair pass instead of
    failing the whole reply.
    """
    properties: dict[str, Any] = {}
    for group in ("criteria", "assertions"):
        members = [i for i in items if i.group == group]
        if members:
            properties[group] = {
                "type": "array",
                "prefixItems": [_entry(i.index, i.labels) for i in members],
                "items": False,
            }
    if holistic:
        properties["holistic_reasoning"] = _reasoning()
        properties["holistic"] = {"enum": list(HOLISTIC_SCORES)}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def budget(items: int, *, holistic: bool = True) -> int:
    """``max_tokens`` for a reply about ``items`` items: it grows with every item."""
    total = _FRAME_TOKENS + items * (_ITEM_FRAME_TOKENS + REASONING_CHARS)
    if holistic:
        total += _HOLISTIC_FRAME_TOKENS + REASONING_CHARS
    return total


@functools.cache
def _env() -> jinja2.Environment:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("skilleval.lint", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def messages(suite: Suite, items: Sequence[Item], only: Sequence[int] = ()) -> list[dict[str, str]]:
    """The judge conversation: instructions, then SKILL.md, the test prompts and the items."""
    assert suite.skill is not None
    skill = {"name": suite.skill.name, "text": _clip_keep_lines(suite.skill.text, SKILL_CHARS)}
    tmpl = _env().get_template("overfit.j2")
    context = tmpl.new_context(
        {
            "skill": skill,
            "prompts": _prompts(suite),
            "criteria": [i for i in items if i.group == "criteria"],
            "assertions": [i for i in items if i.group == "assertions"],
            "only": [str(i) for i in only],
        }
    )
    return [
        {"role": role, "content": "".join(tmpl.blocks[role](context)).strip()}
        for role in ("system", "user")
    ]


def _clip_keep_lines(text: str, size: int) -> str:
    return text if len(text) <= size else text[:size] + "\n[… SKILL.md clipped]"


def _prompts(suite: Suite) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for test in suite.tests:
        prompt = test.prompt
        texts = (
            [prompt.text]
            if prompt.text is not None
            else [t for r, t in prompt.messages if r == "user"]
        )
        rendered = []
        for text in texts:
            try:
                rendered.append(template.render(text, test.vars))
            except template.TemplateProblem:
                rendered.append(text)
        shown = _clip("\n".join(rendered), PROMPT_CHARS)
        if shown in seen:
            continue
        seen.add(shown)
        out.append({"text": shown, "negative": test.should_trigger is False})
        if len(out) >= MAX_PROMPTS:
            break
    return out


def _read(reply: Any, items: Sequence[Item]) -> dict[int, Label]:
    """The usable labels in ``reply``: known index, a label allowed for that item, first wins."""
    by_index = {i.index: i for i in items}
    found: dict[int, Label] = {}
    if not isinstance(reply, Mapping):
        return found
    for group in ("criteria", "assertions"):
        entries = reply.get(group)
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, Mapping):
                continue
            index, label = entry.get("index"), entry.get("label")
            item = by_index.get(index) if isinstance(index, int) else None
            if item is None or item.group != group or label not in item.labels:
                continue
            if index in found:
                continue
            reasoning = entry.get("reasoning")
            found[item.index] = Label(str(label), reasoning if isinstance(reasoning, str) else "")
    return found


def _holistic(reply: Any) -> tuple[float | None, str]:
    if not isinstance(reply, Mapping):
        return None, ""
    value = reply.get("holistic")
    reasoning = reply.get("holistic_reasoning")
    text = reasoning if isinstance(reasoning, str) else ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, text
    if value not in HOLISTIC_SCORES:
        return None, text
    return float(value), text


# -- scoring --------------------------------------------------------------------------------


def per_element(labels: Iterable[str]) -> float | None:
    """The mean weight of the classified labels; None when there are none."""
    weights = [WEIGHTS[label] for label in labels if label in WEIGHTS]
    if not weights:
        return None
    return sum(weights) / len(weights)


def combine(element: float | None, holistic: float | None) -> float | None:
    """0.6 × per-element + 0.4 × holistic; the per-element score alone without a holistic one.

    Without any classified item there is no score: a holistic number alone is the judge's
    impression, not an assessment.
    """
    if element is None:
        return None
    if holistic is None:
        return element
    return PER_ELEMENT_SHARE * element + HOLISTIC_SHARE * holistic


def severity(score: float | None) -> str:
    """Low < 0.20 ≤ Moderate < 0.50 ≤ High; Unknown without a score."""
    if score is None:
        return "Unknown"
    if score >= HIGH:
        return "High"
    if score >= MODERATE:
        return "Moderate"
    return "Low"


# -- the report -----------------------------------------------------------------------------


def overfit_report(suite: Suite, judge: Judge) -> dict[str, Any]:
    """Ask ``judge`` whether ``suite`` is overfitted to its skill; a JSON-able block.

    Returns:
        ``{"severity", "score", "per_element", "holistic", "items", "reason",
        "unclassified"}``. ``items`` lists every item with its ``kind``, ``index``,
        ``test_id``, ``text``, ``label`` (``unclassified`` when the judge never labelled it)
        and ``reasoning``; ``unclassified`` lists their indexes.

    Raises:
        UsageError: The suite has no ``skill:``, so there is nothing to be overfitted to.
    """
    if suite.skill is None:
        raise UsageError(
            f"{suite.display} has no `skill:`: the overfitting judge compares a suite with "
            "the SKILL.md it tests"
        )
    items = collect_items(suite)
    if not items:
        return _block(
            items,
            {},
            None,
            "the suite has no rubric criteria, statements or assertions to classify",
        )
    try:
        first = judge.complete_json(messages(suite, items), reply_schema(items), budget(len(items)))
    except ProviderError as exc:
        return _block(items, {}, None, f"the judge gave no usable reply: {exc}")
    labels = _read(first, items)
    holistic, holistic_reason = _holistic(first)
    notes: list[str] = []
    if not labels:
        empty = first is None or first == "" or first == {} or first == []
        notes.append(
            "the judge's reply was empty" if empty else "the judge's reply labelled no item"
        )
    missing = [i for i in items if i.index not in labels]
    if missing:
        try:
            second = judge.complete_json(
                messages(suite, items, only=[i.index for i in missing]),
                reply_schema(missing, holistic=False),
                budget(len(missing), holistic=False),
            )
        except ProviderError as exc:
            notes.append(
                f"the repair pass for {_count(len(missing), 'skipped item')} failed: {exc}"
            )
        else:
            repaired = _read(second, missing)
            labels.update(repaired)
            notes.append(
                f"a repair pass asked again for {_count(len(missing), 'skipped item')} and "
                f"got {len(repaired)}"
            )
    return _block(items, labels, holistic, "; ".join(notes), holistic_reason)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _block(
    items: Sequence[Item],
    labels: Mapping[int, Label],
    holistic: float | None,
    note: str,
    holistic_reason: str = "",
) -> dict[str, Any]:
    element = per_element(label.label for label in labels.values())
    score = combine(element, holistic if element is not None else None)
    unclassified = [i.index for i in items if i.index not in labels]
    if element is None:
        none = f"the judge classified none of the {_count(len(items), 'item')}" if items else ""
        reason = "; ".join(p for p in (note, none) if p)
        holistic_shown = None
    else:
        parts = [
            f"{len(labels)} of {_count(len(items), 'item')} classified",
        ]
        if unclassified:
            parts.append(f"{len(unclassified)} unclassified and left out of the score")
        if holistic is None:
            parts.append(f"score = per-element {element:.2f} (the judge gave no holistic score)")
        else:
            parts.append(
                f"score = {PER_ELEMENT_SHARE} × {element:.2f} per-element + "
                f"{HOLISTIC_SHARE} × {holistic:.2f} holistic = {score:.2f}"
            )
        if note:
            parts.append(note)
        if holistic_reason.strip():
            parts.append(f"judge: {holistic_reason.strip()}")
        reason = "; ".join(parts)
        holistic_shown = holistic
    return {
        "severity": severity(score),
        "score": _round(score),
        "per_element": _round(element),
        "holistic": holistic_shown,
        "items": [
            {
                "kind": item.kind,
                "index": item.index,
                "test_id": item.test_id,
                "text": item.text,
                "label": labels[item.index].label if item.index in labels else UNCLASSIFIED,
                "reasoning": labels[item.index].reasoning if item.index in labels else "",
            }
            for item in items
        ],
        "reason": reason,
        "unclassified": unclassified,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
