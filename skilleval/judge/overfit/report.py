"""Scoring the labels, and the overfitting report the run and ``skilleval overfit`` show."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from skilleval.errors import ProviderError, UsageError
from skilleval.judge.overfit.call import budget, messages, read_holistic, read_labels, reply_schema
from skilleval.judge.overfit.items import (
    HIGH,
    HOLISTIC_SHARE,
    MODERATE,
    PER_ELEMENT_SHARE,
    UNCLASSIFIED,
    WEIGHTS,
    Item,
    Label,
    collect_items,
)
from skilleval.suite.model import Suite

if TYPE_CHECKING:
    from skilleval.api import Judge


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
    labels = read_labels(first, items)
    holistic, holistic_reason = read_holistic(first)
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
            repaired = read_labels(second, missing)
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
