"""Custom assertion types for the plugins example: drop a file like this into a folder."""

from __future__ import annotations

import re

from skilleval import Check, Verdict, assertion

APOLOGIES = re.compile(r"\b(sorry|apologi[sz]e|apologies)\b", re.IGNORECASE)


@assertion("no-apology")
def no_apology(check: Check) -> Verdict:
    """The output does not apologise."""
    found = APOLOGIES.search(check.output)
    if found:
        return Verdict(passed=False, reason=f"output apologises: {found.group(0)!r}")
    return Verdict(passed=True, reason="output does not apologise")


@assertion(
    "sentence-count",
    value={
        "type": "object",
        "properties": {"max": {"type": "integer", "minimum": 1}},
        "required": ["max"],
        "additionalProperties": False,
    },
)
def sentence_count(check: Check) -> Verdict:
    """The output has at most `max` sentences."""
    sentences = [s for s in re.split(r"[.!?]+", check.output) if s.strip()]
    limit = check.value["max"]
    return Verdict(
        passed=len(sentences) <= limit,
        reason=f"{len(sentences)} sentence(s), limit {limit}",
        score=min(1.0, limit / max(1, len(sentences))),
    )
