"""Skill arms and trigger measurement.

* ``off``: the bare model; the same prompt, seed and decoding, no skill.
* ``on``: the skill's instructions in the system prompt.
* ``routed``: the skill is loaded only when the router picks it for that prompt.

Trigger measurement asks the model to route: it sees the name and description of every
available skill plus ``none``, and decoding is constrained to exactly one of those labels,
greedy, so the choice is reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from skilleval.engine.base import Completion, Message, Provider, Request
from skilleval.errors import ProviderError
from skilleval.results.records import TriggerOutcome
from skilleval.suite.model import Suite, TestCase
from skilleval.util.frozen import frozen

NONE = "none"


class Routable(Protocol):
    """What the router sees of a skill: a loaded ``Skill``, or a router-fitness entry."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...


def router_system_prompt(skills: Sequence[Routable]) -> str:
    """The routing instructions; shared by every trigger call, so it forms one warm prefix."""
    lines = [
        "You are a router. Read the user's request and choose the one skill that should handle "
        "it, or 'none' when no skill fits. Answer with the skill name only.",
        "",
        "Skills:",
    ]
    for skill in sorted(skills, key=lambda s: s.name):
        lines.append(f"- {skill.name}: {skill.description}")
    lines.append(f"- {NONE}: no skill is needed; answer directly.")
    return "\n".join(lines)


def labels(suite: Suite) -> tuple[str, ...]:
    """The routing options: every skill's name, then ``none``."""
    names = sorted(s.name for s in (*([suite.skill] if suite.skill else []), *suite.distractors))
    return (*names, NONE)


@frozen
class TriggerResult:
    """The router's choice for one test."""

    test_id: str
    expected: bool | None
    chosen: str | None
    scores: Mapping[str, float] | None
    error: str | None = None
    stats: Mapping[str, Any] | None = None
    runs: tuple[str | None, ...] | None = None
    """With sampled routing (``trigger: {runs: N}``): the label each run chose, in seed order."""
    rate: float | None = None
    """With sampled routing: the share of the runs that chose the skill."""

    def triggered(self, skill: str) -> bool | None:
        return None if self.chosen is None else self.chosen == skill

    def margin(self) -> float | None:
        """How far the chosen option's score is ahead of the runner-up."""
        if not self.scores or self.chosen is None or self.chosen not in self.scores:
            return None
        if len(self.scores) < 2:
            return None
        best = self.scores[self.chosen]
        rest = [v for k, v in self.scores.items() if k != self.chosen]
        return round(best - max(rest), 6)

    def skill_margin(self, skill: str) -> float | None:
        """The skill's score minus the best other option's: above 0 when the skill is chosen.

        With no distractors it is the skill-vs-``none`` margin. None without scores for every
        option (the provider exposes no log-probabilities) or when the decision failed.
        """
        return skill_margin(self.scores, skill) if self.error is None else None

    def outcome(self, skill: str) -> TriggerOutcome:
        """The routing decision as recorded in the results, judged against ``skill``."""
        triggered = self.triggered(skill)
        return TriggerOutcome(
            test_id=self.test_id,
            expected=self.expected,
            chosen=self.chosen,
            triggered=triggered,
            correct=None
            if triggered is None or self.expected is None
            else triggered == self.expected,
            scores=None
            if self.scores is None
            else {k: round(v, 6) for k, v in self.scores.items()},
            margin=self.margin(),
            error=self.error,
            skill_margin=None if (m := self.skill_margin(skill)) is None else round(m, 6),
            runs=self.runs,
            rate=None if self.rate is None else round(self.rate, 6),
        )


def skill_margin(scores: Mapping[str, float] | None, skill: str) -> float | None:
    """``scores[skill]`` minus the best other score; None unless the skill and another are scored."""
    if not scores or skill not in scores or len(scores) < 2:
        return None
    return scores[skill] - max(v for k, v in scores.items() if k != skill)


def routing_request(skills: Sequence[Routable], prompt: str, *, seed: int, test_id: str) -> Request:
    """Ask the router to pick one of ``skills`` or ``none`` for ``prompt``, greedily."""
    return Request(
        messages=(Message("system", router_system_prompt(skills)), Message("user", prompt)),
        max_tokens=16,
        temperature=0.0,
        top_p=1.0,
        seed=seed,
        choices=(*sorted(s.name for s in skills), NONE),
        test_id=test_id,
        arm="router",
        purpose="trigger",
    )


def trigger_request(suite: Suite, test: TestCase, prompt: str) -> Request:
    skills = [s for s in (suite.skill, *suite.distractors) if s is not None]
    return routing_request(skills, prompt, seed=suite.decoding.seed, test_id=test.id)


@frozen
class Routed:
    """The router's answer to one routing request: a label, or why there is none."""

    chosen: str | None
    scores: Mapping[str, float] | None = None
    error: str | None = None
    stats: Mapping[str, Any] | None = None
    model_failed: bool = False
    """The model could not be called at all (as opposed to a reply outside the options)."""


def route(provider: Provider, request: Request) -> Routed:
    """Send one routing request; a failure or an answer outside the options is an error."""
    try:
        completion: Completion = provider.complete(request)
    except ProviderError as exc:
        return routed(request, exc)
    return routed(request, completion)


def routed(request: Request, completion: Completion | ProviderError) -> Routed:
    """What the router's answer to ``request`` means; a failure or an answer outside the
    options is an error."""
    if isinstance(completion, ProviderError):
        return Routed(None, error=str(completion), model_failed=True)
    chosen = completion.text.strip()
    if chosen not in (request.choices or ()):
        return Routed(None, error=f"router replied {chosen[:40]!r}, not one of the options")
    scores = dict(completion.choice_scores) if completion.choice_scores else None
    return Routed(chosen, scores, stats=completion.to_json())


def measure(provider: Provider, suite: Suite, test: TestCase, prompt: str) -> TriggerResult:
    """Ask the router for one test; a failure is recorded, never raised."""
    return trigger_result(test, route(provider, trigger_request(suite, test, prompt)))


def skills_chosen(trigger: TriggerResult | None) -> tuple[str, ...] | None:
    """The skills the router's decision puts in use for a test, as ``skill-used`` reads
    them: the chosen one, none when it chose ``none``; None without a decision."""
    if trigger is None or trigger.chosen is None:
        return None
    return () if trigger.chosen == NONE else (trigger.chosen,)


def trigger_result(test: TestCase, routed: Routed) -> TriggerResult:
    """The router's answer for ``test``, as the run records it."""
    return TriggerResult(
        test.id,
        test.should_trigger,
        routed.chosen,
        routed.scores,
        error=routed.error,
        stats=routed.stats,
    )


CONTENT_FREE: tuple[str, ...] = ("N/A", "[MASK]", "")
"""The content-free requests of contextual calibration (Zhao et al., "Calibrate Before Use",
ICML 2021): what the router answers when the request says nothing is its bias."""

CONTENT_FREE_ID = "(content-free)"
"""The test id the content-free routing requests carry (scripted rules can answer it)."""


@frozen
class ContentFree:
    """The router's scores for content-free requests, averaged as probabilities."""

    scores: Mapping[str, float] | None
    """Per option: the log of the mean probability over :data:`CONTENT_FREE`; None on failure."""
    error: str | None = None

    def calibrated(self, scores: Mapping[str, float] | None) -> dict[str, float] | None:
        """``scores`` with each option's content-free score subtracted; None when either is missing."""
        if self.scores is None or not scores or set(scores) != set(self.scores):
            return None
        return {k: v - self.scores[k] for k, v in scores.items()}


UNSCORED = ContentFree(None, "the router gives no score for each option")
"""The content-free figures of a router that gives no scores (``Capabilities.scores``)."""


def content_free(provider: Provider, suite: Suite) -> ContentFree:
    """Route each content-free request and average the option scores as probabilities.

    Averaging probabilities (not log-probabilities) is the paper's recipe; in log space it is
    a log-mean-exp, computed from the largest term so no exponent overflows.
    """
    skills = [s for s in (suite.skill, *suite.distractors) if s is not None]
    seen: list[Mapping[str, float]] = []
    for text in CONTENT_FREE:
        request = routing_request(skills, text, seed=suite.decoding.seed, test_id=CONTENT_FREE_ID)
        routed = route(provider, request)
        if routed.error is not None:
            return ContentFree(None, f"content-free request {text!r}: {routed.error}")
        if routed.scores is None or set(routed.scores) != set(request.choices or ()):
            return UNSCORED
        seen.append(routed.scores)
    averaged = {}
    for label in seen[0]:
        values = [s[label] for s in seen]
        top = max(values)
        averaged[label] = top + math.log(sum(math.exp(v - top) for v in values) / len(values))
    return ContentFree(averaged)


def system_prompts(suite: Suite) -> dict[str, str | None]:
    """The system prompt of each arm (``routed`` is decided per test)."""
    on = suite.skill.system_prompt() if suite.skill else None
    return {"default": None, "off": None, "on": on, "routed": None}
