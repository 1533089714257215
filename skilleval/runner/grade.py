"""Apply a test's assertions to one output, and score the test.

Negation is applied here, once, for every type: a negated pass becomes a fail and the score
becomes 1 − score. An assertion that raises, or that says it could not be evaluated, is an
``error``: neither a pass nor a fail.

The scoring rule: a test passes when every assertion with weight > 0 passes; when the test
sets ``threshold``, it passes when its weighted score reaches the threshold instead. An
error in any assertion with weight > 0 makes the whole result an ``error``.

A user's check (a plugin's assertion type, or ``python``) runs guarded: in a thread of its
own with a wall-clock limit (:data:`TIME_LIMIT`, :data:`MODEL_TIME_LIMIT` for the model tier,
whose time includes the judge's), its prints sent to stderr, on its own deep copy of the
test's vars, config and options. Whatever it raises, ``SystemExit`` included, and whatever it
returns that is not a valid verdict, is an ``error`` naming the file and line.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from skilleval.api import Check, Judge, Stats, Verdict
from skilleval.assertions.normalize import normalize_result
from skilleval.engine.base import Completion
from skilleval.errors import CannotEvaluate
from skilleval.expr import compile_expr
from skilleval.results.codec import encode
from skilleval.results.records import AssertionResult, Status
from skilleval.sandbox.usercode import call_limited, raised_at
from skilleval.suite import template, transforms
from skilleval.suite.model import AssertionEntry, TestCase, Transform
from skilleval.trajectory import Step
from skilleval.util.frozen import frozen
from skilleval.util.jsontext import loads_or_none
from skilleval.util.scrub import clip

MAX_REASON_CHARS = 10_000
"""The longest reason or error message one check may record; longer ones are cut, saying so."""

TIME_LIMIT: Final = 60.0
"""Seconds one call of a user's deterministic check may take before it is an ``error``."""
MODEL_TIME_LIMIT: Final = 600.0
"""Seconds for a user's model-tier check, which waits for the judge on a CPU."""
USER_CODE_TYPES: Final = frozenset({"python"})
"""Built-in types that run the suite author's code."""


@frozen
class Subject:
    """The output being graded, and what produced it."""

    output: str
    prompt: str
    messages: tuple[Mapping[str, str], ...]
    stats: Stats
    arm: str
    trial: int
    cost: float | None = None
    """US dollars; None when the provider does not report it."""
    trajectory: tuple[Step, ...] | None = None
    """The agent's steps (agentic tests only)."""
    workspace: Path | None = None
    """The agent's workspace (agentic tests only)."""
    skills: tuple[str, ...] | None = None
    """The router's decision for the test (see :attr:`~skilleval.api.Check.skills`)."""
    logprobs: tuple[float, ...] | None = None


@frozen
class Graded:
    status: Status
    score: float
    asserts: tuple[AssertionResult, ...]
    tiers: Mapping[str, Status]
    metrics: Mapping[str, float]


def stats_of(completion: Completion) -> Stats:
    """What an assertion may know about the call that produced an output."""
    return Stats(
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        latency_ms=completion.latency_ms,
        cached=completion.cached,
        finish_reason=completion.finish_reason,
    )


def apply_transform(
    transform: Transform,
    output: str,
    vars_: Mapping[str, Any],
    stats: Stats,
    *,
    current: Any = None,
    prompt: str = "",
) -> Any:
    """Run a transform; returns the new value (a string, or any JSON-like value).

    A JavaScript transform gets, as promptfoo's do, ``current`` (an earlier transform's
    result) when there is one, else the output, and a ``context`` with ``vars`` and ``prompt``.
    """
    if transform.kind == "javascript":
        value = output if current is None else current
        return transforms.run_javascript(transform, value, {"vars": dict(vars_), "prompt": prompt})
    if transform.kind == "jmespath":
        import jmespath  # lazy: start-up time

        return jmespath.search(transform.source, loads_or_none(output))
    env = {
        "output": output,
        "json": loads_or_none(output),
        "vars": dict(vars_),
        "stats": stats.to_env(),
    }
    return compile_expr(transform.source).evaluate(env)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def run_assertion(
    entry: AssertionEntry,
    test: TestCase,
    subject: Subject,
    output: str,
    transformed: Any,
    judge: Judge | None,
    given: Verdict | None = None,
) -> AssertionResult:
    """Evaluate one assertion; every failure mode becomes part of the result.

    ``given`` is the verdict of a type that compares outputs (``select-best``), graded with
    the other outputs of its test (:mod:`skilleval.runner.compare`).
    """
    if entry.children:
        members = [
            run_assertion(child, test, subject, output, transformed, judge)
            for child in entry.children
        ]
        return to_result(entry, set_verdict(members, entry.threshold))
    if entry.spec.compares and given is None:
        given = Verdict.errored(
            f"{entry.spec.name} compares the outputs of several prompts, and this output was "
            "graded alone (an agentic test, or the others were graded in an earlier run)"
        )
    verdict = given or _evaluate(entry, test, subject, output, transformed, judge)
    return to_result(entry, verdict)


def set_verdict(members: Sequence[AssertionResult], threshold: float | None) -> Verdict:
    """An ``assert-set``'s verdict from its assertions' results, by the test's scoring rule."""
    graded = score(members, threshold)
    passed = graded.status == "pass"
    held = sum(1 for m in members if m.status == "pass")
    details = {"asserts": [encode(m) for m in members]}
    if graded.status == "error":
        first = next(m for m in members if m.status == "error" and m.weight > 0)
        return Verdict.errored(f"assert-set: {first.type}: {first.reason}", details=details)
    rule = (
        f"score {graded.score:.2f} vs threshold {threshold:g}"
        if threshold is not None
        else "all must pass"
    )
    return Verdict(
        passed=passed,
        reason=f"{held}/{len(members)} passed ({rule})",
        score=graded.score,
        details=details,
    )


def check_for(
    entry: AssertionEntry,
    test: TestCase,
    subject: Subject,
    output: str,
    transformed: Any,
    judge: Judge | None,
) -> Check | Verdict:
    """The check ``entry`` grades ``output`` with, or the error verdict that stops it (a value
    that does not render, a transform that fails)."""
    try:
        value = template.render_value(entry.value, test.vars)
    except template.TemplateProblem as exc:
        return Verdict.errored(exc.message)
    context = None
    if entry.context_transform is not None:
        try:
            context = apply_transform(
                entry.context_transform,
                output,
                test.vars,
                subject.stats,
                current=transformed,
                prompt=subject.prompt,
            )
        except Exception as exc:
            return Verdict.errored(f"contextTransform failed: {exc}")
    if entry.transform is not None:
        try:
            transformed = apply_transform(
                entry.transform,
                output,
                test.vars,
                subject.stats,
                current=transformed,
                prompt=subject.prompt,
            )
            # Inside the try: a value that cannot be written as text (an integer over
            # Python's 4,300-digit limit) is this assertion's error, not the run's end.
            output = _as_text(transformed)
        except Exception as exc:
            return Verdict.errored(f"transform failed: {exc}")
    user = runs_user_code(entry)
    return Check(
        output=output,
        value=value,
        vars=_private(test.vars, own=user),
        prompt=subject.prompt,
        messages=subject.messages,
        threshold=entry.threshold,
        config=_private(entry.config, own=user),
        options=_private(entry.options, own=user),
        stats=subject.stats,
        raw_output=subject.output,
        transformed=copy.deepcopy(transformed) if user else transformed,
        test_id=test.id,
        arm=subject.arm,
        trial=subject.trial,
        where=entry.where,
        value_where=entry.value_where,
        base_dir=str(entry.base_dir),
        judge=judge if entry.tier == "model" else None,
        cost=subject.cost,
        trajectory=subject.trajectory,
        workspace=subject.workspace,
        context=context,
        negated=entry.negated,
        skills=subject.skills,
        logprobs=subject.logprobs,
    )


def _evaluate(
    entry: AssertionEntry,
    test: TestCase,
    subject: Subject,
    output: str,
    transformed: Any,
    judge: Judge | None,
) -> Verdict:
    check = check_for(entry, test, subject, output, transformed, judge)
    if isinstance(check, Verdict):
        return check
    if not runs_user_code(entry):
        try:
            raw = entry.spec.fn(check)
        except CannotEvaluate as exc:
            return Verdict.errored(str(exc))
        except Exception as exc:
            return Verdict.errored(f"{entry.spec.name} raised {type(exc).__name__}: {exc}")
        return normalize_result(raw, entry.threshold)
    limit = time_limit(entry)
    called = call_limited(lambda: entry.spec.fn(check), limit)
    if called.timed_out:
        return Verdict.errored(
            f"{entry.spec.name} was stopped after {limit:g} s, its time limit "
            f"({entry.spec.defined_at})"
        )
    if called.raised is not None:
        return _raised(entry, called.raised)
    return normalize_result(called.value, entry.threshold)


def runs_user_code(entry: AssertionEntry) -> bool:
    """Whether the assertion runs code a user wrote: a plugin's type (``external``), or
    ``python``."""
    return entry.spec.external or entry.spec.name in USER_CODE_TYPES


def time_limit(entry: AssertionEntry) -> float:
    """The wall-clock limit of one call of a user's check (see the module docstring)."""
    return MODEL_TIME_LIMIT if entry.tier == "model" else TIME_LIMIT


def _raised(entry: AssertionEntry, exc: BaseException) -> Verdict:
    name = entry.spec.name
    if isinstance(exc, CannotEvaluate):
        return Verdict.errored(str(exc))
    code = getattr(entry.spec.fn, "__code__", None)
    at = raised_at(exc, code.co_filename if code is not None else None)
    where = f" at {at}" if at else ""
    if isinstance(exc, SystemExit):
        return Verdict.errored(
            f"{name} called sys.exit({exc.code!r}){where}; a check must return a verdict"
        )
    return Verdict.errored(f"{name} raised {type(exc).__name__}{where}: {exc}")


def _private(mapping: Mapping[str, Any], *, own: bool) -> Mapping[str, Any]:
    """A read-only view of ``mapping``; with ``own``, of a deep copy (for a user's check).

    Everything a check receives is shared with the checks after it (and the other trials),
    so a check that changed it would change what they see.
    """
    return MappingProxyType(copy.deepcopy(dict(mapping)) if own else dict(mapping))


def to_result(entry: AssertionEntry, verdict: Verdict) -> AssertionResult:
    """Turn a verdict into a recorded result, applying ``not-`` once."""
    status: Status
    score: float | None
    if verdict.error is not None:
        status, score, reason = "error", None, verdict.error
    elif entry.negated:
        status = "fail" if verdict.passed else "pass"
        score = 1.0 - verdict.effective_score
        reason = f"negated: {verdict.reason}" if verdict.reason else "negated"
    else:
        status = "pass" if verdict.passed else "fail"
        score, reason = verdict.effective_score, verdict.reason
    return AssertionResult(
        type=entry.type,
        negated=entry.negated,
        tier=entry.tier,
        status=status,
        score=score,
        reason=clip(reason, MAX_REASON_CHARS),
        weight=entry.weight,
        metric=entry.metric,
        error=None if verdict.error is None else clip(verdict.error, MAX_REASON_CHARS),
        where=str(entry.where),
        from_default=entry.from_default,
        details=verdict.details,
    )


def test_output(test: TestCase, subject: Subject) -> tuple[str, Any] | str:
    """The output the assertions see after the test's transform, and the transform's value;
    or why the transform failed."""
    if test.transform is None:
        return subject.output, None
    try:
        transformed = apply_transform(
            test.transform, subject.output, test.vars, subject.stats, prompt=subject.prompt
        )
        return _as_text(transformed), transformed  # may fail as above; then every assertion errs
    except Exception as exc:
        return f"transform failed: {exc}"


def grade(
    test: TestCase,
    subject: Subject,
    judge: Judge | None = None,
    only: Sequence[AssertionEntry] | None = None,
    given: Mapping[int, Verdict] | None = None,
) -> Graded:
    """Run every assertion of ``test`` on ``subject`` and score the result.

    ``given`` holds, by position in ``test.asserts``, the verdicts of types that compare
    outputs, graded beforehand with the test's other outputs.
    """
    prepared = test_output(test, subject)
    if isinstance(prepared, str):
        failed = tuple(to_result(e, Verdict.errored(prepared)) for e in test.asserts)
        return score(failed, test.threshold)
    output, transformed = prepared
    entries = test.asserts if only is None else only
    given = given or {}
    results = tuple(
        run_assertion(e, test, subject, output, transformed, judge, _given(test, e, given))
        for e in entries
    )
    return score(results, test.threshold)


def _given(test: TestCase, entry: AssertionEntry, given: Mapping[int, Verdict]) -> Verdict | None:
    for i, e in enumerate(test.asserts):
        if e is entry:
            return given.get(i)
    return None


def score(results: Sequence[AssertionResult], threshold: float | None) -> Graded:
    """The scoring rule (see the module docstring) and the per-tier outcome."""
    weighted = [r for r in results if r.weight > 0]
    total = sum(r.weight for r in weighted)
    value = (
        sum((r.score or 0.0) * r.weight for r in weighted if r.status != "error") / total
        if total > 0
        else 1.0
    )
    status: Status
    if any(r.status == "error" for r in weighted):
        status = "error"
    elif threshold is not None:
        status = "pass" if value >= threshold else "fail"
    else:
        status = "pass" if all(r.status == "pass" for r in weighted) else "fail"
    if total == 0 and status != "error":
        value = 1.0 if status == "pass" else 0.0
    return Graded(status, value, tuple(results), tier_outcomes(results), metric_scores(results))


def tier_outcomes(results: Sequence[AssertionResult]) -> dict[str, Status]:
    """Per tier: error if any assertion errored, else pass only if all of them passed."""
    out: dict[str, Status] = {}
    for tier in ("deterministic", "model"):
        mine = [r for r in results if r.tier == tier and r.weight > 0]
        if not mine:
            continue
        if any(r.status == "error" for r in mine):
            out[tier] = "error"
        elif all(r.status == "pass" for r in mine):
            out[tier] = "pass"
        else:
            out[tier] = "fail"
    return out


def metric_scores(results: Sequence[AssertionResult]) -> dict[str, float]:
    """Named metrics: the mean score of the assertions that carry each name."""
    groups: dict[str, list[float]] = {}
    for r in results:
        if r.metric and r.score is not None:
            groups.setdefault(r.metric, []).append(r.score)
    return {name: sum(v) / len(v) for name, v in sorted(groups.items())}


def regrade_subset(
    previous: Sequence[AssertionResult],
    replaced: Mapping[int, AssertionResult],
    threshold: float | None,
) -> Graded:
    """Score again after some assertions were re-evaluated (watch mode re-grades plugins)."""
    merged = [replaced.get(i, r) for i, r in enumerate(previous)]
    return score([replace(r) for r in merged], threshold)
