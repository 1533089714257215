"""The improvement report as JSON: versioned, in the results document's style.

``improve.json`` holds only what the inputs decide (the split, every candidate with its diff
and figures on the three sets, each round's confirmation test, the decision, the planned
requests), so two runs on the same suite, candidates and seed write it byte for byte alike.
What depends on the machine and the cache (model calls made, cache hits, tokens, seconds)
goes to ``cost.json`` beside it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from skilleval.improve.loop import Outcome, Settings
from skilleval.improve.rule import round_alpha
from skilleval.improve.split import Split
from skilleval.suite.model import Suite
from skilleval.version import __version__

REPORT_VERSION = 1
"""The report format's version; readers refuse versions they do not know."""

REPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "skilleval improve report",
    "type": "object",
    "required": [
        "version",
        "kind",
        "skilleval",
        "suite",
        "skill",
        "settings",
        "split",
        "sizes",
        "rounds",
        "candidates",
        "decision",
        "cost",
    ],
    "properties": {
        "version": {"const": REPORT_VERSION},
        "kind": {"const": "improve"},
        "skilleval": {"type": "string"},
        "suite": {"type": "string"},
        "skill": {"type": "string"},
        "settings": {"type": "object"},
        "split": {"type": "object", "required": ["seed", "sizes", "train", "selection", "confirm"]},
        "sizes": {"type": "object"},
        "rounds": {"type": "array", "items": {"type": "object", "required": ["round", "alpha"]}},
        "candidates": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "source", "part", "diff", "figures", "status", "reason"],
            },
        },
        "decision": {
            "type": "object",
            "required": ["accepted", "edits", "summary", "interval"],
        },
        "cost": {"type": "object", "required": ["planned_requests"]},
    },
}


def _summary(outcome: Outcome, sizes: Mapping[str, Any]) -> str:
    if outcome.accepted:
        return f"accepted: {', '.join(outcome.accepted)}"
    last = next((r["reason"] for r in reversed(outcome.rounds) if r["reason"]), "")
    text = "no edit accepted" + (f": {last}" if last else "")
    needed = sizes.get("confirmation_tests_needed")
    text += (
        f". A decision at α = {sizes['alpha']:.4g} needs at least "
        f"{sizes['smallest_decidable']} confirmation tests that the edit changes"
    )
    if needed is not None and needed > sizes["confirmation_tests"]:
        text += (
            f"; 80% power against an edit that wins 80% of the tests it changes takes "
            f"{needed} confirmation tests (this split has {sizes['confirmation_tests']}), "
            f"a suite of about {sizes['suite_tests_needed']} tests"
        )
    return text


def _interval(outcome: Outcome) -> list[float] | None:
    for record in reversed(outcome.rounds):
        confirmation = record.get("confirmation")
        if confirmation is not None:
            ci = confirmation["test"]["ci95"]
            return None if ci is None else list(ci)
    return None


def build_report(
    suite: Suite,
    split: Split,
    settings: Settings,
    outcome: Outcome,
    sizes: Mapping[str, Any],
    *,
    seed: int,
    proposer: str | None,
    candidates_folder: str | None,
    grow: str | None,
    written: bool,
) -> dict[str, Any]:
    """The report document."""
    assert suite.skill is not None
    accepted = bool(outcome.accepted)
    return {
        "version": REPORT_VERSION,
        "kind": "improve",
        "skilleval": __version__,
        "suite": suite.display,
        "skill": suite.skill.display,
        "settings": {
            "seed": seed,
            "rounds": settings.rounds,
            "max_candidates": settings.max_candidates,
            "max_calls": settings.max_calls,
            "alpha": settings.alpha,
            "alpha_per_round": round_alpha(settings.alpha, settings.rounds),
            "correction": "bonferroni over rounds",
            "test": "exact paired, one-sided (sign test; permutation test on pass rates "
            "with several trials)",
            "min_lift": settings.min_lift,
            "trials": suite.trials,
            "proposer": proposer,
            "candidates": candidates_folder,
            "grow": grow,
        },
        "split": split.to_json(),
        "sizes": dict(sizes),
        "rounds": outcome.rounds,
        "candidates": outcome.candidates,
        "decision": {
            "accepted": accepted,
            "edits": list(outcome.accepted),
            "summary": _summary(outcome, sizes),
            "interval": _interval(outcome),
            "improved_file": "SKILL.improved.md" if accepted else None,
            "written": written and accepted,
        },
        "cost": {
            "planned_requests": outcome.planned_requests,
            "max_calls": settings.max_calls,
            "stopped": outcome.stopped or None,
        },
    }


def dumps(document: Mapping[str, Any]) -> str:
    """The document as it is written: indented, keys in the order built, one final newline."""
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"
