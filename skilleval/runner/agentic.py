"""Run one agentic job (test × arm × trial) from workspace to graded record.

A test runs as an agent when the loader gave it an
:class:`~skilleval.suite.agent_config.AgentConfig` (it has tools, an environment, turns or
``max_steps``). Its job differs from a plain one in
three ways:

* it gets a fresh workspace, set up before the first model call and removed after grading,
  because file checks must see the files the agent left; a failed set-up is an ``error``;
* the model is called once per step (:func:`~skilleval.agent.loop.run_agent`), not once;
* each turn's assertions are graded as the turn ends, on that turn's answer, its steps and
  the workspace as the turn left it; the test's own assertions grade the last answer, the
  whole trajectory and the final workspace. All of them count towards the result.

Assertions see the steps as :attr:`~skilleval.api.Check.trajectory` and the folder
as :attr:`~skilleval.api.Check.workspace`. The record's ``messages`` are the
agent's full transcript and ``extra.agent`` holds the steps, per-turn answers and totals, so
reports show the trajectory.

SIGTERM unwinds a run as Ctrl-C does (:func:`sigterm_as_interrupt`), so no workspace is left
behind in the temporary folder either way.
"""

from __future__ import annotations

from dataclasses import replace

from skilleval.agent.loop import run_agent
from skilleval.agent.records import AgentRun, TurnResult
from skilleval.agent.workspace import create_workspace, sigterm_as_interrupt
from skilleval.api import Judge, Stats
from skilleval.engine.base import Provider
from skilleval.results.agent import AgentBlock, RecordExtra
from skilleval.results.codec import decode
from skilleval.results.records import AssertionResult, Message, Record
from skilleval.runner import grade as grading
from skilleval.runner.calls import record_stats
from skilleval.runner.plan import Job, is_agentic
from skilleval.suite import template

__all__ = ["is_agentic", "run_job", "sigterm_as_interrupt"]


def run_job(
    job: Job,
    provider: Provider,
    judge: Judge | None,
    cost: float | None = None,
    *,
    keep_workspace: bool = False,
) -> Record:
    """Set up the workspace, run the agent, grade, clean up; never raises for model failures.

    Args:
        job: An agentic job (see :func:`is_agentic`).
        provider: The model under test.
        judge: The grader for model-tier assertions, if any.
        cost: What a model call costs in US dollars, for the ``cost`` assertion (None:
            the provider does not say).
        keep_workspace: Leave the workspace folder behind (for debugging).
    """
    test, request, agent = job.test, job.request, job.test.agent
    if request is None or agent is None:
        raise ValueError(f"job {job.key} is not agentic; check is_agentic(job) first")
    system = request.messages[0].content if request.messages[0].role == "system" else None
    try:
        turns = [template.render(t.user, test.vars) for t in agent.turns] or [job.prompt]
    except template.TemplateProblem as exc:
        return Record.failed(job.key, job.prompt, exc.message)
    label = f"{test.id}-{job.arm}-{job.trial}"
    with create_workspace(agent.environment, label=label, keep=keep_workspace) as workspace:
        if workspace.error is not None:
            return Record.failed(job.key, job.prompt, workspace.error)
        turn_results: list[AssertionResult] = []

        def grade_turn(turn: TurnResult) -> None:
            if turn.index >= len(agent.turns) or not agent.turns[turn.index].asserts:
                return
            subject = grading.Subject(
                output=turn.output,
                prompt=turn.user,
                messages=(),
                stats=Stats(),
                arm=job.arm,
                trial=job.trial,
                cost=cost,
                trajectory=turn.steps,
                workspace=workspace.path,
                skills=job.skills,
            )
            graded = grading.grade(test, subject, judge, only=agent.turns[turn.index].asserts)
            turn_results.extend(
                replace(r, details={**r.details, "turn": turn.index}) for r in graded.asserts
            )

        run = run_agent(
            provider,
            system=system,
            turns=turns,
            tools=agent.tools,
            workspace=workspace.path,
            max_steps=agent.max_steps,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            top_p=request.top_p,
            seed=request.seed,
            trial=job.trial,
            test_id=test.id,
            arm=job.arm,
            after_turn=grade_turn,
        )
        messages = tuple(m.to_json() for m in run.messages)
        transcript = tuple(Message(m.role, m.content) for m in run.messages)
        if run.error is not None:
            return Record.failed(job.key, job.prompt, run.error, transcript, _agent_block(run))
        completion = run.as_completion()
        subject = grading.Subject(
            output=run.final,
            prompt=job.prompt,
            messages=messages,
            stats=grading.stats_of(completion),
            arm=job.arm,
            trial=job.trial,
            cost=cost,
            trajectory=run.steps,
            workspace=workspace.path,
            skills=job.skills,
        )
        graded = grading.grade(test, subject, judge)
    scored = grading.score((*turn_results, *graded.asserts), test.threshold)
    totals = run.totals()
    return Record(
        test_id=test.id,
        arm=job.arm,
        trial=job.trial,
        status=scored.status,
        score=scored.score,
        error=None,
        output=run.final,
        prompt=job.prompt,
        messages=transcript,
        asserts=scored.asserts,
        stats=record_stats(
            completion, steps=int(totals["steps"]), tool_calls=int(totals["tool_calls"])
        ),
        tiers=scored.tiers,
        metrics=scored.metrics,
        extra=RecordExtra(agent=_agent_block(run)),
    )


def _agent_block(run: AgentRun) -> AgentBlock:
    # The transcript is the record's `messages`; it is not repeated here.
    data = run.to_json()
    data.pop("messages", None)
    return decode(AgentBlock, data)
