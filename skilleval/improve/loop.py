"""The improvement loop: rounds of candidates, screened on train, chosen on selection,
confirmed once, guarded, and accepted or not.

What each step may read is the point of the design:

* the proposer is given the current skill's outcomes on the **train** tests only;
* screening reads each candidate's train figures; choosing reads the survivors' **selection**
  figures and nothing else;
* only then is the chosen candidate's **confirmation** figure read, once, by the rule
  (``rule.py``). Every candidate is *run* on all three sets in one pass so the report can
  show them, but no choice ever looks at a confirmation figure.

Each step is kept in the state file as it finishes (``state.py``), so a killed loop resumes
where it stopped and decides exactly as an uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skilleval.api import Judge
from skilleval.engine.base import Provider
from skilleval.improve import choice, guards, proposer, rule
from skilleval.improve.candidates import Candidate, write_proposed
from skilleval.improve.evaluate import TestOutcome, evaluate, planned_requests
from skilleval.improve.split import SETS, Split
from skilleval.improve.state import State
from skilleval.lint.view import LintView
from skilleval.suite.model import Suite
from skilleval.suite.skills import Skill


@dataclass
class Settings:
    """How the loop runs, from the command line."""

    rounds: int = 1
    max_candidates: int = 4
    max_calls: int | None = None
    alpha: float = 0.05
    min_lift: float = 0.0
    jobs: int = 1


@dataclass
class Models:
    """The providers the loop sends its requests to (all behind the response cache)."""

    provider: Provider
    judge_provider: Provider | None
    judge: Judge
    """Grades the overfitting check."""
    proposer: Judge | None = None
    template: str = ""


@dataclass
class Outcome:
    """What the loop did: every candidate and round, and where it ended."""

    rounds: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    evaluations: dict[str, dict[str, TestOutcome]] = field(default_factory=dict)
    accepted: list[str] = field(default_factory=list)
    final: Skill | None = None
    planned_requests: int = 0
    stopped: str = ""
    """Why the loop ended before its last round; empty when it ran them all."""


class _BudgetSpent(Exception):
    """The next step would go past ``--max-calls``."""


def figures(outcomes: Mapping[str, TestOutcome], ids: Sequence[str]) -> dict[str, Any]:
    """One set's figures for one skill: tests passed (majority), trials, routing."""
    mine = [outcomes[i] for i in ids]
    routed = [o.routed for o in mine if o.routed is not None]
    return {
        "tests": len(mine),
        "passed": sum(1 for o in mine if o.vote),
        "trials": sum(o.scored for o in mine),
        "trials_passed": sum(o.passed for o in mine),
        "errors": sum(o.errors for o in mine),
        "routed": len(routed),
        "routed_right": sum(1 for r in routed if r),
    }


class Loop:
    """One improvement run over a loaded suite and its split."""

    def __init__(
        self,
        suite: Suite,
        split: Split,
        view: LintView,
        settings: Settings,
        models: Models,
        out: Path,
        state: State,
        warn: Callable[[str], None],
        notice: Callable[[str], None],
    ) -> None:
        self.suite, self.split, self.view = suite, split, view
        self.settings, self.models, self.out, self.state = settings, models, out, state
        self.warn, self.notice = warn, notice
        self.result = Outcome()
        self.prompts = {t.id: t.prompt for t in view.tests}
        self.expected = {t.id: t.should_trigger for t in suite.tests}
        self.names: dict[str, str] = {}
        """Accepted skills' names by digest, for the rounds that start from them."""

    # -- budget and steps ----------------------------------------------------------------

    def _spend(self, planned: int) -> None:
        cap = self.settings.max_calls
        if cap is not None and self.result.planned_requests + planned > cap:
            raise _BudgetSpent
        self.result.planned_requests += planned

    def evaluation(self, skill: Skill, label: str) -> dict[str, TestOutcome]:
        """``skill`` on every test: from memory, the state file, or a run."""
        if skill.digest in self.result.evaluations:
            return self.result.evaluations[skill.digest]
        self._spend(planned_requests(self.suite, self.suite.tests))
        key = f"eval:{skill.digest}"
        saved = self.state.get(key)
        if saved is not None:
            outcomes = {o["test_id"]: TestOutcome.from_json(o) for o in saved}
        else:
            self.notice(f"evaluating {label} on {len(self.suite.tests)} tests")
            outcomes = evaluate(
                self.suite,
                skill,
                self.suite.tests,
                work=self.out / "evaluations",
                provider=self.models.provider,
                judge_provider=self.models.judge_provider,
                jobs=self.settings.jobs,
                warn=self.warn,
            )
            self.state.put(key, [o.to_json() for o in outcomes.values()])
        self.result.evaluations[skill.digest] = outcomes
        return outcomes

    def _proposals(
        self, round_no: int, current: Skill, train: dict[str, TestOutcome], room: int
    ) -> list[Candidate]:
        """Up to ``room`` proposals, one per part the training failures call for."""
        if self.models.proposer is None:
            return []
        found = proposer.failures(train, self.prompts, self.expected)
        made: list[Candidate] = []
        for part in proposer.parts_to_edit(found)[: max(0, room)]:
            name = f"round{round_no}-{part}"
            key = f"propose:{round_no}:{part}:{current.digest}"
            self._spend(1)
            saved = self.state.get(key)
            if saved is None:
                self.notice(f"asking the proposer to rewrite the {part}")
                reply = proposer.propose(
                    self.models.proposer, self.models.template, current, part, found
                )
                saved = (
                    {"problem": reply}
                    if isinstance(reply, str)
                    else {"part": reply.part, "text": reply.text, "why": reply.why}
                )
                self.state.put(key, saved)
            if "problem" in saved:
                self.result.candidates.append(_dropped(name, round_no, part, saved["problem"]))
                continue
            made_one = write_proposed(
                current, name, part, saved["text"], saved["why"], self.out / "candidates"
            )
            # What the proposer was shown, beside its edit: the training failures only.
            shown = proposer.prompt_text(self.models.template, current, part, found)
            (self.out / "candidates" / name / "proposer-prompt.txt").write_text(
                shown, encoding="utf-8"
            )
            if isinstance(made_one, str):
                self.result.candidates.append(_dropped(name, round_no, part, made_one))
            else:
                made.append(made_one)
        return made

    # -- one round -----------------------------------------------------------------------

    def run(self, current: Skill, folder: Sequence[Candidate]) -> Outcome:
        """Every round; the result holds the report's material."""
        settings = self.settings
        alpha = rule.round_alpha(settings.alpha, settings.rounds)
        try:
            for round_no in range(1, settings.rounds + 1):
                offered = list(folder) if round_no == 1 else []
                accepted = self._round(round_no, current, offered, alpha)
                if accepted is not None:
                    current = accepted
                if round_no == settings.rounds:
                    break
                if self.models.proposer is None:
                    self.result.stopped = "no proposer: the folder's candidates were all tried"
                    break
                if accepted is None:
                    # The same skill and the same failures: the next proposals would repeat.
                    self.result.stopped = (
                        f"round {round_no} accepted nothing, and another round would propose "
                        "from the same failures of the same skill"
                    )
                    break
        except _BudgetSpent:
            if self.result.rounds and not self.result.rounds[-1]["reason"]:
                self.result.rounds[-1]["reason"] = "the request budget is spent"
            self.result.stopped = (
                f"the budget of {settings.max_calls} planned requests would be passed by the "
                "next step"
            )
        self.result.final = current
        return self.result

    def _round(
        self, round_no: int, current: Skill, offered: list[Candidate], alpha: float
    ) -> Skill | None:
        split, result = self.split, self.result
        record: dict[str, Any] = {
            "round": round_no,
            "alpha": alpha,
            "current": current.digest,
            "current_name": self.names.get(current.digest, "the suite's skill"),
            "candidates": [],
            "chosen": None,
            "confirmation": None,
            "guards": None,
            "accepted": False,
            "reason": "",
        }
        result.rounds.append(record)
        base = self.evaluation(current, "the current skill")
        record["current_figures"] = {name: figures(base, split.ids(name)) for name in SETS}
        train = {i: base[i] for i in split.train}
        room = self.settings.max_candidates
        pool = offered[:room]
        pool += self._proposals(round_no, current, train, room - len(pool))
        seen: set[str] = {current.digest}
        survivors: list[tuple[Candidate, dict[str, TestOutcome]]] = []
        for cand in pool:
            entry = self._entry(cand, round_no, current)
            record["candidates"].append(cand.name)
            result.candidates.append(entry)
            if cand.skill.digest in seen:
                entry.update(status="refused", reason="the same SKILL.md as one already tried")
                continue
            seen.add(cand.skill.digest)
            if cand.part(current) == "nothing":
                entry.update(
                    status="refused",
                    reason="it changes neither the description nor the instructions",
                )
                continue
            copied = guards.copied_phrase(self.view, current, cand.skill)
            if copied is not None:
                entry.update(status="refused", reason=copied.message())
                continue
            try:
                outcomes = self.evaluation(cand.skill, f"candidate {cand.name}")
            except _BudgetSpent:
                entry.update(status="not evaluated", reason="the request budget is spent")
                for done in result.candidates:
                    if done["round"] == round_no and not done["status"]:
                        done.update(
                            status="not decided",
                            reason="the request budget ran out before the round chose",
                        )
                raise
            entry["figures"] = self._figures(outcomes, base)
            dropped = choice.screen(cand.part(current), outcomes, base, split.train)
            if dropped is not None:
                entry.update(status="screened out", reason=dropped)
                continue
            survivors.append((cand, outcomes))
        if not pool:
            record["reason"] = "no candidates this round"
            return None
        chosen = self._choose(survivors, base, current, record)
        if chosen is None:
            return None
        cand, outcomes = chosen
        entry = next(e for e in reversed(result.candidates) if e["name"] == cand.name)
        check = rule.confirm(
            cand.part(current),
            outcomes,
            base,
            split.confirm,
            alpha=alpha,
            min_lift=self.settings.min_lift,
        )
        record["confirmation"] = check.to_json()
        if not check.accepted:
            entry.update(status="not accepted", reason=check.reason)
            record["reason"] = f"{cand.name}: {check.reason}"
            return None
        refusal = self._guard(cand, current, record)
        if refusal is not None:
            entry.update(status="refused", reason=refusal)
            record["reason"] = f"{cand.name}: {refusal}"
            return None
        entry.update(status="accepted", reason=check.reason)
        record.update(accepted=True, reason=f"{cand.name}: {check.reason}")
        result.accepted.append(cand.name)
        self.names[cand.skill.digest] = cand.name
        return cand.skill

    def _choose(
        self,
        survivors: list[tuple[Candidate, dict[str, TestOutcome]]],
        base: dict[str, TestOutcome],
        current: Skill,
        record: dict[str, Any],
    ) -> tuple[Candidate, dict[str, TestOutcome]] | None:
        """The survivor the selection set chooses (``choice.py``); None when none gains."""
        ranked = choice.rank(
            [(c.name, c.part(current), o) for c, o in survivors], base, self.split.selection
        )
        best = choice.chosen(ranked)
        for r in ranked:
            if best is not None and r.name == best.name:
                continue
            why = (
                "another candidate did better on the selection set"
                if best is not None
                else "no better than the current skill on the selection set"
            )
            self._mark(r.name, "not chosen", f"{why} (gain {r.gain[0]:+d}, {r.gain[1]:+d})")
        if best is None:
            record["reason"] = (
                "no candidate did better than the current skill on the selection set"
                if ranked
                else "every candidate was refused or screened out"
            )
            return None
        record["chosen"] = best.name
        self._mark(best.name, "chosen", "the best on the selection set")
        return next((c, o) for c, o in survivors if c.name == best.name)

    def _mark(self, name: str, status: str, reason: str) -> None:
        entry = next(e for e in reversed(self.result.candidates) if e["name"] == name)
        entry.update(status=status, reason=reason)

    def _guard(self, cand: Candidate, current: Skill, record: dict[str, Any]) -> str | None:
        """Lint, then the overfitting judge, on the edit about to be accepted."""
        found = guards.new_lint_findings(self.view, current, cand.skill)
        block: dict[str, Any] = {"lint": found, "overfit": None}
        record["guards"] = block
        if found:
            return f"lint finds what the current skill does not: {found[0]}"
        key = f"overfit:{current.digest}:{cand.skill.digest}"
        self._spend(2)
        saved = self.state.get(key)
        if saved is None:
            self.notice(f"asking the overfitting judge about {cand.name}")
            check = guards.overfit_check(self.suite, current, cand.skill, self.models.judge)
            saved = check.to_json()
            self.state.put(key, saved)
        block["overfit"] = saved
        return str(saved["reason"]) if saved["refused"] else None

    def _entry(self, cand: Candidate, round_no: int, current: Skill) -> dict[str, Any]:
        return {
            **cand.describe(current),
            "round": round_no,
            "figures": None,
            "status": "",
            "reason": "",
        }

    def _figures(
        self, outcomes: Mapping[str, TestOutcome], base: Mapping[str, TestOutcome]
    ) -> dict[str, Any]:
        return {
            name: {
                "candidate": figures(outcomes, self.split.ids(name)),
                "current": figures(base, self.split.ids(name)),
            }
            for name in SETS
        }


def _dropped(name: str, round_no: int, part: str, problem: str) -> dict[str, Any]:
    return {
        "name": name,
        "source": "proposer",
        "part": part,
        "why": "",
        "digest": None,
        "diff": "",
        "round": round_no,
        "figures": None,
        "status": "refused",
        "reason": problem,
    }
