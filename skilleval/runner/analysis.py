"""The questions a skill eval answers, computed from records: does it trigger, does it help,
is the help real, and is it reliable. All arithmetic lives in :mod:`skilleval.stats`; this
module turns its answers into the typed blocks of :mod:`skilleval.results.model`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from skilleval import stats
from skilleval.results.codec import decode
from skilleval.results.model import (
    Auroc,
    CalibratedDecision,
    Lift,
    LiftRow,
    Reliability,
    RouterFitness,
    Trigger,
    TriggerCalibration,
)
from skilleval.results.records import Record
from skilleval.runner.arms import CONTENT_FREE, NONE, ContentFree, TriggerResult, skill_margin
from skilleval.suite.model import Suite, TestCase


def lift_tests(tests: Sequence[TestCase]) -> list[TestCase]:
    """The tests lift is computed over: those meant to trigger (all, if none says)."""
    marked = [t for t in tests if t.should_trigger is not None]
    if not marked:
        return list(tests)
    return [t for t in tests if t.should_trigger]


def votes(records: Sequence[Record], test_id: str, arm: str) -> bool | None:
    """One vote per test and arm: the majority of its scored trials (errors are left out)."""
    outcomes = [
        r.status == "pass"
        for r in records
        if r.test_id == test_id and r.arm == arm and r.status != "error"
    ]
    if not outcomes:
        return None
    return stats.majority(outcomes)


def scored(records: Sequence[Record], test_id: str, arm: str) -> tuple[int, int]:
    """Scored trials and passes for one test and arm (errors are left out)."""
    outcomes = [
        r.status == "pass"
        for r in records
        if r.test_id == test_id and r.arm == arm and r.status != "error"
    ]
    return len(outcomes), sum(outcomes)


def lift(suite: Suite, tests: Sequence[TestCase], records: Sequence[Record]) -> Lift | None:
    """Paired ON/OFF analysis over the tests meant to trigger, or None without both arms.

    The test runs on each test's pass rates (:func:`stats.lift_from_trials`), so a test is
    compared whenever both arms have a scored trial, even when a majority vote would tie."""
    if not {"on", "off"} <= set(suite.arms):
        return None
    rows: list[LiftRow] = []
    counts: list[tuple[tuple[int, int], tuple[int, int]]] = []
    excluded: list[str] = []
    for test in lift_tests(tests):
        on, off = votes(records, test.id, "on"), votes(records, test.id, "off")
        rows.append(LiftRow(test.id, on, off))
        pair = scored(records, test.id, "on"), scored(records, test.id, "off")
        if pair[0][0] and pair[1][0]:
            counts.append(pair)
        else:
            excluded.append(test.id)
    result = stats.lift_from_trials(
        counts, alpha=suite.lift.alpha, min_lift=suite.lift.min_lift, sidedness=suite.lift.sidedness
    )
    # The estimator's own rounding and exact fractions are kept as it reports them.
    return replace(
        decode(
            Lift,
            {
                **result.to_json(),
                "tests": [],
                "excluded": excluded,
            },
        ),
        tests=tuple(rows),
    )


def trigger(
    suite: Suite,
    results: Sequence[TriggerResult],
    content_free: ContentFree | None = None,
    router: RouterFitness | None = None,
    *,
    scores: bool = True,
) -> Trigger | None:
    """Trigger accuracy, precision, recall and F1 for the skill, plus a routing confusion matrix,
    the AUROC of the skill margin, the calibrated figures when ``content_free`` is given, and
    the router's fitness when it is known.

    ``scores``: whether the router's provider declares that it returns scores
    (``Capabilities.scores``), which says why a router that gave none gave none.
    """
    if suite.skill is None:
        return None
    name = suite.skill.name
    scored = [r for r in results if r.expected is not None]
    if not scored:
        return None
    decided = [r for r in scored if r.chosen is not None]
    metrics = stats.trigger_metrics([(bool(r.expected), r.chosen == name) for r in decided])
    expected_labels = [name if r.expected else NONE for r in decided]
    matrix = stats.confusion_matrix(
        list(zip(expected_labels, [r.chosen or NONE for r in decided], strict=True)),
        labels=[*sorted({name, *(s.name for s in suite.distractors)}), NONE],
    )
    return replace(
        decode(
            Trigger,
            {
                **metrics.to_json(),
                "labels": list(matrix.labels),
                "matrix": [list(row) for row in matrix.counts],
                "tests": [],
                "misrouted": [r.test_id for r in decided if (r.chosen == name) != bool(r.expected)],
                "errors": [r.test_id for r in scored if r.chosen is None],
            },
        ),
        tests=tuple(r.outcome(name) for r in scored),
        auroc=margin_auroc(
            [(r.test_id, bool(r.expected), r.skill_margin(name)) for r in scored],
            errors=_errors(scored),
            declared=scores,
        ),
        calibrated=None
        if content_free is None
        else calibrated(name, scored, content_free, declared=scores),
        router=router,
        rule=suite.trigger.rule(),
    )


def _errors(results: Sequence[TriggerResult]) -> dict[str, str]:
    """Each routing call that ended in an error, by test id."""
    return {r.test_id: r.error for r in results if r.error is not None}


def no_scores_reason(errors: Mapping[str, str], calls: int, *, declared: bool = False) -> str:
    """Why no routing call gave scores: the calls failed (say so, with the first message), the
    provider declares none (``Capabilities.scores``), or its replies carried none though it
    declares them."""
    if errors:
        first = next(iter(errors.values()))
        return (
            f"the router gave no scores: {len(errors)} of {calls} routing calls ended in an "
            f"error (first: {first})"
        )
    if declared:
        return "the router gave no scores (its replies carried none)"
    return "the router gave no scores (its provider exposes no log-probabilities)"


def margin_auroc(
    rows: Sequence[tuple[str, bool, float | None]],
    errors: Mapping[str, str] | None = None,
    *,
    declared: bool = False,
) -> Auroc:
    """The AUROC of ``(test_id, should_trigger, margin)`` rows; rows with no margin are left out.

    ``errors`` holds the routing calls that failed, by test id, so that the reason given for
    having no scores is the true one.
    """
    positives = [m for _, expected, m in rows if expected and m is not None]
    negatives = [m for _, expected, m in rows if not expected and m is not None]
    unscored = tuple(test_id for test_id, _, m in rows if m is None)
    estimate = stats.auroc(positives, negatives)
    shown = estimate.to_json()
    reason = None
    if estimate.value is None:
        if len(unscored) == len(rows):
            reason = no_scores_reason(errors or {}, len(rows), declared=declared)
        else:
            missing = "should_trigger: true" if not positives else "should_trigger: false"
            reason = f"no scored test with {missing}, so there is nothing to rank against"
    return Auroc(
        value=shown["value"],
        ci95=None if shown["ci95"] is None else (shown["ci95"][0], shown["ci95"][1]),
        positives=estimate.positives,
        negatives=estimate.negatives,
        unscored=unscored,
        reason=reason,
    )


def calibrated(
    skill: str,
    scored: Sequence[TriggerResult],
    content_free: ContentFree,
    *,
    declared: bool = False,
) -> TriggerCalibration:
    """Every decision re-taken on scores minus the content-free scores (contextual calibration)."""
    decisions: list[CalibratedDecision] = []
    rows: list[tuple[str, bool, float | None]] = []
    reason = content_free.error
    for r in scored:
        scores = None if r.error is not None else content_free.calibrated(r.scores)
        margin = skill_margin(scores, skill)
        rows.append((r.test_id, bool(r.expected), margin))
        if scores is not None and margin is not None:
            chosen = max(sorted(scores), key=lambda k: scores[k])
            decisions.append(CalibratedDecision(r.test_id, chosen, round(margin, 6)))
    if reason is None and not decisions:
        reason = no_scores_reason(_errors(scored), len(scored), declared=declared)
    expected = {r.test_id: bool(r.expected) for r in scored}
    metrics = stats.trigger_metrics([(expected[d.test_id], d.chosen == skill) for d in decisions])
    bias = None if content_free.scores is None else skill_margin(content_free.scores, skill)

    def rate(x: float | None) -> float | None:
        return None if x is None else round(x, 6)

    return TriggerCalibration(
        requests=CONTENT_FREE,
        content_free=None
        if content_free.scores is None
        else {k: round(v, 6) for k, v in sorted(content_free.scores.items())},
        margin=None if bias is None else round(bias, 6),
        tp=metrics.tp,
        fp=metrics.fp,
        tn=metrics.tn,
        fn=metrics.fn,
        n=metrics.n,
        accuracy=rate(metrics.accuracy),
        precision=rate(metrics.precision),
        recall=rate(metrics.recall),
        f1=rate(metrics.f1),
        auroc=margin_auroc(rows, errors=_errors(scored), declared=declared),
        tests=tuple(decisions),
        misrouted=tuple(d.test_id for d in decisions if (d.chosen == skill) != expected[d.test_id]),
        reason=reason,
    )


def reliability(suite: Suite, records: Sequence[Record]) -> dict[str, Reliability] | None:
    """pass@k and pass^k per arm, when tests ran more than one trial."""
    if suite.trials < 2:
        return None
    out: dict[str, Reliability] = {}
    for arm in suite.arms:
        per_test: dict[str, tuple[int, int]] = {}
        for r in records:
            if r.arm != arm:  # an error counts as a trial that did not pass
                continue
            n, c = per_test.get(r.test_id, (0, 0))
            per_test[r.test_id] = (n + 1, c + (r.status == "pass"))
        if per_test:
            out[arm] = decode(Reliability, stats.reliability(per_test).to_json())
    return out or None
