"""What every report format reads from a run: rows, verdicts and labels.

The HTML, JUnit, Markdown and CSV writers and ``compare`` all see a run the same way: one
:class:`Row` per test × arm, holding that pair's trials. A row passes only when every trial
passed; any trial that errored makes it an error, since its verdict is then incomplete.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from skilleval.results.model import ArmSummary, ModelError, ModelInfo, Run, Tally
from skilleval.results.records import Record, Tier
from skilleval.util.frozen import frozen

RowStatus = Literal["pass", "fail", "error"]
Tone = Literal["good", "bad", "warn", "neutral"]

TIERS: tuple[Tier, ...] = ("deterministic", "model")


@frozen
class Row:
    """One test under one arm, with all of its trials."""

    test_id: str
    arm: str
    records: tuple[Record, ...]

    @property
    def trials(self) -> int:
        return len(self.records)

    @property
    def passed(self) -> int:
        return sum(1 for r in self.records if r.status == "pass")

    @property
    def failed(self) -> int:
        return sum(1 for r in self.records if r.status == "fail")

    @property
    def errors(self) -> int:
        return sum(1 for r in self.records if r.status == "error")

    @property
    def status(self) -> RowStatus:
        if self.errors:
            return "error"
        return "pass" if self.passed == self.trials else "fail"

    @property
    def flaky(self) -> bool:
        """Some trials passed and some did not."""
        return 0 < self.passed < self.trials

    @property
    def tiers(self) -> dict[str, RowStatus]:
        """Per tier present in any trial: error, else fail if any trial failed it, else pass."""
        out: dict[str, RowStatus] = {}
        for tier in TIERS:
            seen = [r.tiers[tier] for r in self.records if tier in r.tiers]
            if seen:
                out[tier] = _worst(seen)
        return out

    @property
    def types(self) -> list[str]:
        """Assertion types checked in any trial, in first-seen order."""
        return _unique(a.type for r in self.records for a in r.asserts)

    @property
    def failed_types(self) -> list[str]:
        """Assertion types that did not pass in some trial."""
        return _unique(a.type for r in self.records for a in r.asserts if a.status != "pass")

    @property
    def mean_score(self) -> float:
        return sum(r.score for r in self.records) / self.trials if self.records else 0.0

    def reasons(self, limit: int | None = None) -> list[str]:
        """Why the row did not pass, deduplicated over trials (empty when it passed)."""
        found = _unique(reason for r in self.records for reason in record_reasons(r))
        if limit is not None and len(found) > limit:
            return [*found[:limit], f"… and {len(found) - limit} more"]
        return found

    @property
    def latency_ms(self) -> float:
        """Time spent producing the row's outputs, over all trials."""
        return sum(r.stats.latency_ms for r in self.records if r.stats is not None)

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens sent for the row, over all trials."""
        return sum(r.stats.prompt_tokens for r in self.records if r.stats is not None)

    @property
    def completion_tokens(self) -> int:
        """Tokens generated for the row, over all trials."""
        return sum(r.stats.completion_tokens for r in self.records if r.stats is not None)


def _worst(statuses: Iterable[str]) -> RowStatus:
    seen = set(statuses)
    if "error" in seen:
        return "error"
    return "fail" if "fail" in seen else "pass"


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def record_reasons(record: Record) -> list[str]:
    """The failing assertions of one record as ``type: reason`` lines, and its error if any.

    Assertions with weight 0 are informational, so they never explain a failure.
    """
    out: list[str] = []
    if record.status == "error" and record.error:
        out.append(f"error: {record.error}")
    for a in record.asserts:
        if a.status == "pass" or a.weight <= 0:
            continue
        if a.status == "error":
            out.append(f"{a.type} error: {a.error or a.reason or 'failed to run'}")
        else:
            out.append(f"{a.type}: {a.reason or 'failed'}")
    return out


def rows(run: Run) -> list[Row]:
    """One row per test × arm, in plan order, each with its trials sorted."""
    grouped: dict[tuple[str, str], list[Record]] = {}
    for rec in run.records:
        grouped.setdefault((rec.test_id, rec.arm), []).append(rec)
    return [
        Row(test_id, arm, tuple(sorted(recs, key=lambda r: r.trial)))
        for (test_id, arm), recs in grouped.items()
    ]


def arms(run: Run) -> list[str]:
    """The run's arms; for a rebuilt run, the arms its records mention."""
    return list(run.arms) or _unique(r.arm for r in run.records)


def primary_arm(run: Run) -> str:
    return run.primary_arm


# --------------------------------------------------------------------------- formatting


def pct(rate: float | None, digits: int = 0) -> str:
    """``0.8333`` → ``83%``; ``None`` (no denominator) → an em dash."""
    return "—" if rate is None else f"{rate:.{digits}%}"


def signed_pct(value: float | None, digits: int = 1) -> str:
    """A difference in percentage points with its sign: ``+12.5 pp``."""
    if value is None:
        return "—"
    pts = value * 100
    sign = "+" if pts > 0 else "−" if pts < 0 else "±"
    return f"{sign}{abs(pts):.{digits}f} pp"


def num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}g}"


def ratio(passed: int, failed: int) -> str:
    return f"{passed}/{passed + failed}"


@frozen
class Verdict:
    """The one-word outcome of a run and how to colour it."""

    label: str
    tone: Tone
    detail: str
    note: str = ""
    """Why the label means less than it seems: ``capability suite, no gate``."""

    @property
    def headline(self) -> str:
        """The label with its note: ``REPORTED (capability suite, no gate)``."""
        return f"{self.label} ({self.note})" if self.note else self.label


REPORTED = "REPORTED"
NO_GATE = "capability suite, no gate"


def verdict(run: Run) -> Verdict:
    """PASSED, FAILED, REPORTED, INTERRUPTED or INCOMPLETE, with the gate's reasons.

    A capability suite with no ``gate:`` condition checks nothing: it exits 0 unless results
    are errors. Its run is REPORTED, never PASSED, so that a report does not read as a pass.
    """
    gate = run.gate
    if run.status == "incomplete" or gate is None:
        return Verdict("INCOMPLETE", "warn", "; ".join(run.notes) or "the run did not finish")
    detail = "; ".join(gate.reasons)
    if run.status == "interrupted":
        return Verdict("INTERRUPTED", "warn", detail or "the run was interrupted")
    if gate.passed and gate.type == "capability" and not gate.checks:
        return Verdict(REPORTED, "neutral", detail, NO_GATE)
    if gate.passed:
        return Verdict("PASSED", "good", detail)
    return Verdict("FAILED", "bad", detail)


LIFT_TONE: dict[str, Tone] = {
    "helps": "good",
    "hurts": "bad",
    "no evidence": "neutral",
    "underpowered": "warn",
}


def rate_tone(rate: float | None) -> Tone:
    """Green from 90%, amber from 60%, red below; neutral without a denominator."""
    if rate is None:
        return "neutral"
    return "good" if rate >= 0.9 else "warn" if rate >= 0.6 else "bad"


@frozen
class Fact:
    """A figure the headline carries beside the verdict."""

    key: str
    name: str
    value: str
    tone: Tone

    @property
    def text(self) -> str:
        return f"{self.name} {self.value}"


def headline_facts(run: Run) -> list[Fact]:
    """The trigger recall and the lift verdict, when the run measured them.

    They stand next to the verdict because a run can pass its gate while the skill never
    fires (recall 0) or while nothing shows that it helps.
    """
    facts = []
    trigger = run.trigger
    if trigger is not None:
        wanted = trigger.tp + trigger.fn
        shown = "—" if trigger.recall is None else f"{trigger.recall:.2f} ({trigger.tp}/{wanted})"
        facts.append(Fact("trigger-recall", "trigger recall", shown, rate_tone(trigger.recall)))
    if run.lift is not None:
        verdict_ = run.lift.verdict
        facts.append(Fact("lift", "lift", verdict_, LIFT_TONE.get(verdict_, "neutral")))
    return facts


UNQUALIFIED_TAG = "unqualified judge"
"""What the model tier's figures carry when the judge is no better than chance."""


def judge_unqualified(run: Run) -> bool:
    """The judge's fitness does not lie above chance (or could not be measured), so the
    model tier's figures are not evidence and are shown greyed."""
    fitness = run.judge.fitness if run.judge is not None else None
    return fitness is not None and fitness.status in ("unqualified", "error")


def judge_fitness_line(run: Run) -> str | None:
    """The judge's fitness in one plain sentence; None when the run records none.

    ``unqualified judge: fitness 0.55 [0.43, 0.66] includes chance 0.5 on 73 pairs; the
    model-graded tier is unqualified``, or ``judge not checked: …``.
    """
    fitness = run.judge.fitness if run.judge is not None else None
    if fitness is None:
        return None
    if judge_unqualified(run):
        return f"{fitness.reason}; the model-graded tier is unqualified"
    return fitness.reason


def side_by_side_fitness_line(run: Run) -> tuple[str, bool] | None:
    """The side-by-side judge's fitness in one sentence, and whether it is a warning (the
    judge is unqualified or could not be measured, so its preferences are not evidence);
    None when the run records none."""
    fitness = run.judge.side_by_side if run.judge is not None else None
    if fitness is None:
        return None
    if fitness.status in ("unqualified", "error"):
        return f"{fitness.reason}; the side-by-side preferences are not evidence", True
    return fitness.reason, False


def judge_grades_itself(run: Run) -> bool:
    """The model under test graded the model-tier assertions (its own outputs)."""
    return run.judge is not None and run.judge.same_as_generator


def model_label(identity: ModelInfo | ModelError | None) -> str:
    """The model's name: a GGUF's file name rather than its full path."""
    if identity is None:
        return "unknown model"
    if isinstance(identity, ModelError):
        return "?"
    name = identity.name or identity.file or identity.kind or "?"
    return name.replace("\\", "/").rsplit("/", 1)[-1]


def short_digest(digest: str | None, width: int = 12) -> str:
    if not digest:
        return ""
    algo, _, hexpart = digest.rpartition(":")
    return (f"{algo}:" if algo else "") + hexpart[:width]


def decoding_label(run: Run) -> str:
    """How the outputs were produced, in one line."""
    if run.environment is None:
        return "decoding unknown"
    dec = run.environment.decoding
    if dec.mode == "deterministic":
        how = f"greedy, seed {dec.seed}"
    else:
        how = f"sampled (temperature {dec.temperature}, top_p {dec.top_p}), seed {dec.seed}+trial"
    return f"{how} · max_tokens {dec.max_tokens}"


def suite_name(run: Run) -> str:
    return str(run.suite.path or run.run_id or "suite")


def trials_of(run: Run) -> int:
    found = run.environment.trials if run.environment is not None else run.suite.trials
    if found:
        return found
    return max((r.trial + 1 for r in run.records), default=1)


def tier_cells(arm_summary: ArmSummary) -> dict[str, Tally]:
    """The tier tallies of one arm, deterministic first."""
    tiers = arm_summary.tiers
    ordered = [t for t in TIERS if t in tiers] + [t for t in tiers if t not in TIERS]
    return {t: tiers[t] for t in ordered}


def failing(all_rows: Sequence[Row]) -> list[Row]:
    return [r for r in all_rows if r.status != "pass"]
