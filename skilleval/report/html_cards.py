"""The HTML report's cards, as typed views: the model and judge facts, each arm's pass-rate
meters, the triggering card and the overfitting card.

Each view holds exactly what ``templates/report.html.j2`` shows, computed and formatted here
(the template reads them by attribute); the test table's rows are in
:mod:`skilleval.report.html_rows`.
"""

from __future__ import annotations

from collections.abc import Mapping

from skilleval.report import trigger_view, view
from skilleval.report.html_rows import decision_label
from skilleval.results.blocks import OverfitItem
from skilleval.results.model import (
    ArmSummary,
    JudgeInfo,
    ModelError,
    ModelInfo,
    Overfit,
    Run,
    Tally,
    Trigger,
)
from skilleval.results.records import TriggerOutcome
from skilleval.util.frozen import frozen

__all__ = [
    "ArmCard",
    "JudgeCard",
    "MatrixCell",
    "MatrixRow",
    "Meter",
    "ModelCard",
    "OverfitCard",
    "RouterLine",
    "Sentence",
    "TriggerCard",
    "TriggerRow",
    "arm_cards",
]

_SEVERITY_TONE: Mapping[str, view.Tone] = {
    "Low": "good",
    "Moderate": "warn",
    "High": "bad",
    "Unknown": "neutral",
}


@frozen
class ModelCard:
    """A model as the facts show it: its label, kind, digest, file and size, or why it is
    unknown."""

    label: str
    kind: str | None
    sha256: str | None
    short_sha: str | None
    file: str | None
    size: str | None
    """In MiB, formatted; None when the size is not recorded."""
    error: str | None

    @classmethod
    def of(cls, identity: ModelInfo | ModelError | None) -> ModelCard:
        info = identity if isinstance(identity, ModelInfo) else None
        size = info.size if info is not None else None
        return cls(
            label=view.model_label(identity) if identity else "unknown (not recorded)",
            kind=info.kind if info is not None else None,
            sha256=info.sha256 if info is not None else None,
            short_sha=view.short_digest(info.sha256 if info is not None else None),
            file=info.file if info is not None else None,
            size=f"{size / 2**20:.1f} MiB" if isinstance(size, int) else None,
            error=identity.error if identity is not None else None,
        )


@frozen
class JudgeCard:
    """The judge as the facts show it: its model, whether it decodes greedily, its seed."""

    model: ModelCard
    greedy: bool
    seed: int | None
    same_as_generator: bool | None

    @classmethod
    def of(cls, judge: JudgeInfo | None) -> JudgeCard | None:
        if judge is None:
            return None
        decoding = judge.decoding
        greedy = (
            judge.greedy if judge.greedy is not None else (decoding.greedy if decoding else None)
        )
        return cls(
            model=ModelCard.of(judge.model),
            greedy=greedy is not False,
            seed=judge.seed if judge.seed is not None else (decoding.seed if decoding else None),
            same_as_generator=judge.same_as_generator,
        )


@frozen
class Meter:
    """One pass rate with its counts and the bar that draws it."""

    name: str
    unqualified: bool
    rate: float | None
    passed: int
    failed: int
    errors: int
    judged: int
    width: float
    """The bar's width in percent."""
    tone: view.Tone

    @classmethod
    def of(cls, name: str, tally: Tally | ArmSummary, *, unqualified: bool = False) -> Meter:
        rate = tally.pass_rate
        return cls(
            name=name,
            unqualified=unqualified,
            rate=rate,
            passed=tally.passed,
            failed=tally.failed,
            errors=tally.errors,
            judged=tally.passed + tally.failed,
            width=0.0 if rate is None else round(rate * 100, 2),
            tone=view.rate_tone(rate),
        )


@frozen
class ArmCard:
    """One arm's card: its overall meter, one meter per tier and its derived metrics."""

    arm: str
    primary: bool
    overall: Meter
    tiers: tuple[Meter, ...]
    metrics: Mapping[str, float]


def arm_cards(run: Run) -> list[ArmCard]:
    """A card for each arm that has a summary, in the run's arm order."""
    arms = run.summary.arms
    primary = view.primary_arm(run)
    unqualified = view.judge_unqualified(run)
    cards = []
    for arm in view.arms(run):
        s = arms.get(arm)
        if s is None:
            continue
        tiers = tuple(
            Meter.of(t, tally, unqualified=t == "model" and unqualified)
            for t, tally in view.tier_cells(s).items()
        )
        cards.append(ArmCard(arm, arm == primary, Meter.of("tests", s), tiers, dict(s.metrics)))
    return cards


# --------------------------------------------------------------------------- trigger


@frozen
class TriggerRow:
    """One test's routing decision, as the triggering card's table shows it."""

    test_id: str
    chosen: str | None
    correct: bool | None
    scores: Mapping[str, float] | None
    margin: float | None
    skill_margin: float | None
    error: str | None
    expected_label: str
    chosen_label: str

    @classmethod
    def of(cls, t: TriggerOutcome, skill: str | None) -> TriggerRow:
        return cls(
            test_id=t.test_id,
            chosen=t.chosen,
            correct=t.correct,
            scores=t.scores,
            margin=t.margin,
            skill_margin=t.skill_margin,
            error=t.error,
            expected_label=decision_label(t.expected, skill),
            chosen_label=decision_label(t.chosen, skill),
        )


@frozen
class MatrixCell:
    """One cell of the routing confusion matrix, shaded by its share of the row."""

    count: int
    alpha: float
    diag: bool


@frozen
class MatrixRow:
    """One expected decision's row of the routing confusion matrix."""

    label: str
    cells: tuple[MatrixCell, ...]
    total: int


@frozen
class Sentence:
    """A figure said in words, as the other reports print it."""

    text: str


@frozen
class RouterLine:
    """The router's kept fitness verdict: a badge and its sentence."""

    label: str
    tone: view.Tone
    text: str


@frozen
class TriggerCard:
    """The triggering card: the figures (``data``), the confusion matrix, each test's
    decision and the sentences for the AUROC, the calibrated figures and the router."""

    data: Trigger
    labels: tuple[str, ...]
    grid: tuple[MatrixRow, ...]
    tests: tuple[TriggerRow, ...]
    misrouted: tuple[str, ...]
    auroc: Sentence | None
    calibrated: Sentence | None
    router: RouterLine | None

    @classmethod
    def of(cls, trigger: Trigger | None, skill: str | None) -> TriggerCard | None:
        if trigger is None:
            return None
        router = None
        if trigger.router is not None:
            status = trigger_view.router_status(trigger.router)
            router = RouterLine(status.label, status.tone, status.text)
        return cls(
            data=trigger,
            labels=tuple(trigger.labels),
            grid=_grid(trigger),
            tests=tuple(TriggerRow.of(t, skill) for t in trigger.tests),
            misrouted=tuple(trigger.misrouted),
            auroc=None
            if trigger.auroc is None
            else Sentence(trigger_view.auroc_line(trigger.auroc)),
            calibrated=None
            if trigger.calibrated is None
            else Sentence(trigger_view.calibrated_line(trigger.calibrated)),
            router=router,
        )


def _grid(trigger: Trigger) -> tuple[MatrixRow, ...]:
    labels = trigger.labels
    grid = []
    for i, label in enumerate(labels):
        row = trigger.matrix[i] if i < len(trigger.matrix) else ()
        total = sum(row)
        cells = []
        for j in range(len(labels)):
            count = row[j] if j < len(row) else 0
            share = count / total if total else 0.0
            alpha = round(0.08 + 0.72 * share, 3) if count else 0
            cells.append(MatrixCell(count, alpha, i == j))
        grid.append(MatrixRow(label, tuple(cells), total))
    return tuple(grid)


# --------------------------------------------------------------------------- overfitting


@frozen
class OverfitCard:
    """The overfitting judge's verdict: its severity and tone, score, reason and the flagged
    items."""

    severity: str
    tone: view.Tone
    score: float | None
    reason: str
    flagged: tuple[OverfitItem, ...]

    @classmethod
    def of(cls, overfit: Overfit | None) -> OverfitCard | None:
        if overfit is None:
            return None
        return cls(
            severity=overfit.severity,
            tone=_SEVERITY_TONE.get(overfit.severity, "neutral"),
            score=overfit.score,
            reason=overfit.reason,
            flagged=tuple(overfit.items),
        )
