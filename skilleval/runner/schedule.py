"""Generate and grade jobs: in order, in parallel, or with grading deferred by rubric."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from skilleval.api import Judge, Verdict
from skilleval.engine.base import Completion, Provider, batch_width, complete_all, joins_calls
from skilleval.errors import ProviderError
from skilleval.results.records import Message, Record
from skilleval.runner import compare
from skilleval.runner import grade as grading
from skilleval.runner.calls import record_stats
from skilleval.runner.plan import Job, by_test, is_agentic
from skilleval.suite import template
from skilleval.suite.model import TestCase

if TYPE_CHECKING:
    from concurrent.futures import Future

CHUNK = 4
"""Jobs handed to a batching provider at once, as a multiple of its width: the batch refills
its free slots from them, and their records are written when the chunk is done."""

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
        skills=job.skills,
        logprobs=completion.token_logprobs,
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
    if agentic is not None and is_agentic(job):
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


def batched(
    jobs: Sequence[Job], provider: Provider, width: int, agentic: RunAgentic | None = None
) -> Iterator[Generated]:
    """Generate ``jobs`` in chunks, each chunk's model calls as one batch, in plan order.

    The chunks depend only on the plan and on what is cached, so a run gives the same batches
    every time; and the batched replies equal the one-at-a-time ones (docs/engine.md)."""
    size = width * CHUNK
    for start in range(0, len(jobs), size):
        chunk = jobs[start : start + size]
        asks = [
            j
            for j in chunk
            if j.request is not None and not (agentic is not None and is_agentic(j))
        ]
        answers = dict(
            zip(
                (j.key for j in asks),
                complete_all(provider, [j.request for j in asks if j.request is not None]),
                strict=True,
            )
        )
        for job in chunk:
            answer = answers.get(job.key)
            if answer is None:
                yield generate(job, provider, agentic)
            elif isinstance(answer, ProviderError):
                yield job, str(answer)
            else:
                yield job, answer


def iterate(
    jobs: Sequence[Job], provider: Provider, parallel: int, agentic: RunAgentic | None = None
) -> Iterator[Generated]:
    lanes = batch_width(provider)
    if joins_calls(provider):
        # Continuous batching: enough calls in flight that a slot that frees finds a request
        # waiting; replies come back (and are graded) as each finishes. A test's arms are
        # asked together, so the judge calls grading them come close enough to share cells.
        width = int(getattr(provider, "max_concurrency", 1))
        jobs = by_test(jobs)
    elif lanes > 1:
        yield from batched(jobs, provider, lanes, agentic)
        return
    else:
        width = max(1, min(parallel, getattr(provider, "max_concurrency", 1)))
    if width == 1:
        for job in jobs:
            yield generate(job, provider, agentic)
        return
    # lazy: start-up time (threads only for parallel calls)
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

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

    Grading overlaps generation when the judge is a model of its own (``separate``), or
    when its model joins concurrent calls into one continuously fed batch: a judge call then
    takes the next free slot between generations, and a long judge reply no longer starts
    only after the last generation. Otherwise one model answers one call at a time:
    everything is generated first, then graded grouped by rubric, so judge calls that share
    a prompt prefix run back to back.
    """
    # A judge that batches answers calls that arrive together in one batch: grade as many
    # jobs at once as it decodes together. Its replies do not depend on the company they kept.
    graders = judge_width(judge)
    if separate or joins_calls(getattr(judge, "provider", None)):
        from concurrent.futures import ThreadPoolExecutor  # lazy: start-up time

        # Outputs compared across prompts wait for the rest of their group: until the end.
        compared: list[Generated] = []
        with ThreadPoolExecutor(max_workers=graders) as grader:
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
        # A test compared across prompts (max-score needs no judge) waits for its group too.
        waits = needs_judge(gen[0].test) or compare.compares(gen[0].test)
        if waits and isinstance(gen[1], Completion):
            deferred.append(gen)
        else:
            emit(finish(gen, cost, judge))
    # By rubric, then by prompt: the two arms' judge calls for one test share both.
    deferred.sort(key=lambda g: (rubric_key(g[0]), g[0].prompt))
    given = given_for(deferred, cost, judge)
    if graders <= 1:
        for gen in deferred:
            emit(finish(gen, cost, judge, given))
        return
    from concurrent.futures import ThreadPoolExecutor  # lazy: start-up time

    with ThreadPoolExecutor(max_workers=graders) as pool:
        for record in pool.map(lambda gen: finish(gen, cost, judge, given), deferred):
            emit(record)


def judge_width(judge: Judge | None) -> int:
    """How many judge calls to make at once: as many as the judge's model takes in flight
    when it batches concurrent calls, else as many as it decodes together (1 when it does
    not batch)."""
    provider = getattr(judge, "provider", None)
    if joins_calls(provider):
        return int(getattr(provider, "max_concurrency", 1))
    return max(1, int(getattr(provider, "batch_width", 1)))
