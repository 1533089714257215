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

from skilleval.judge.overfit.call import budget, messages, read_holistic, read_labels, reply_schema
from skilleval.judge.overfit.items import (
    ASSERTION_LABELS,
    BLOCK_SCHEMA,
    CRITERION_LABELS,
    FLAGGED,
    HIGH,
    HOLISTIC_SCORES,
    HOLISTIC_SHARE,
    MODERATE,
    PER_ELEMENT_SHARE,
    UNCLASSIFIED,
    WEIGHTS,
    Item,
    Label,
    collect_items,
    describe,
)
from skilleval.judge.overfit.report import combine, overfit_report, per_element, severity

__all__ = [
    "ASSERTION_LABELS",
    "BLOCK_SCHEMA",
    "CRITERION_LABELS",
    "FLAGGED",
    "HIGH",
    "HOLISTIC_SCORES",
    "HOLISTIC_SHARE",
    "MODERATE",
    "PER_ELEMENT_SHARE",
    "UNCLASSIFIED",
    "WEIGHTS",
    "Item",
    "Label",
    "budget",
    "collect_items",
    "combine",
    "describe",
    "messages",
    "overfit_report",
    "per_element",
    "read_holistic",
    "read_labels",
    "reply_schema",
    "severity",
]
