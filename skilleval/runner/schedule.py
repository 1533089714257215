"""Generate and grade jobs: in order, in parallel, or with grading deferred by rubric."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from skilleval.api import Judge, Verdict
from skilleval.engine.base import Completion, Provider
from skilleval.errors import ProviderError
from skilleval.results.records import Message, Record
from skilleval.runner import agentic as agentic_mod
from skilleval.runner import compare
from skilleval.runner import grade as grading
from skilleval.runner.calls import record_stats
from skilleval.runner.plan import Job
from skilleval.suite import template
from skilleval.suite.model import TestCase

Generated = tuple[Job, "Completion | str | Record"]
"""A job and its completion, or the error message that replaced it; an agentic job comes
back already graded, because its workspace is gone once the job returns."""

RunAgentic = Callable[[Job], Record]


def subject_of(job: Job, completion: Completion, cost: float | None) -> grading.Subject:
    """What the assertions of ``job`` grade: its completion and the call that made it."""
    assert job.request is not None
    return grading.Subject(
        output=completion.text,
        prompt=job.prompt,
        messages=tuple(m.to_json() for m in job.request.messages),
        stats=grading.stats_of(completion),
        arm=job.arm,
        trial=job.trial,
        cost=cost,
    )


def grade_job(
    job: Job,
    completion: Completion,
    cost: float | None,
    judge: Judge | None = None,
    given: Mapping[int, Verdict] | None = None,
) -> Record:
    assert job.request is not None
    subject = subject_of(job, completion, cost)
    graded = grading.grade(job.test, subject, judge, given=given)
    return Record(
        test_id=job.test.id,
        arm=job.arm,
        trial=job.trial,
        status=graded.status,
        score=graded.score,
        error=None,
        prompt=job.prompt,
        messages=tuple(Message(m.role, m.content) for m in job.request.messages),
        output=completion.text,
        stats=record_stats(completion),
        tiers=graded.tiers,
        metrics=graded.metrics,
        asserts=graded.asserts,
    )


def generate(job: Job, provider: Provider, agentic: RunAgentic | None = None) -> Generated:
    if agentic is not None and agentic_mod.is_agentic(job):
        return job, agentic(job)
    if job.request is None:
        return job, job.error or "prompt could not be rendered"
    try:
        return job, provider.complete(job.request)
    except ProviderError as exc:
        return job, str(exc)


def finish(
    gen: Generated,
    cost: float | None,
    judge: Judge | None,
    given: compare.Given | None = None,
) -> Record:
    job, result = gen
    if isinstance(result, Record):
        return result
    if isinstance(result, str):
        msgs = [Message(m.role, m.content) for m in job.request.messages] if job.request else []
        return Record.failed(job.key, job.prompt, result, msgs)
    return grade_job(job, result, cost, judge, (given or {}).get(job.key))


def given_for(gens: Sequence[Generated], cost: float | None, judge: Judge | None) -> compare.Given:
    """The verdicts of the assertions that compare outputs across prompts, per job."""
    done = [(job, result) for job, result in gens if isinstance(result, Completion)]
    return compare.given_verdicts(done, lambda j, c: subject_of(j, c, cost), judge)


def needs_judge(test: TestCase) -> bool:
    return any(a.tier == "model" for a in test.asserts)


def rubric_key(job: Job) -> tuple[str, ...]:
    # Judge calls that share a rubric (and prompt template) share a prompt prefix: grade them
    # back to back so the KV cache is reused.
    for a in job.test.asserts:
        if a.tier == "model":
            try:
                value = template.render_value(a.value, job.test.vars)
            except template.TemplateProblem:
                value = a.value
            prompt = a.options.get("rubricPrompt")
            return (repr(prompt), a.type, repr(value), repr(a.options.get("reference")))
    return ("",)


def iterate(
    jobs: Sequence[Job], provider: Provider, parallel: int, agentic: RunAgentic | None = None
) -> Iterator[Generated]:
    width = max(1, min(parallel, getattr(provider, "max_concurrency", 1)))
    if width == 1:
        for job in jobs:
            yield generate(job, provider, agentic)
        return
    with ThreadPoolExecutor(max_workers=width) as pool:
        pending: set[Future[Generated]] = set()
        queue = list(jobs)
        while queue or pending:
            while queue and len(pending) < width * 2:
                pending.add(pool.submit(generate, queue.pop(0), provider, agentic))
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                yield fut.result()


def run_jobs(
    todo: Sequence[Job],
    provider: Provider,
    parallel: int,
    agentic: RunAgentic,
    cost: float | None,
    judge: Judge | None,
    separate: bool,
    emit: Callable[[Record], None],
) -> None:
    """Generate and grade every job, handing each record to ``emit`` as it is finished.

    Args:
        separate: The judge is a model of its own, so grading overlaps generation. Otherwise
            one model does both: everything is generated first, then graded grouped by
            rubric, so judge calls that share a prompt prefix run back to back.
    """
    if separate:
        # Outputs compared across prompts wait for the rest of their group: until the end.
        compared: list[Generated] = []
        with ThreadPoolExecutor(max_workers=1) as grader:
            grading_now: list[Future[Record]] = []
            for gen in iterate(todo, provider, parallel, agentic):
                if compare.compares(gen[0].test) and isinstance(gen[1], Completion):
                    compared.append(gen)
                elif needs_judge(gen[0].test) and isinstance(gen[1], Completion):
                    grading_now.append(grader.submit(finish, gen, cost, judge))
                else:
                    emit(finish(gen, cost, judge))
                while grading_now and grading_now[0].done():
                    emit(grading_now.pop(0).result())
            for fut in grading_now:
                emit(fut.result())
        given = given_for(compared, cost, judge)
        for gen in compared:
            emit(finish(gen, cost, judge, given))
        return
    deferred: list[Generated] = []
    for gen in iterate(todo, provider, parallel, agentic):
        if needs_judge(gen[0].test) and isinstance(gen[1], Completion):
            deferred.append(gen)
        else:
            emit(finish(gen, cost, judge))
    # By rubric, then by prompt: the two arms' judge calls for one test share both.
    deferred.sort(key=lambda g: (rubric_key(g[0]), g[0].prompt))
    given = given_for(deferred, cost, judge)
    for gen in deferred:
        emit(finish(gen, cost, judge, given))
