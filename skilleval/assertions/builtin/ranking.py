"""promptfoo's ``max-score``: of a test's outputs, the one whose other assertions score best.

It compares outputs as ``select-best`` does (the same test under each of the suite's
prompts, in one arm and trial), with no judge: each output's score is the average (or, with
``method: sum``, the sum) of its other assertions' scores, each weighted by ``weights`` (by
type, default 1); ``select-best`` and ``max-score`` themselves do not count, an ``error``
counts 0, and ``not-`` is applied first. The highest score passes and the others fail; the
first output wins a tie. With ``threshold``, no output passes unless the highest score
reaches it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from skilleval.api import Check, Verdict, assertion

_VALUE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "method": {"enum": ["average", "sum"]},
        "weights": {"type": "object", "additionalProperties": {"type": "number"}},
        "threshold": {"type": "number"},
    },
    "additionalProperties": False,
}
LEFT_OUT = frozenset({"max-score", "select-best"})
"""The types whose scores an output's aggregate leaves out."""


def aggregate(
    results: Sequence[tuple[str, float | None]], weights: Mapping[str, float], method: str
) -> float:
    """One output's score from its assertions' ``(type, score)``, as promptfoo adds them up."""
    total = sum((score or 0.0) * float(weights.get(kind, 1)) for kind, score in results)
    weight = sum(float(weights.get(kind, 1)) for kind, _ in results)
    if method == "sum":
        return total
    return total / weight if weight > 0 else 0.0


@assertion("max-score", value=_VALUE, value_required=False, compares=True)
def max_score(checks: Sequence[Check]) -> list[Verdict]:
    """The output whose other assertions score highest passes; the others fail."""
    count = len(checks)
    if count < 2:
        return [
            Verdict.errored(
                "max-score needs at least two outputs of this test to compare; list two or "
                "more `prompts:`"
            )
        ] * count
    value = checks[0].value if isinstance(checks[0].value, Mapping) else {}
    method = str(value.get("method", "average"))
    weights = value.get("weights") or {}
    threshold = value.get("threshold")
    scores: list[float] = []
    for check in checks:
        others = [r for r in check.results or () if r[0].removeprefix("not-") not in LEFT_OUT]
        if not others:
            return [
                Verdict.errored(
                    "max-score needs at least one other assertion (besides max-score and"
                    " select-best) to add up"
                )
            ] * count
        scores.append(aggregate(others, weights, method))
    best = max(scores)
    winner = scores.index(best)
    reached = threshold is None or best >= float(threshold)
    out = []
    for i, score in enumerate(scores):
        if i == winner and reached:
            out.append(Verdict(True, f"output {i} of {count} scored highest ({score:.3f})", 1.0))
        elif score == best and not reached:
            out.append(
                Verdict(False, f"output {i} scored {score:.3f}, below threshold {threshold}", 0.0)
            )
        else:
            out.append(
                Verdict(False, f"output {i} not selected ({score:.3f}; best {best:.3f})", 0.0)
            )
    return out
