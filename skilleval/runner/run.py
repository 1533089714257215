"""Run a loaded suite end to end: generate, grade, stream, aggregate, gate.

Data flow::

    Suite ──plan──▶ Jobs (test × arm × trial, grouped by arm for prefix reuse)
          ──provider (through the cache)──▶ Completions          (providers, schedule)
          ──grade──▶ Records ──▶ results.jsonl (one line each, as they finish)
          ──summarize + gate──▶ Run ──▶ results.json, exit code (document, gate)
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from skilleval.api import Judge
from skilleval.engine.base import Provider, Request, complete_all
from skilleval.errors import NoTestsSelected, SkillevalError
from skilleval.exitcodes import ExitCode
from skilleval.results.agent import RecordExtra
from skilleval.results.codec import decode
from skilleval.results.model import Overfit, RouterFitness
from skilleval.results.records import Record
from skilleval.runner import arms as arms_mod
from skilleval.runner import resume as resume_mod
from skilleval.runner import trigger_rule
from skilleval.runner.arms import ContentFree, TriggerResult
from skilleval.runner.document import build_run
from skilleval.runner.judgefit import judge_fitness
from skilleval.runner.options import Progress, RunOptions, RunOutcome
from skilleval.runner.plan import Job, messages_for, plan, select
from skilleval.runner.providers import build_judge, build_provider, separate_judge
from skilleval.runner.rundir import RunDir
from skilleval.runner.schedule import run_jobs
from skilleval.runner.shard import PART_FILE, part_json, shard_manifest, shard_tests
from skilleval.runner.sidebyside_fit import side_by_side_fitness, uses_side_by_side
from skilleval.suite.model import Suite, TestCase
from skilleval.util.installed import keep_pending
from skilleval.util.signals import sigterm_as_interrupt

__all__ = ["NoTestsSelected", "Progress", "RunOptions", "RunOutcome", "router_fitness", "run_suite"]


def run_suite(suite: Suite, options: RunOptions) -> RunOutcome:
    """Run ``suite`` and write its run directory; never raises for model failures."""
    tests = select(suite.tests, options.filters)
    if not tests:
        raise NoTestsSelected(", ".join(options.filters))
    saved_shard = _saved_shard(options.resume) if options.resume is not None else None
    if saved_shard is not None:
        # Resuming a shard: exactly the tests it started with, whatever --shard says.
        tests = [t for t in tests if t.id in saved_shard]
    elif options.shard is not None:
        # A shard with no tests still writes its (empty) part, so that merge finds all N.
        tests = shard_tests(tests, options.shard, options.shard_costs)
    arms = list(suite.arms)
    manifest = resume_mod.manifest(suite, options.filters)
    records: dict[tuple[str, str, int], Record] = {}
    # Before the run directory: a model that cannot load stops the run with nothing written.
    provider = build_provider(suite, options)
    if options.shard is not None:
        manifest["shard"] = shard_manifest(
            suite, options.shard, tests, _identity_json(provider), options.overrides
        )
    judge = build_judge(suite, options, provider)
    fitness = compared = None
    if judge is not None:
        seed = getattr(judge, "seed", suite.decoding.seed)
        fitness = judge_fitness(
            judge, options.home, seed=seed, check=options.judge_check, notice=options.notice
        )
        if uses_side_by_side(suite):
            compared = side_by_side_fitness(
                judge, options.home, seed=seed, check=options.judge_check, notice=options.notice
            )
    if options.resume is not None:
        run_dir = RunDir(options.resume)
        resume_mod.check_manifest(run_dir, manifest, force=options.force)
        records = resume_mod.finished_records(run_dir, options.warn)
    else:
        run_dir = RunDir.create(options.home, suite.path.stem)
        run_dir.write_json("run.json", manifest)
        keep_pending(options.home)  # what loading found out before the home existed
    started = dt.datetime.now(dt.UTC)
    t0 = time.perf_counter()
    triggers: dict[str, TriggerResult] = {}
    content_free: ContentFree | None = None
    interrupted = False
    # What a call costs, for the `cost` assertion: nothing, or unknown when a provider says so.
    capabilities = options.capabilities or suite.model.provider.capabilities
    cost = None if capabilities.costed else 0.0
    jobs: list[Job] = []
    total = len(tests) * len(arms) * suite.trials

    metadata = {t.id: dict(t.metadata) for t in tests if t.metadata}

    def emit(record: Record) -> None:
        if record.test_id in metadata and record.metadata is None:
            # The test's `metadata:`, carried into its results as promptfoo does.
            extra = replace(record.extra or RecordExtra(), metadata=metadata[record.test_id])
            record = replace(record, extra=extra)
        trig = triggers.get(record.test_id)
        if trig is not None and suite.skill is not None:
            record = replace(record, trigger=trig.outcome(suite.skill.name))
        records[record.key] = record
        run_dir.append(record)
        if options.progress:
            options.progress(record, len(records), total)

    # SIGTERM unwinds every run as Ctrl-C does: workspaces and JavaScript workers go, what
    # finished is written, and the run ends INTERRUPTED (130).
    restore = sigterm_as_interrupt()
    try:
        triggers = _measure_triggers(suite, tests, provider)
        if suite.trigger.calibrate and triggers:
            # Calibration subtracts scores: a provider that declares none is not asked.
            scored = capabilities.scores
            content_free = arms_mod.content_free(provider, suite) if scored else arms_mod.UNSCORED
        systems = arms_mod.system_prompts(suite)

        def system_for(arm: str, test: TestCase) -> str | None:
            if arm == "routed":
                trig = triggers.get(test.id)
                chosen = trig.chosen if trig else None
                return systems["on"] if suite.skill and chosen == suite.skill.name else None
            return systems.get(arm)

        jobs = [
            replace(job, skills=arms_mod.skills_chosen(triggers.get(job.test.id)))
            for job in plan(suite, tests, arms, system_for, logprobs=capabilities.token_logprobs)
        ]
        todo = [j for j in jobs if j.key not in records]

        def agentic(job: Job) -> Record:
            from skilleval.runner.agentic import run_job  # lazy: start-up time

            return run_job(job, provider, judge, cost)

        separate = separate_judge(suite, judge)
        run_jobs(todo, provider, options.jobs, agentic, cost, judge, separate, emit)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        run_dir.close()
        restore()
    ordered = [records[j.key] for j in jobs if j.key in records]
    overfit = None
    # The overfitting judge reads the suite, not the records: of a split run, the first
    # shard asks it, once.
    first_part = options.shard is None or options.shard.index == 1
    if suite.skill is not None and suite.judge is not None and not interrupted and first_part:
        overfit = _overfit(suite, options, provider, judge)
    run = build_run(
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
        judge_fitness=fitness,
        side_by_side=compared,
        content_free=content_free,
        timed=capabilities.timed,
        scores=capabilities.scores,
        router=router_fitness(options, provider) if triggers and capabilities.measured else None,
    )
    run_dir.write_results(run)
    if options.shard is not None or saved_shard is not None:
        # The router's full-precision scores (the records keep them rounded), the counters
        # and the judge's blocks, so that merge recomputes the whole run's figures exactly.
        run_dir.write_json(PART_FILE, part_json(list(triggers.values()), content_free, run))
    run_dir.mark_latest()
    gate_code = ExitCode(run.gate.exit_code) if run.gate is not None else ExitCode.RUNTIME
    code = ExitCode.INTERRUPTED if interrupted else gate_code
    return RunOutcome(run, run_dir, code, ordered)


def _saved_shard(run_dir: Path) -> set[str] | None:
    """The tests of the shard an interrupted run directory ran, or None if it ran all."""
    shard = resume_mod.read_manifest(run_dir).get("shard")
    if not isinstance(shard, dict) or not isinstance(shard.get("tests"), list):
        return None
    return {str(test_id) for test_id in shard["tests"]}


def _identity_json(provider: Provider) -> dict[str, Any] | None:
    """The model's identity as the results record it; None when it cannot be told."""
    try:
        return provider.identity().to_json()
    except SkillevalError:
        return None


def _overfit(
    suite: Suite, options: RunOptions, generator: Provider, judge: Judge | None
) -> Overfit | None:
    """The overfitting judge's report on the eval itself: informational, never a gate."""
    # lazy: start-up time (only a suite with a skill and a judge of its own is classified)
    from skilleval.judge.overfit import overfit_report

    grader = judge or build_judge(suite, options, generator, force=True)
    if grader is None:
        return None
    try:
        return decode(Overfit, overfit_report(suite, grader))
    except SkillevalError as exc:
        return Overfit(
            severity="Unknown",
            score=None,
            per_element=None,
            holistic=None,
            items=(),
            reason=f"the overfitting judge could not run: {exc}",
            unclassified=(),
        )


def router_fitness(options: RunOptions, provider: Provider) -> RouterFitness | None:
    """The router's verdict from a kept ``router-check``; not-checked when there is none.

    Asked only of a provider whose routing is measured (``Capabilities.measured``): echo's
    and scripted replies are written, not measured.
    """
    try:
        identity = provider.identity()
    except SkillevalError:
        return None
    # lazy: start-up time (only a suite that routes reads the router's verdict)
    from skilleval.runner.routercheck import NOT_CHECKED, cached_fitness

    return cached_fitness(options.home, identity) or NOT_CHECKED


def _measure_triggers(
    suite: Suite, tests: Sequence[TestCase], provider: Provider
) -> dict[str, TriggerResult]:
    """Route every test that needs it, back to back (they share the router prefix)."""
    if suite.skill is None:
        return {}
    everyone = "routed" in suite.arms
    out: dict[str, TriggerResult] = {}
    asks: list[tuple[TestCase, list[Request]]] = []
    for test in tests:
        if test.should_trigger is None and not everyone:
            continue
        try:
            _, prompt = messages_for(test, None)
        except Exception as exc:
            out[test.id] = TriggerResult(test.id, test.should_trigger, None, None, error=str(exc))
            continue
        asks.append(
            (test, trigger_rule.requests(suite, arms_mod.trigger_request(suite, test, prompt)))
        )
    # One batch: a batching model scores them together, the router prefix evaluated once.
    answers = iter(complete_all(provider, [r for _, each in asks for r in each]))
    for test, each in asks:
        got = [next(answers) for _ in each]
        out[test.id] = trigger_rule.decide(suite, test, each, got)
    return {t.id: out[t.id] for t in tests if t.id in out}
