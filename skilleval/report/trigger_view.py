"""The trigger block's threshold-free and calibrated figures and the router's fitness, in words.

The terminal and Markdown reports print these sentences; the HTML report shows the same
figures in its triggering card and uses the same sentences as their explanations.
"""

from __future__ import annotations

from skilleval.report.view import Tone
from skilleval.results.model import Auroc, Confusion, RouterFitness, Trigger, TriggerCalibration
from skilleval.util.frozen import frozen


def interval(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f" [{ci[0]:.2f}, {ci[1]:.2f}]"


def auroc_text(auroc: Auroc) -> str:
    """``AUROC 0.83 [0.61, 0.94]``, or ``AUROC n/a (why)``."""
    if auroc.value is None:
        return f"AUROC n/a ({auroc.reason or 'nothing to rank'})"
    return f"AUROC {auroc.value:.2f}{interval(auroc.ci95)}"


def auroc_line(auroc: Auroc) -> str:
    """The AUROC with what it ranked and how its interval was made."""
    if auroc.value is None:
        return f"trigger {auroc_text(auroc)}"
    left_out = f", {len(auroc.unscored)} unscored left out" if auroc.unscored else ""
    return (
        f"trigger {auroc_text(auroc)} (skill margin ranks {auroc.positives} should-trigger "
        f"tests against {auroc.negatives} others{left_out}; 0.50 is a coin; "
        "95% Newcombe interval)"
    )


def _rate(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def confusion_text(counts: Confusion) -> str:
    """``accuracy 80% (8/10) · precision 0.75 · recall 1.00 · F1 0.86``: the raw trigger
    figures and the calibrated ones are said alike."""
    acc = "—" if counts.accuracy is None else f"{counts.accuracy:.0%}"
    return (
        f"accuracy {acc} ({counts.tp + counts.tn}/{counts.n}) · precision "
        f"{_rate(counts.precision)} · recall {_rate(counts.recall)} · F1 {_rate(counts.f1)}"
    )


def calibrated_line(cal: TriggerCalibration) -> str:
    """The calibrated figures, said to be calibrated, for beside the raw ones."""
    if cal.reason is not None and not cal.n:
        return f"calibrated: n/a ({cal.reason})"
    bias = "" if cal.margin is None else f" (content-free margin {cal.margin:+.2f} subtracted)"
    return f"calibrated{bias}: {confusion_text(cal)} · {auroc_text(cal.auroc)}"


@frozen
class RouterStatus:
    """The router's fitness as a label, a tone and a sentence."""

    label: str
    tone: Tone
    text: str


def router_status(router: RouterFitness) -> RouterStatus:
    """What the kept router check says of this run's router."""
    if not router.checked:
        return RouterStatus(
            "router not checked",
            "neutral",
            "router not checked: run `skilleval router-check --router-model MODEL` with this "
            "run's model to learn whether its trigger figures are signal",
        )
    when = f", {router.checked_at}" if router.checked_at else ""
    figures = (
        f"accuracy {_rate(router.accuracy)}{interval(router.accuracy_ci95)} against chance "
        f"{_rate(router.chance)}; AUROC "
        + ("n/a" if router.auroc is None else f"{router.auroc:.2f}{interval(router.auroc_ci95)}")
    )
    if router.qualified is False:
        return RouterStatus(
            "router unqualified",
            "bad",
            f"router UNQUALIFIED (router-check, {router.cases} cases{when}): "
            + "; ".join(router.reasons)
            + ". Its trigger figures may be noise.",
        )
    return RouterStatus(
        "router qualified",
        "good",
        f"router qualified (router-check, {router.cases} cases{when}): {figures}",
    )


def trigger_extra_lines(trigger: Trigger) -> list[str]:
    """The lines after the raw trigger figures: AUROC, calibrated figures, router fitness."""
    lines = []
    if trigger.rule != "greedy":
        lines.append(
            f"trigger rule: {trigger.rule} (each test routed that many times, sampled; it "
            "triggers when at least that share of the runs pick the skill)"
        )
    if trigger.auroc is not None:
        lines.append(auroc_line(trigger.auroc))
    if trigger.calibrated is not None:
        lines.append(calibrated_line(trigger.calibrated))
    if trigger.router is not None:
        lines.append(router_status(trigger.router).text)
    return lines
