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
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skilleval import __version__
from skilleval.assertions.api import Stats
from skilleval.engine.base import Completion, Provider
from skilleval.errors import ProviderError
from skilleval.exitcodes import ExitCode
from skilleval.runner import grade as grading
from skilleval.runner.plan import Job, plan, select
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


@dataclass
class RunOutcome:
    """A finished (or interrupted) run."""

    document: dict[str, Any]
    run_dir: RunDir
    exit_code: ExitCode
    records: list[Record] = field(default_factory=list)


class NoTestsSelected(Exception):
    """The filters matched nothing."""


def _stats(c: Completion) -> Stats:
    return Stats(
        prompt_tokens=c.prompt_tokens,
        completion_tokens=c.completion_tokens,
        latency_ms=c.latency_ms,
        cached=c.cached,
        finish_reason=c.finish_reason,
    )


def _record_error(job: Job, message: str, messages: Sequence[dict[str, str]] = ()) -> Record:
    return Record(
        test_id=job.test.id,
        arm=job.arm,
        trial=job.trial,
        status="error",
        score=0.0,
        output="",
        prompt=job.prompt,
        messages=tuple(messages),
        asserts=(),
        stats={},
        error=message,
    )


def _grade_job(job: Job, completion: Completion, extra: dict[str, Any]) -> Record:
    assert job.request is not None
    messages = tuple(m.to_json() for m in job.request.messages)
    subject = grading.Subject(
        output=completion.text,
        prompt=job.prompt,
        messages=messages,
        stats=_stats(completion),
        arm=job.arm,
        trial=job.trial,
        extra=extra,
    )
    graded = grading.grade(job.test, subject)
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


def _execute(job: Job, provider: Provider, extra: dict[str, Any]) -> Record:
    if job.request is None:
        return _record_error(job, job.error or "prompt could not be rendered")
    try:
        completion = provider.complete(job.request)
    except ProviderError as exc:
        return _record_error(job, str(exc), [m.to_json() for m in job.request.messages])
    return _grade_job(job, completion, extra)


def build_provider(suite: Suite, options: RunOptions) -> Provider:
    if options.provider is not None:
        return options.provider
    from skilleval.engine.cache import CachingProvider, ResponseCache
    from skilleval.engine.factory import create_provider

    inner = create_provider(suite.model, home=options.home, jobs=options.jobs)
    cache = ResponseCache(options.home / "cache.db") if options.use_cache else None
    return CachingProvider(inner, cache)


def run_suite(suite: Suite, options: RunOptions) -> RunOutcome:
    """Run ``suite`` and write its run directory; never raises for model failures."""
    tests = select(suite.tests, options.filters)
    if not tests:
        raise NoTestsSelected(", ".join(options.filters))
    arms = ["default"]
    jobs = plan(suite, tests, arms, {"default": None})
    run_dir = RunDir.create(options.home, suite.path.stem)
    provider = build_provider(suite, options)
    started = dt.datetime.now(dt.UTC)
    t0 = time.perf_counter()
    records: dict[tuple[str, str, int], Record] = {}
    interrupted = False
    extra: dict[str, Any] = {"cost": 0.0 if suite.model.kind != "openai" else None}
    try:
        for record in _iterate(jobs, provider, options.jobs, extra):
            records[record.key] = record
            run_dir.append(record.to_json())
            if options.progress:
                options.progress(record, len(records), len(jobs))
    except KeyboardInterrupt:
        interrupted = True
    finally:
        run_dir.close()
    ordered = [records[j.key] for j in jobs if j.key in records]
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
    )
    run_dir.write_json("results.json", document)
    run_dir.mark_latest()
    code = ExitCode.INTERRUPTED if interrupted else ExitCode(document["gate"]["exit_code"])
    return RunOutcome(document, run_dir, code, ordered)


def _iterate(jobs: Sequence[Job], provider: Provider, parallel: int, extra: dict[str, Any]) -> Any:
    width = max(1, min(parallel, getattr(provider, "max_concurrency", 1)))
    if width == 1:
        for job in jobs:
            yield _execute(job, provider, extra)
        return
    with ThreadPoolExecutor(max_workers=width) as pool:
        pending: set[Future[Record]] = set()
        queue = list(jobs)
        while queue or pending:
            while queue and len(pending) < width * 2:
                pending.add(pool.submit(_execute, queue.pop(0), provider, extra))
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                yield fut.result()


def _calls(provider: Provider, records: Sequence[Record], timed: bool) -> dict[str, Any]:
    gen = [r.stats for r in records if r.stats]
    completion_tokens = sum(int(s.get("completion_tokens", 0)) for s in gen)
    latency = sum(float(s.get("latency_ms", 0.0)) for s in gen if not s.get("cached"))
    return {
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


def gate(suite: Suite, summary: dict[str, Any], primary: str, interrupted: bool) -> dict[str, Any]:
    """Decide the exit code: errors first, then the suite type's gate."""
    arm = summary["arms"][primary]
    reasons: list[str] = []
    checks: list[dict[str, Any]] = []
    rate = arm["pass_rate"]
    if suite.type == "regression":
        ok = rate is not None and rate >= suite.threshold
        checks.append(
            {"name": "pass_rate", "required": f">= {suite.threshold}", "actual": rate, "passed": ok}
        )
        if not ok:
            shown = "n/a" if rate is None else f"{rate:.1%}"
            reasons.append(f"pass rate {shown} is below the threshold {suite.threshold:.0%}")
    errors = summary["errors"]
    if interrupted:
        code = ExitCode.INTERRUPTED
        reasons.append("the run was interrupted")
    elif errors:
        code = ExitCode.RUNTIME
        reasons.append(f"{errors} result(s) are errors, so the scores are incomplete")
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
) -> dict[str, Any]:
    summary = summarize(records, arms)
    primary = "on" if "on" in arms else arms[0]
    try:
        identity = provider.identity().to_json()
    except ProviderError as exc:
        identity = {"kind": suite.model.kind, "name": suite.model.label, "error": str(exc)}
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
        "arms": list(arms),
        "primary_arm": primary,
        "records": [r.to_json() for r in records],
        "summary": summary,
        "calls": _calls(provider, records, suite.model.kind in ("gguf", "openai")),
        "gate": gate(suite, summary, primary, interrupted),
        "timing": {
            "started_at": started.isoformat(timespec="seconds"),
            "duration_s": round(seconds, 3),
        },
    }
