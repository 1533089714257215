"""Run a loaded suite end to end: generate, grade, stream, aggregate, gate.

Data flow::

    Suite ──plan──▶ Jobs (test × arm × trial, grouped by arm for prefix reuse)
          ──provider (through the cache)──▶ Completions
          ──grade──▶ Records ──▶ results.jsonl (one line each, as they finish)
          ──summarize + gate──▶ results.json, exit code
"""

from __future__ import annotations

import datetime as dt
import platform
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skilleval import __version__
from skilleval.assertions.api import Judge
from skilleval.engine.base import Completion, Provider
from skilleval.errors import ProviderError, SkillevalError
from skilleval.exitcodes import ExitCode
from skilleval.runner import agentic as agentic_mod
from skilleval.runner import analysis
from skilleval.runner import arms as arms_mod
from skilleval.runner import grade as grading
from skilleval.runner import resume as resume_mod
from skilleval.runner.arms import TriggerResult
from skilleval.runner.plan import Job, messages_for, plan, select
from skilleval.runner.records import Record
from skilleval.runner.rundir import RunDir
from skilleval.runner.summary import summarize
from skilleval.suite.model import Suite, TestCase

RESULTS_VERSION = 1

Progress = Callable[[Record, int, int], None]


@dataclass
class RunOptions:
    """How to run, from the command line."""

    home: Path
    filters: tuple[str, ...] = ()
    jobs: int = 1
    use_cache: bool = True
    progress: Progress | None = None
    provider: Provider | None = None
    """Use this provider instead of building one (tests and watch mode)."""
    judge_provider: Provider | None = None
    """Use this provider as the judge instead of building one."""
    resume: Path | None = None
    """Finish this interrupted run directory instead of starting a new one."""
    force: bool = False
    """Resume even when the suite changed since the run started."""
    warn: Callable[[str], None] | None = None
    """Where to send warnings (a skipped corrupt line …)."""


@dataclass
class RunOutcome:
    """A finished (or interrupted) run."""

    document: dict[str, Any]
    run_dir: RunDir
    exit_code: ExitCode
    records: list[Record] = field(default_factory=list)


class NoTestsSelected(Exception):
    """The filters matched nothing."""


def _grade_job(
    job: Job, completion: Completion, extra: dict[str, Any], judge: Judge | None = None
) -> Record:
    assert job.request is not None
    messages = tuple(m.to_json() for m in job.request.messages)
    subject = grading.Subject(
        output=completion.text,
        prompt=job.prompt,
        messages=messages,
        stats=grading.stats_of(completion),
        arm=job.arm,
        trial=job.trial,
        cost=extra.get("cost"),
    )
    graded = grading.grade(job.test, subject, judge)
    return Record(
        test_id=job.test.id,
        arm=job.arm,
        trial=job.trial,
        status=graded.status,
        score=graded.score,
        output=completion.text,
        prompt=job.prompt,
        messages=messages,
        asserts=graded.asserts,
        stats=completion.to_json(),
        tiers=graded.tiers,
        metrics=graded.metrics,
    )


Generated = tuple[Job, "Completion | str | Record"]
"""A job and its completion, or the error message that replaced it; an agentic job comes
back already graded, because its workspace is gone once the job returns."""

RunAgentic = Callable[[Job], Record]


def _generate(job: Job, provider: Provider, agentic: RunAgentic | None = None) -> Generated:
    if agentic is not None and agentic_mod.is_agentic(job):
        return job, agentic(job)
    if job.request is None:
        return job, job.error or "prompt could not be rendered"
    try:
        return job, provider.complete(job.request)
    except ProviderError as exc:
        return job, str(exc)


def _finish(gen: Generated, extra: dict[str, Any], judge: Judge | None) -> Record:
    job, result = gen
    if isinstance(result, Record):
        return result
    if isinstance(result, str):
        msgs = [m.to_json() for m in job.request.messages] if job.request else []
        return Record.failed(job.key, job.prompt, result, msgs)
    return _grade_job(job, result, extra, judge)


def build_provider(suite: Suite, options: RunOptions) -> Provider:
    if options.provider is not None:
        return options.provider
    from skilleval.engine.cache import CachingProvider, ResponseCache
    from skilleval.engine.factory import create_provider

    inner = create_provider(suite.model, home=options.home, jobs=options.jobs)
    cache = ResponseCache(options.home / "cache.db") if options.use_cache else None
    return CachingProvider(inner, cache)


def build_judge(
    suite: Suite, options: RunOptions, generator: Provider, *, force: bool = False
) -> Judge | None:
    """The grader for model-tier assertions; the generator's model unless ``judge:`` is set."""
    if not force and not any(a.spec.tier == "model" for t in suite.tests for a in t.every_assert):
        return None
    from skilleval.judge import JudgeClient

    if options.judge_provider is not None:
        return JudgeClient(options.judge_provider, seed=suite.decoding.seed)
    if suite.judge is None or suite.judge == suite.model:
        return JudgeClient(generator, seed=suite.decoding.seed)
    options_for_judge = RunOptions(
        home=options.home, jobs=options.jobs, use_cache=options.use_cache
    )
    from dataclasses import replace

    return JudgeClient(
        build_provider(replace(suite, model=suite.judge), options_for_judge),
        seed=suite.decoding.seed,
    )


def _separate_judge(suite: Suite, judge: Judge | None) -> bool:
    """Whether grading can overlap generation: the judge is a model of its own."""
    return judge is not None and suite.judge is not None and suite.judge != suite.model


def _needs_judge(test: TestCase) -> bool:
    return any(a.spec.tier == "model" for a in test.asserts)


def _rubric_key(job: Job) -> tuple[str, ...]:
    # Judge calls that share a rubric (and prompt template) share a prompt prefix: grade them
    # back to back so the KV cache is reused.
    from skilleval.suite import template

    for a in job.test.asserts:
        if a.spec.tier == "model":
            try:
                value = template.render_value(a.value, job.test.vars)
            except template.TemplateProblem:
                value = a.value
            prompt = a.options.get("rubricPrompt")
            return (repr(prompt), a.type, repr(value), repr(a.options.get("reference")))
    return ("",)


def run_suite(suite: Suite, options: RunOptions) -> RunOutcome:
    """Run ``suite`` and write its run directory; never raises for model failures."""
    tests = select(suite.tests, options.filters)
    if not tests:
        raise NoTestsSelected(", ".join(options.filters))
    arms = list(suite.arms)
    manifest = resume_mod.manifest(suite, options.filters)
    records: dict[tuple[str, str, int], Record] = {}
    if options.resume is not None:
        run_dir = RunDir(options.resume)
        resume_mod.check_manifest(run_dir, manifest, force=options.force)
        records = resume_mod.finished_records(run_dir, options.warn)
    else:
        run_dir = RunDir.create(options.home, suite.path.stem)
        run_dir.write_json("run.json", manifest)
    provider = build_provider(suite, options)
    started = dt.datetime.now(dt.UTC)
    t0 = time.perf_counter()
    triggers: dict[str, TriggerResult] = {}
    interrupted = False
    extra: dict[str, Any] = {"cost": 0.0 if suite.model.kind != "openai" else None}
    jobs: list[Job] = []
    total = len(tests) * len(arms) * suite.trials

    def emit(record: Record) -> None:
        trig = triggers.get(record.test_id)
        if trig is not None and suite.skill is not None:
            from dataclasses import replace

            record = replace(record, trigger=trig.to_json(suite.skill.name))
        records[record.key] = record
        run_dir.append(record.to_json())
        if options.progress:
            options.progress(record, len(records), total)

    # SIGTERM unwinds an agentic run as Ctrl-C does, so its workspaces are removed.
    agentic_suite = any(t.agent is not None for t in tests)
    restore = agentic_mod.sigterm_as_interrupt() if agentic_suite else None
    try:
        judge = build_judge(suite, options, provider)
        triggers = _measure_triggers(suite, tests, provider)
        systems = arms_mod.system_prompts(suite)

        def system_for(arm: str, test: TestCase) -> str | None:
            if arm == "routed":
                trig = triggers.get(test.id)
                chosen = trig.chosen if trig else None
                return systems["on"] if suite.skill and chosen == suite.skill.name else None
            return systems.get(arm)

        jobs = plan(suite, tests, arms, system_for)
        todo = [j for j in jobs if j.key not in records]
        deferred: list[Generated] = []

        def agentic(job: Job) -> Record:
            return agentic_mod.run_job(job, provider, judge, extra.get("cost"))

        if _separate_judge(suite, judge):
            # The judge is another model: grade while the generator keeps generating.
            with ThreadPoolExecutor(max_workers=1) as grader:
                grading_now: list[Future[Record]] = []
                for gen in _iterate(todo, provider, options.jobs, agentic):
                    if _needs_judge(gen[0].test) and isinstance(gen[1], Completion):
                        grading_now.append(grader.submit(_finish, gen, extra, judge))
                    else:
                        emit(_finish(gen, extra, judge))
                    while grading_now and grading_now[0].done():
                        emit(grading_now.pop(0).result())
                for fut in grading_now:
                    emit(fut.result())
        else:
            # One model does both: generate everything first, then grade grouped by rubric,
            # so judge calls that share a prompt prefix run back to back.
            for gen in _iterate(todo, provider, options.jobs, agentic):
                if _needs_judge(gen[0].test) and isinstance(gen[1], Completion):
                    deferred.append(gen)
                else:
                    emit(_finish(gen, extra, judge))
            # By rubric, then by prompt: the two arms' judge calls for one test share both.
            deferred.sort(key=lambda g: (_rubric_key(g[0]), g[0].prompt))
            for gen in deferred:
                emit(_finish(gen, extra, judge))
    except KeyboardInterrupt:
        interrupted = True
    finally:
        run_dir.close()
        if restore is not None:
            restore()
    ordered = [records[j.key] for j in jobs if j.key in records]
    overfit = None
    if suite.skill is not None and suite.judge is not None and not interrupted:
        overfit = _overfit(suite, options, provider, judge)
    document = build_document(
        suite,
        tests,
        arms,
        ordered,
        provider,
        started,
        time.perf_counter() - t0,
        run_dir,
        interrupted,
        list(triggers.values()),
        judge,
        overfit,
    )
    run_dir.write_json("results.json", document)
    run_dir.mark_latest()
    code = ExitCode.INTERRUPTED if interrupted else ExitCode(document["gate"]["exit_code"])
    return RunOutcome(document, run_dir, code, ordered)


def _overfit(
    suite: Suite, options: RunOptions, generator: Provider, judge: Judge | None
) -> dict[str, Any] | None:
    """The overfitting judge's report on the eval itself: informational, never a gate."""
    from skilleval.lint.overfit import overfit_report

    grader = judge or build_judge(suite, options, generator, force=True)
    if grader is None:
        return None
    try:
        return overfit_report(suite, grader)
    except SkillevalError as exc:
        return {
            "severity": "Unknown",
            "score": None,
            "per_element": None,
            "holistic": None,
            "items": [],
            "reason": f"the overfitting judge could not run: {exc}",
            "unclassified": [],
        }


def _measure_triggers(
    suite: Suite, tests: Sequence[TestCase], provider: Provider
) -> dict[str, TriggerResult]:
    """Route every test that needs it, back to back (they share the router prefix)."""
    if suite.skill is None:
        return {}
    everyone = "routed" in suite.arms
    out: dict[str, TriggerResult] = {}
    for test in tests:
        if test.should_trigger is None and not everyone:
            continue
        try:
            _, prompt = messages_for(test, None)
        except Exception as exc:
            out[test.id] = TriggerResult(test.id, test.should_trigger, None, None, error=str(exc))
            continue
        out[test.id] = arms_mod.measure(provider, suite, test, prompt)
    return out


def _iterate(
    jobs: Sequence[Job], provider: Provider, parallel: int, agentic: RunAgentic | None = None
) -> Iterator[Generated]:
    width = max(1, min(parallel, getattr(provider, "max_concurrency", 1)))
    if width == 1:
        for job in jobs:
            yield _generate(job, provider, agentic)
        return
    with ThreadPoolExecutor(max_workers=width) as pool:
        pending: set[Future[Generated]] = set()
        queue = list(jobs)
        while queue or pending:
            while queue and len(pending) < width * 2:
                pending.add(pool.submit(_generate, queue.pop(0), provider, agentic))
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                yield fut.result()


def _calls(
    provider: Provider, records: Sequence[Record], timed: bool, judge: Judge | None = None
) -> dict[str, Any]:
    gen = [r.stats for r in records if r.stats]
    completion_tokens = sum(int(s.get("completion_tokens", 0)) for s in gen)
    latency = sum(float(s.get("latency_ms", 0.0)) for s in gen if not s.get("cached"))
    judged = getattr(judge, "provider", None)
    return {
        "judge_calls": int(getattr(judged, "calls", 0)),
        "judge_cache_hits": int(getattr(judged, "hits", 0)),
        "judge_prompt_tokens": int(getattr(judged, "prompt_tokens", 0)),
        "judge_completion_tokens": int(getattr(judged, "completion_tokens", 0)),
        "judge_tokens_evaluated": int(getattr(judged, "tokens_evaluated", 0)),
        "model_calls": int(getattr(provider, "calls", sum(1 for s in gen if not s.get("cached")))),
        "cache_hits": int(getattr(provider, "hits", sum(1 for s in gen if s.get("cached")))),
        "prompt_tokens": sum(int(s.get("prompt_tokens", 0)) for s in gen),
        "completion_tokens": completion_tokens,
        "tokens_evaluated": sum(
            int(s.get("tokens_evaluated", 0)) for s in gen if not s.get("cached")
        ),
        "generation_tokens_per_s": round(
            sum(int(s.get("completion_tokens", 0)) for s in gen if not s.get("cached"))
            / (latency / 1000.0),
            2,
        )
        if latency > 0 and timed
        else None,
    }


def gate(
    suite: Suite,
    summary: dict[str, Any],
    primary: str,
    interrupted: bool,
    lift_block: dict[str, Any] | None,
    trigger_block: dict[str, Any] | None,
) -> dict[str, Any]:
    """Decide the exit code: an interrupted run, then errors, then the gate's checks."""
    errors = summary["errors"]
    checks = analysis.gate_checks(
        suite, summary["arms"][primary], lift_block, trigger_block, errors
    )
    reasons = [
        f"{c['name']} is {_shown(c['actual'])}, required {c['required']}"
        for c in checks
        if not c["passed"]
    ]
    tolerated = "max_errors" in suite.gate and errors <= int(suite.gate["max_errors"])
    if interrupted:
        code = ExitCode.INTERRUPTED
        reasons.insert(0, "the run was interrupted")
    elif errors and not tolerated:
        code = ExitCode.RUNTIME
        reasons.insert(0, f"{errors} result(s) are errors, so the scores are incomplete")
    elif any(not c["passed"] for c in checks):
        code = ExitCode.GATE_FAILED
    else:
        code = ExitCode.OK
    return {
        "type": suite.type,
        "passed": code == ExitCode.OK,
        "exit_code": int(code),
        "checks": checks,
        "reasons": reasons,
    }


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.1%}" if 0 <= value <= 1 else f"{value:g}"
    return "n/a" if value is None else str(value)


def build_document(
    suite: Suite,
    tests: Sequence[TestCase],
    arms: Sequence[str],
    records: Sequence[Record],
    provider: Provider,
    started: dt.datetime,
    seconds: float,
    run_dir: RunDir,
    interrupted: bool,
    triggers: Sequence[TriggerResult] = (),
    judge: Judge | None = None,
    overfit: dict[str, Any] | None = None,
) -> dict[str, Any]:
    summary = summarize(records, arms)
    primary = "on" if "on" in arms else arms[0]
    try:
        identity = provider.identity().to_json()
    except ProviderError as exc:
        identity = {"kind": suite.model.kind, "name": suite.model.label, "error": str(exc)}
    lift_block = analysis.lift(suite, tests, records)
    trigger_block = analysis.trigger(suite, triggers)
    judge_block = None
    if judge is not None:
        describe = getattr(judge, "describe", None)
        judge_block = describe() if callable(describe) else {"greedy": True}
        judge_block["same_as_generator"] = suite.judge is None or suite.judge == suite.model
    return {
        "version": RESULTS_VERSION,
        "skilleval": __version__,
        "run_id": run_dir.root.name,
        "status": "interrupted" if interrupted else "complete",
        "suite": {
            "path": suite.display,
            "description": suite.description,
            "type": suite.type,
            "threshold": suite.threshold,
            "trials": suite.trials,
            "tests": len(tests),
        },
        "environment": {
            "model": identity,
            "model_spec": suite.model.to_json(),
            "decoding": suite.decoding.to_json(),
            "trials": suite.trials,
            "python": platform.python_version(),
            "platform": platform.platform(terse=True),
            "registry": list(suite.registry_listing),
        },
        "skill": _skill_block(suite),
        "judge": judge_block,
        "arms": list(arms),
        "primary_arm": primary,
        "records": [r.to_json() for r in records],
        "summary": summary,
        "lift": lift_block,
        "trigger": trigger_block,
        "reliability": analysis.reliability(suite, records),
        "overfit": overfit,
        "calls": _calls(provider, records, suite.model.kind in ("gguf", "openai"), judge),
        "gate": gate(suite, summary, primary, interrupted, lift_block, trigger_block),
        "timing": {
            "started_at": started.isoformat(timespec="seconds"),
            "duration_s": round(seconds, 3),
        },
    }


def _skill_block(suite: Suite) -> dict[str, Any] | None:
    if suite.skill is None:
        return None
    return {
        "name": suite.skill.name,
        "description": suite.skill.description,
        "path": suite.skill.display,
        "digest": suite.skill.digest,
        "distractors": [s.name for s in suite.distractors],
    }
