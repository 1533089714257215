"""Expand a suite into generation jobs, ordered so that calls sharing a prompt prefix run
back to back (llama.cpp reuses the KV cache only between consecutive calls), and reorder them
for a model that decodes several calls at once (:func:`by_test`)."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence

from skilleval.engine.base import Decoding, Message, Request
from skilleval.suite import template
from skilleval.suite.model import Suite, TestCase
from skilleval.util.frozen import frozen


@frozen
class Job:
    """One generation: a test, in one arm, for one trial."""

    test: TestCase
    arm: str
    trial: int
    request: Request | None
    """None when the prompt could not be rendered (see ``error``)."""
    prompt: str
    error: str | None = None
    skills: tuple[str, ...] | None = None
    """The router's decision for the test, for ``skill-used``; None when it was not routed."""

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.test.id, self.arm, self.trial)


LOGPROB_TYPES = frozenset({"perplexity", "perplexity-score"})
"""Types that read the reply's token log-probabilities: their tests' requests ask for them."""


def wants_logprobs(test: TestCase) -> bool:
    """Whether a check of ``test`` (in a set, too) reads token log-probabilities."""
    entries = list(test.asserts)
    while entries:
        entry = entries.pop()
        entries.extend(entry.children)
        if entry.spec.name in LOGPROB_TYPES:
            return True
    return False


def is_agentic(job: Job) -> bool:
    """Whether ``job`` runs the agent loop rather than a single call."""
    return job.test.agent is not None and job.request is not None


def select(tests: Sequence[TestCase], patterns: Sequence[str]) -> list[TestCase]:
    """Tests whose id matches any pattern (exact, glob, or substring)."""
    if not patterns:
        return list(tests)
    chosen = []
    for test in tests:
        for pat in patterns:
            if (
                test.id == pat
                or fnmatch.fnmatchcase(test.id, pat)
                or (not any(c in pat for c in "*?[") and pat in test.id)
            ):
                chosen.append(test)
                break
    return chosen


def messages_for(test: TestCase, system: str | None) -> tuple[tuple[Message, ...], str]:
    """The rendered conversation for a test, and its user prompt as text."""
    vars_ = test.vars
    prompt = test.prompt
    out: list[Message] = []
    if prompt.text is not None:
        if system:
            out.append(Message("system", system))
        user = template.render(prompt.text, vars_)
        out.append(Message("user", user))
        return tuple(out), user
    rendered = [Message(role, template.render(text, vars_)) for role, text in prompt.messages]
    if system:
        if rendered and rendered[0].role == "system":
            rendered[0] = Message("system", f"{system}\n\n{rendered[0].content}")
        else:
            rendered.insert(0, Message("system", system))
    users = [m.content for m in rendered if m.role == "user"]
    return tuple(rendered), (users[-1] if users else "")


SystemFor = Callable[[str, TestCase], "str | None"]


def plan(
    suite: Suite,
    tests: Sequence[TestCase],
    arms: Sequence[str],
    system_for: SystemFor,
    decoding: Decoding | None = None,
    *,
    logprobs: bool = True,
) -> list[Job]:
    """Every (test, arm, trial) job, grouped by arm so each arm's shared prefix stays warm.

    ``logprobs``: whether the provider returns token log-probabilities
    (``Capabilities.token_logprobs``); only then do the requests of a test with a
    ``perplexity`` check ask for them.
    """
    decoding = decoding or suite.decoding
    jobs: list[Job] = []
    for arm in arms:
        for test in tests:
            try:
                messages, prompt = messages_for(test, system_for(arm, test))
            except template.TemplateProblem as exc:
                for trial in range(suite.trials):
                    jobs.append(Job(test, arm, trial, None, "", error=exc.message))
                continue
            for trial in range(suite.trials):
                temperature, top_p, seed = decoding.sampling(trial)
                request = Request(
                    messages=messages,
                    max_tokens=decoding.max_tokens,
                    temperature=temperature,
                    top_p=top_p,
                    seed=seed,
                    json_schema=test.prompt.json_schema,
                    trial=trial,
                    test_id=test.id,
                    arm=arm,
                    vars=test.vars,
                    logprobs=logprobs and wants_logprobs(test),
                )
                jobs.append(Job(test, arm, trial, request, prompt))
    return jobs


def by_test(jobs: Sequence[Job]) -> list[Job]:
    """``jobs`` with every job of a test next to each other (its arms and trials, in plan
    order), the tests in the order they first come.

    For a model that holds several prompts at once (continuous batching keeps each slot's
    prompt and a shared prefix), the arm-by-arm order gains nothing for generation, and it
    parts the judge calls that grade one test's arms: those share the rubric and the test's
    variables, so asked close together the second starts from the first's cells. Asked an
    arm apart, the first's cells are long gone.
    """
    first: dict[str, int] = {}
    for index, job in enumerate(jobs):
        first.setdefault(job.test.id, index)
    return sorted(jobs, key=lambda job: first[job.test.id])
