"""The aggregate blocks of a run: per-arm summaries, lift, trigger, reliability, overfitting.

Each is computed from the records by :mod:`skilleval.runner.analysis` (the arithmetic lives in
:mod:`skilleval.stats`); :mod:`skilleval.results.model` assembles them into the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Literal

from skilleval.results.codec import ARM, COUNT, OMIT_EMPTY, RATE, meta
from skilleval.results.records import Tier, TriggerOutcome
from skilleval.util.frozen import frozen

LiftVerdict = Literal["helps", "hurts", "no evidence", "underpowered"]
Severity = Literal["Low", "Moderate", "High", "Unknown"]


@frozen
class Tally:
    """Passes, fails and errors; errors count in neither side of the rate."""

    passed: int = field(metadata=meta(ref=COUNT))
    failed: int = field(metadata=meta(ref=COUNT))
    errors: int = field(metadata=meta(ref=COUNT))
    total: int = field(metadata=meta(ref=COUNT))
    pass_rate: float | None = field(
        metadata=meta("passed / (passed + failed): errors count in neither.", ref=RATE)
    )


@frozen
class ArmSummary:
    """One arm's figures, overall and per tier."""

    passed: int = field(metadata=meta(ref=COUNT))
    failed: int = field(metadata=meta(ref=COUNT))
    errors: int = field(metadata=meta(ref=COUNT))
    total: int = field(metadata=meta(ref=COUNT))
    pass_rate: float | None = field(metadata=meta(ref=RATE))
    tiers: Mapping[str, Tally] = field(metadata=meta("deterministic and model, kept apart."))
    metrics: Mapping[str, float] = field(metadata=meta("Mean of each named metric."))

    def tier(self, name: Tier) -> Tally:
        """One tier's tally; an empty one when no assertion of that tier ran."""
        return self.tiers.get(name) or Tally(0, 0, 0, 0, None)


@frozen
class TestRow:
    """One test under one arm: how its trials went."""

    __test__ = False  # not a pytest class

    test_id: str
    arm: str = field(metadata=meta(ref=ARM))
    passed: int = field(metadata=meta(ref=COUNT))
    failed: int = field(metadata=meta(ref=COUNT))
    errors: int = field(metadata=meta(ref=COUNT))
    trials: int = field(metadata=meta(ref=COUNT))


@frozen
class Summary:
    arms: Mapping[str, ArmSummary] = field(metadata=meta(keys=ARM))
    tests: tuple[TestRow, ...] = field(metadata=meta("One row per test × arm."))
    errors: int = field(metadata=meta(ref=COUNT))


@frozen
class LiftRow:
    test_id: str
    on: bool | None = field(metadata=meta("Majority vote over ON trials; null for an even split."))
    off: bool | None


@frozen
class Lift:
    """Does the skill help? The paired ON/OFF comparison over the tests meant to trigger.

    a: both pass, b: only ON passes, c: only OFF passes, d: both fail (with several trials per
    side: equal pass rates above 0, ON rate higher, OFF rate higher, both rates 0).
    """

    n: int = field(metadata=meta("Distinct tests compared.", ref=COUNT))
    a: int = field(metadata=meta(ref=COUNT))
    b: int = field(metadata=meta(ref=COUNT))
    c: int = field(metadata=meta(ref=COUNT))
    d: int = field(metadata=meta(ref=COUNT))
    lift: float | None = field(
        metadata=meta(
            "(b - c) / n. With one trial per side, the ON pass rate minus the OFF pass rate; "
            "with several, the share of tests whose ON pass rate is higher minus the share "
            "whose OFF pass rate is higher.",
            minimum=-1,
            maximum=1,
        )
    )
    lift_exact: str | None = field(metadata=meta(pattern="^-?[0-9]+/[0-9]+$"))
    p_two_sided: float = field(metadata=meta(minimum=0, maximum=1))
    p_one_sided: float = field(metadata=meta(minimum=0, maximum=1))
    p_one_sided_reverse: float = field(metadata=meta(minimum=0, maximum=1))
    ci95: tuple[float, float] | None = field(
        metadata=meta("Newcombe 95% interval for the lift; null when no test was compared.")
    )
    alpha: float = field(metadata=meta(exclusiveMinimum=0, exclusiveMaximum=1))
    min_lift: float
    min_tests: int = field(metadata=meta(ref=COUNT))
    sidedness: Literal["two-sided", "one-sided"]
    verdict: LiftVerdict
    reason: str
    tests: tuple[LiftRow, ...]
    excluded: tuple[str, ...] = field(
        metadata=meta(
            "Tests left out of the comparison because a side had no scored trial (only errors)."
        )
    )


@frozen
class Auroc:
    """How well a router's skill margin ranks the tests: the threshold-free view of triggering.

    The chance that a test meant to trigger has a higher margin than one that is not (ties
    half): 0.5 is a coin, 1 a perfect ranking, whatever the threshold the choice used.
    """

    value: float | None = field(
        metadata=meta("Mann–Whitney U / (positives × negatives); null when a class is empty.")
    )
    ci95: tuple[float, float] | None = field(
        metadata=meta("Newcombe's (2006, Method 5) 95% interval; null with the value.")
    )
    positives: int = field(metadata=meta("Tests meant to trigger that have a margin.", ref=COUNT))
    negatives: int = field(
        metadata=meta("Tests not meant to trigger that have a margin.", ref=COUNT)
    )
    unscored: tuple[str, ...] = field(
        metadata=meta("Tests left out: the decision failed or the router gave no scores.")
    )
    reason: str | None = field(metadata=meta("Why the value is null."))


@frozen
class CalibratedDecision:
    """One test's decision after contextual calibration."""

    test_id: str
    chosen: str = field(metadata=meta("The best option once content-free scores are subtracted."))
    margin: float = field(metadata=meta("The calibrated skill margin.", digits=6))


@frozen
class Confusion:
    """A yes-or-no decision against what was wanted, counted over tests: did the skill fire,
    and should it have. Shared by the trigger block and its calibrated figures."""

    tp: int = field(metadata=meta(ref=COUNT))
    fp: int = field(metadata=meta(ref=COUNT))
    tn: int = field(metadata=meta(ref=COUNT))
    fn: int = field(metadata=meta(ref=COUNT))
    n: int = field(metadata=meta(ref=COUNT))
    accuracy: float | None = field(metadata=meta(ref=RATE))
    precision: float | None = field(metadata=meta(ref=RATE))
    recall: float | None = field(metadata=meta(ref=RATE))
    f1: float | None = field(metadata=meta(ref=RATE))


@frozen
class TriggerCalibration(Confusion):
    """Contextual calibration: each option's score minus its score for content-free requests.

    Reported beside the raw figures, never in their place: the gate reads the raw ones.
    """

    requests: tuple[str, ...] = field(metadata=meta("The content-free requests routed."))
    content_free: Mapping[str, float] | None = field(
        metadata=meta("Per option: log of the mean probability over the content-free requests.")
    )
    margin: float | None = field(
        metadata=meta("The skill margin of the content-free requests: the router's bias.")
    )
    auroc: Auroc
    tests: tuple[CalibratedDecision, ...]
    misrouted: tuple[str, ...]
    reason: str | None = field(
        metadata=meta("Why calibration could not be applied (then every count is 0).")
    )


@frozen
class RouterFitness:
    """The run's router as ``skilleval router-check`` measured it, when it did."""

    checked: bool = field(metadata=meta("Whether a router check of this model was found."))
    qualified: bool | None = field(
        metadata=meta(
            "False when the accuracy interval includes the chance level or the AUROC "
            "interval includes 0.5; null when not checked."
        )
    )
    reasons: tuple[str, ...] = field(metadata=meta("Why the router is unqualified."))
    accuracy: float | None = field(metadata=meta(ref=RATE))
    accuracy_ci95: tuple[float, float] | None
    chance: float | None = field(
        metadata=meta("The accuracy of always giving the commonest label.", ref=RATE)
    )
    auroc: float | None = field(metadata=meta(ref=RATE))
    auroc_ci95: tuple[float, float] | None
    cases: int = field(metadata=meta(ref=COUNT))
    checked_at: str | None = field(metadata=meta("When the check ran (UTC, ISO 8601)."))


@frozen
class Trigger(Confusion):
    """Did the skill fire when it should, and only then?"""

    labels: tuple[str, ...] = field(metadata=meta("Row and column order of the matrix."))
    matrix: tuple[tuple[int, ...], ...] = field(
        metadata=meta("Counts: rows are what was wanted, columns what was chosen.")
    )
    tests: tuple[TriggerOutcome, ...]
    misrouted: tuple[str, ...] = field(metadata=meta("Tests whose trigger decision was wrong."))
    errors: tuple[str, ...] = field(
        metadata=meta("Tests whose trigger decision could not be made.")
    )
    auroc: Auroc | None = field(
        default=None,
        metadata=meta("The AUROC of the skill margin over should_trigger.", omit=OMIT_EMPTY),
    )
    calibrated: TriggerCalibration | None = field(
        default=None,
        metadata=meta(
            "With `trigger: {calibrate: true}`: the calibrated figures.", omit=OMIT_EMPTY
        ),
    )
    router: RouterFitness | None = field(
        default=None,
        metadata=meta("The router's fitness, from a cached `router-check`.", omit=OMIT_EMPTY),
    )
    rule: str = field(
        default="greedy",
        metadata=meta(
            "Which rule decided each test's trigger: `greedy` (one constrained call, the best "
            "option) or `sampled N runs, rate >= R` (`trigger: {runs: N, rate: R}` in "
            "distribution mode: skill-creator's rule)."
        ),
    )


@frozen
class CurvePoint:
    k: int = field(metadata=meta(minimum=1))
    value: float = field(metadata=meta(minimum=0, maximum=1))
    exact: str = field(metadata=meta(pattern="^[0-9]+/[0-9]+$"))


@frozen
class Fraction:
    value: float = field(metadata=meta(minimum=0, maximum=1))
    exact: str = field(metadata=meta(pattern="^[0-9]+/[0-9]+$"))


@frozen
class TestReliability:
    __test__ = False  # not a pytest class

    name: str
    n: int = field(metadata=meta("Trials run.", minimum=1))
    c: int = field(metadata=meta("Trials passed.", ref=COUNT))
    flaky: bool
    pass_at_k: tuple[CurvePoint, ...]
    pass_hat_k: tuple[CurvePoint, ...]


@frozen
class ReliabilityPoint:
    k: int = field(metadata=meta(minimum=1))
    pass_at_k: Fraction | None
    pass_hat_k: Fraction | None
    tests_counted: int = field(metadata=meta(ref=COUNT))
    tests_skipped: int = field(metadata=meta(ref=COUNT))


@frozen
class Reliability:
    """pass@k and pass^k for one arm."""

    tests: tuple[TestReliability, ...]
    aggregate: tuple[ReliabilityPoint, ...]
    flaky: tuple[str, ...]


@frozen
class OverfitItem:
    kind: Literal["rubric", "statement", "assertion"]
    index: int = field(metadata=meta(minimum=1))
    test_id: str
    text: str
    label: str
    reasoning: str


@frozen
class Overfit:
    """The overfitting judge's report on the eval itself: informational, never a gate."""

    severity: Severity
    score: float | None = field(metadata=meta(minimum=0, maximum=1))
    per_element: float | None = field(metadata=meta(minimum=0, maximum=1))
    holistic: float | None
    items: tuple[OverfitItem, ...]
    reason: str
    unclassified: tuple[int, ...]
