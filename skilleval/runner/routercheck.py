"""Is the router fit? Route known requests to known skills and measure how often it is right.

The cases are the router-fitness set, ``suites/router-fitness.yaml``, which ships in the wheel
(:mod:`skilleval.shipped` finds it). Every case goes through the same routing request and
call as a suite's trigger measurement (:func:`skilleval.runner.arms.routing_request` and
:func:`~skilleval.runner.arms.route`), with the set's whole skill catalogue as the options, so
the check measures exactly what suites get.

Figures, each over the cases it names:

* accuracy: the share of cases routed to exactly the expected label (a skill or ``none``), with
  a 95% Wilson interval; an error is wrong. Half the cases expect ``none``, so a router that
  always answers ``none`` scores 0.50;
* recall: over the cases that expect a skill, the share routed to that skill;
* false triggers: over the cases that expect ``none``, the share routed to some skill; and the
  same over the near-misses alone, the requests that resemble a skill without being its job;
* error rate: the share of cases the router could not answer;
* AUROC: how well the router's trigger margin (the best skill's score minus ``none``'s) ranks
  the cases that expect a skill above those that expect ``none``, with Newcombe's 95%
  interval; null when the router gives no scores.

A router is *unqualified* when its accuracy interval reaches down to the chance level (the
accuracy of always giving the commonest label) or its AUROC interval includes 0.5. A full
check (no ``--limit``) is kept per router identity under the home folder, and a run whose
router it measured shows the verdict in its trigger block (:func:`cached_fitness`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from skilleval import stats
from skilleval.engine.base import ModelIdentity, Provider
from skilleval.errors import DecodeError, Diagnostic
from skilleval.results.codec import decode, encode
from skilleval.results.model import RouterFitness
from skilleval.runner.arms import NONE, Routed, route, routing_request, skill_margin
from skilleval.shipped import suite_text
from skilleval.suite.fitness import ItemReader, check_unique, raise_if, read_items
from skilleval.suite.yamlio import Document
from skilleval.util.frozen import frozen
from skilleval.util.homefile import read_sealed, write_sealed

DATA_FILE = "router-fitness.yaml"
"""The router-fitness set, inside the shipped ``suites/``."""

Progress = Callable[["CaseOutcome", int, int], None]


@frozen
class CatalogueSkill:
    """One skill the router may choose: its name and description, nothing else."""

    name: str
    description: str


@frozen
class RouterCase:
    """One request and the label a fit router gives it."""

    id: str
    request: str
    expect: str
    """A skill's name, or ``none``."""
    near: str | None = None
    """For a near-miss (``expect: none``): the skill the request resembles."""

    @property
    def should_trigger(self) -> bool:
        return self.expect != NONE


@frozen
class RouterSet:
    """The skill catalogue and the cases routed against it."""

    skills: tuple[CatalogueSkill, ...]
    cases: tuple[RouterCase, ...]


def load_router_set(text: str | None = None, display: str = f"suites/{DATA_FILE}") -> RouterSet:
    """The router-fitness set, or the one in ``text`` (the same YAML shape).

    Raises:
        SuiteError: Every malformed skill or case, each at its line and column.
    """
    if text is None:
        text = suite_text(DATA_FILE)
    diagnostics: list[Diagnostic] = []
    doc, items = read_items(text, display, "cases", diagnostics, other_keys=("skills",))
    skills = _skills(doc.data.get("skills"), doc, diagnostics)
    names = {s.name for s in skills}
    readers = [ItemReader(item, diagnostics, ("id", "request", "expect", "near")) for item in items]
    check_unique(readers)
    cases = [case for reader in readers if (case := _case(reader, names)) is not None]
    raise_if(diagnostics)
    return RouterSet(tuple(skills), tuple(cases))


def _skills(raw: Any, doc: Document, diagnostics: list[Diagnostic]) -> list[CatalogueSkill]:
    if not isinstance(raw, list) or not raw:
        diagnostics.append(Diagnostic(doc.at(["skills"]), "expected a non-empty 'skills' list"))
        return []
    out: list[CatalogueSkill] = []
    readers: list[ItemReader] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            diagnostics.append(Diagnostic(doc.at(["skills", i]), "expected a mapping"))
            continue
        reader = ItemReader(doc.sub(["skills", i]), diagnostics, ("name", "description"))
        readers.append(reader)
        name, description = reader.text("name"), reader.text("description")
        if name == NONE:
            reader.fail(["name"], f"'{NONE}' is the router's own label; name the skill otherwise")
        elif name is not None and description is not None:
            out.append(CatalogueSkill(name, description))
    check_unique(readers, "name")
    return out


def _case(reader: ItemReader, names: set[str]) -> RouterCase | None:
    case_id, request = reader.text("id"), reader.text("request")
    expect = reader.choice("expect", (*sorted(names), NONE)) if names else reader.text("expect")
    near = reader.text("near", required=False)
    if near is not None and near not in names:
        reader.fail(["near"], f"'near' names {near!r}, which is not in 'skills'")
        return None
    if near is not None and expect not in (None, NONE):
        reader.fail(["near"], "'near' marks a near-miss, so 'expect' must be none")
        return None
    if case_id is None or request is None or expect is None:
        return None
    return RouterCase(case_id, request, expect, near)


@frozen
class CaseOutcome:
    """The router's answer to one case."""

    case: RouterCase
    routed: Routed

    @property
    def correct(self) -> bool:
        return self.routed.error is None and self.routed.chosen == self.case.expect

    @property
    def triggered(self) -> bool | None:
        """Whether the router picked some skill; None when it could not answer."""
        return None if self.routed.chosen is None else self.routed.chosen != NONE

    @property
    def margin(self) -> float | None:
        """The best skill's score minus ``none``'s; None without a score for every option."""
        if self.routed.error is not None:
            return None
        against = skill_margin(self.routed.scores, NONE)
        return None if against is None else -against

    def to_json(self) -> dict[str, Any]:
        scores = self.routed.scores
        return {
            "id": self.case.id,
            "expect": self.case.expect,
            "near": self.case.near,
            "chosen": self.routed.chosen,
            "correct": self.correct,
            "scores": None if scores is None else {k: round(v, 6) for k, v in scores.items()},
            "error": self.routed.error,
        }


def _share(hits: int, n: int) -> float | None:
    return hits / n if n else None


@frozen
class RouterCheckReport:
    """The outcome of a router-fitness run."""

    router: Mapping[str, Any]
    outcomes: tuple[CaseOutcome, ...]
    seconds: float
    aborted: str | None = None
    """Why the router could not run at all (the model failed before it routed anything)."""

    @property
    def correct(self) -> int:
        return sum(o.correct for o in self.outcomes)

    @property
    def errors(self) -> int:
        return sum(o.routed.error is not None for o in self.outcomes)

    @property
    def accuracy(self) -> float | None:
        return _share(self.correct, len(self.outcomes))

    @property
    def interval(self) -> tuple[float, float] | None:
        """The 95% Wilson interval of the accuracy; None with no cases."""
        return stats.wilson(self.correct, len(self.outcomes)) if self.outcomes else None

    @property
    def error_rate(self) -> float | None:
        return _share(self.errors, len(self.outcomes))

    def _positives(self) -> list[CaseOutcome]:
        return [o for o in self.outcomes if o.case.should_trigger]

    def _negatives(self, *, near_only: bool = False) -> list[CaseOutcome]:
        return [
            o
            for o in self.outcomes
            if not o.case.should_trigger and (o.case.near is not None or not near_only)
        ]

    @property
    def recall(self) -> float | None:
        """Over the cases that expect a skill, the share routed to exactly that skill."""
        positives = self._positives()
        return _share(sum(o.correct for o in positives), len(positives))

    @property
    def false_triggers(self) -> float | None:
        """Over the cases that expect ``none``, the share routed to some skill."""
        negatives = self._negatives()
        return _share(sum(o.triggered is True for o in negatives), len(negatives))

    @property
    def near_miss_false_triggers(self) -> float | None:
        """The same as :attr:`false_triggers`, over the near-misses alone."""
        near = self._negatives(near_only=True)
        return _share(sum(o.triggered is True for o in near), len(near))

    @property
    def chance(self) -> float | None:
        """The accuracy of a router that always gives the commonest expected label."""
        counts = Counter(o.case.expect for o in self.outcomes)
        return max(counts.values()) / len(self.outcomes) if self.outcomes else None

    @property
    def auroc(self) -> stats.AurocEstimate:
        """The AUROC of the trigger margin over the cases that expect a skill or ``none``."""
        scored = [(o.case.should_trigger, o.margin) for o in self.outcomes]
        return stats.auroc(
            [m for want, m in scored if want and m is not None],
            [m for want, m in scored if not want and m is not None],
        )

    def unqualified_because(self) -> list[str]:
        """Why the router cannot be trusted with trigger figures; empty when it can."""
        reasons: list[str] = []
        interval, chance = self.interval, self.chance
        if interval is not None and chance is not None and interval[0] <= chance:
            reasons.append(
                f"the accuracy interval [{interval[0]:.2f}, {interval[1]:.2f}] reaches the "
                f"chance level {chance:.2f} (always giving the commonest label)"
            )
        ci = self.auroc.ci95
        if ci is not None and ci[0] <= 0.5:
            reasons.append(
                f"the AUROC interval [{ci[0]:.2f}, {ci[1]:.2f}] includes 0.5 "
                "(its margins rank no better than a coin)"
            )
        return reasons

    def fitness(self, checked_at: str | None = None) -> RouterFitness:
        """The verdict a run shows in its trigger block."""
        interval, estimate = self.interval, self.auroc
        reasons = self.unqualified_because()
        shown = estimate.to_json()
        return RouterFitness(
            checked=True,
            qualified=None if not self.outcomes else not reasons,
            reasons=tuple(reasons),
            accuracy=None if self.accuracy is None else round(self.accuracy, 6),
            accuracy_ci95=None
            if interval is None
            else (round(interval[0], 6), round(interval[1], 6)),
            chance=None if self.chance is None else round(self.chance, 6),
            auroc=shown["value"],
            auroc_ci95=None if shown["ci95"] is None else (shown["ci95"][0], shown["ci95"][1]),
            cases=len(self.outcomes),
            checked_at=checked_at,
        )

    @property
    def constant(self) -> bool:
        """Whether the router gave every case it answered the same label."""
        return len({o.routed.chosen for o in self.outcomes if o.routed.chosen is not None}) == 1

    def to_json(self) -> dict[str, Any]:
        interval = self.interval
        return {
            "router": dict(self.router),
            "cases": len(self.outcomes),
            "should_trigger": len(self._positives()),
            "accuracy": self.accuracy,
            "interval": None if interval is None else [round(v, 6) for v in interval],
            "correct": self.correct,
            "recall": self.recall,
            "false_triggers": self.false_triggers,
            "near_miss_false_triggers": self.near_miss_false_triggers,
            "error_rate": self.error_rate,
            "errors": self.errors,
            "chance": self.chance,
            "auroc": self.auroc.to_json(),
            "qualified": None if not self.outcomes else not self.unqualified_because(),
            "unqualified_because": self.unqualified_because(),
            "constant": self.constant,
            "seconds": round(self.seconds, 3),
            "aborted": self.aborted,
            "results": [o.to_json() for o in self.outcomes],
        }


def run_router_check(
    provider: Provider,
    router_set: RouterSet,
    *,
    seed: int = 0,
    limit: int | None = None,
    describe: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
) -> RouterCheckReport:
    """Route every case (or the first ``limit``) against the set's whole catalogue.

    Stops early, with ``aborted`` set, when the model fails before it has routed anything:
    then nothing can be learned about the router.

    Args:
        provider: The router model.
        router_set: The catalogue and the cases.
        seed: The router's fixed seed (decoding is greedy).
        limit: Route only the first N cases.
        describe: The router's description, for the report.
        progress: Called after each case with (outcome, done, total).
    """
    start = time.perf_counter()
    cases = router_set.cases[:limit] if limit else router_set.cases
    outcomes: list[CaseOutcome] = []
    aborted = None
    for case in cases:
        request = routing_request(router_set.skills, case.request, seed=seed, test_id=case.id)
        outcome = CaseOutcome(case, route(provider, request))
        if outcome.routed.model_failed and not any(o.routed.error is None for o in outcomes):
            aborted = outcome.routed.error
            break
        outcomes.append(outcome)
        if progress is not None:
            progress(outcome, len(outcomes), len(cases))
    return RouterCheckReport(
        router=dict(describe or {}),
        outcomes=tuple(outcomes),
        seconds=time.perf_counter() - start,
        aborted=aborted,
    )


# -- the verdict kept per router ------------------------------------------------------------------

FITNESS_DIR = "router-fitness"
"""Under the home folder: one file per router identity and fitness set."""


def _fitness_file(home: Path, identity: ModelIdentity) -> Path:
    digest = hashlib.sha256(suite_text(DATA_FILE).encode("utf-8"))
    digest.update(b"\0" + identity.key().encode("utf-8", "surrogatepass"))
    return home / FITNESS_DIR / f"{digest.hexdigest()[:32]}.json"


def store_fitness(home: Path, identity: ModelIdentity, report: RouterCheckReport) -> Path:
    """Keep a full check's verdict for ``identity``, so runs with that router can show it.

    The file is keyed by the identity and the fitness set's text: editing the set, or a
    different model file, is a new router.
    """
    path = _fitness_file(home, identity)
    stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    body = {"identity": identity.key(), "fitness": encode(report.fitness(stamp))}
    # Sealed like everything kept under the home: read back only when its digest matches.
    write_sealed(path, (json.dumps(body, indent=1) + "\n").encode("utf-8"))
    return path


def cached_fitness(home: Path, identity: ModelIdentity) -> RouterFitness | None:
    """The kept verdict for ``identity``; None when it was never checked (or the file is unreadable)."""
    path = _fitness_file(home, identity)
    payload = read_sealed(path, "a router-fitness verdict")
    if payload is None:
        return None
    try:
        body = json.loads(payload.decode("utf-8"))
        if body.get("identity") != identity.key():
            return None
        return decode(RouterFitness, body["fitness"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, DecodeError, RecursionError):
        return None


NOT_CHECKED = RouterFitness(
    checked=False,
    qualified=None,
    reasons=(),
    accuracy=None,
    accuracy_ci95=None,
    chance=None,
    auroc=None,
    auroc_ci95=None,
    cases=0,
    checked_at=None,
)
"""A router no full ``router-check`` has measured."""
