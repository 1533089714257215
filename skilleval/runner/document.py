"""Assemble the typed :class:`~skilleval.results.model.Run` of a finished run."""

from __future__ import annotations

import datetime as dt
import platform
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from skilleval.api import Judge
from skilleval.engine.base import Provider
from skilleval.errors import ProviderError
from skilleval.results.codec import decode
from skilleval.results.model import (
    RESULTS_VERSION,
    DecodingInfo,
    Environment,
    JudgeFitness,
    JudgeInfo,
    KernelsInfo,
    LanesInfo,
    ModelInfo,
    Overfit,
    RegistryEntry,
    RouterFitness,
    Run,
    SkillInfo,
    SuiteInfo,
    Timing,
    WaitPolicyInfo,
)
from skilleval.results.records import Record
from skilleval.results.summary import summarize
from skilleval.runner import analysis
from skilleval.runner.arms import ContentFree, TriggerResult
from skilleval.runner.calls import calls
from skilleval.runner.derived import with_derived
from skilleval.runner.gate import decide
from skilleval.runner.rundir import RunDir
from skilleval.suite.model import Suite, TestCase
from skilleval.util.home import home_dir
from skilleval.util.platform_name import platform_name
from skilleval.version import __version__


def _engine(provider: Provider) -> dict[str, Any]:
    """The engine's threads, batch width, GPU layers and the instruction sets its build was
    compiled with, when the model runs in this process, and how conversations were laid out
    for its chat template when that changed any."""
    info = getattr(provider, "engine_info", None)
    found = info() if callable(info) else {}
    out: dict[str, Any] = {
        k: int(found[k])
        for k in ("threads", "batch_width", "gpu_layers")
        if found.get(k) is not None
    }
    for reason in ("threads_reason", "batch_width_reason"):
        if found.get(reason):
            out[reason] = str(found[reason])
    kernels = found.get("kernels")
    if isinstance(kernels, dict):
        grid = kernels.get("prompt_grid")
        out["kernels"] = KernelsInfo(
            bool(kernels["splits"]), bool(kernels["batches"]), int(grid) if grid else None
        )
    if found.get("chat_layout"):
        out["chat_layout"] = tuple(str(name) for name in found["chat_layout"])
    policy = found.get("wait_policy")
    if isinstance(policy, dict):
        out["wait_policy"] = WaitPolicyInfo(str(policy["policy"]), str(policy["reason"]))
    lanes = found.get("lanes")
    if isinstance(lanes, dict):
        out["lanes"] = LanesInfo(**lanes)
    if found.get("instruction_sets"):
        out["instruction_sets"] = tuple(str(f) for f in found["instruction_sets"])
    return out


def build_run(
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
    overfit: Overfit | None = None,
    *,
    judge_fitness: JudgeFitness | None = None,
    content_free: ContentFree | None = None,
    router: RouterFitness | None = None,
    timed: bool | None = None,
    scores: bool | None = None,
    side_by_side: JudgeFitness | None = None,
) -> Run:
    """Everything the run found: its records, the aggregates and the gate's verdict.

    ``content_free`` (with ``trigger: {calibrate: true}``) adds the calibrated trigger
    figures; ``router`` is the router's kept fitness verdict. ``timed``: whether the
    provider's timing means anything (``Capabilities.timed``), ``scores``: whether it returns
    log-probabilities (``Capabilities.scores``); by default, what the suite model's
    registration declares.
    """
    declared = suite.model.provider.capabilities
    timed = declared.timed if timed is None else timed
    scores = declared.scores if scores is None else scores
    summary = with_derived(summarize(records, arms), records, suite.derived_metrics)
    primary = "on" if "on" in arms else arms[0]
    lift_block = analysis.lift(suite, tests, records)
    trigger_block = analysis.trigger(suite, triggers, content_free, router, scores=scores)
    return Run(
        version=RESULTS_VERSION,
        skilleval=__version__,
        run_id=run_dir.root.name,
        status="interrupted" if interrupted else "complete",
        notes=suite.notes,
        suite=SuiteInfo(
            path=suite.display,
            description=suite.description,
            type=suite.type,
            threshold=suite.threshold,
            trials=suite.trials,
            tests=len(tests),
            metadata=dict(suite.metadata),
        ),
        environment=Environment(
            model=_identity(suite, provider),
            model_spec=suite.model.to_json(),
            decoding=decode(DecodingInfo, suite.decoding.to_json()),
            trials=suite.trials,
            python=platform.python_version(),
            platform=platform_name(home_dir()),
            registry=tuple(decode(RegistryEntry, dict(e)) for e in suite.registry_listing),
            **_engine(provider),
        ),
        skill=skill_info(suite),
        judge=judge_info(suite, judge, provider, judge_fitness, side_by_side),
        arms=tuple(arms),
        primary_arm=primary,
        records=tuple(records),
        summary=summary,
        lift=lift_block,
        trigger=trigger_block,
        reliability=analysis.reliability(suite, records),
        overfit=overfit,
        calls=calls(provider, records, timed, judge),
        gate=decide(
            suite,
            summary.arms.get(primary),
            summary.errors,
            interrupted,
            lift_block,
            trigger_block,
            judge_fitness=judge_fitness,
            side_by_side=side_by_side,
        ),
        timing=Timing(
            started_at=started.isoformat(timespec="seconds"), duration_s=round(seconds, 3)
        ),
    )


def _identity(suite: Suite, provider: Provider) -> ModelInfo:
    try:
        identity = provider.identity()
    except ProviderError as exc:
        return ModelInfo(kind=suite.model.kind, name=suite.model.label, error=str(exc))
    return decode(ModelInfo, identity.to_json())


def skill_info(suite: Suite) -> SkillInfo | None:
    if suite.skill is None:
        return None
    return SkillInfo(
        name=suite.skill.name,
        description=suite.skill.description,
        path=suite.skill.display,
        digest=suite.skill.digest,
        distractors=tuple(s.name for s in suite.distractors),
    )


def judge_info(
    suite: Suite,
    judge: Judge | None,
    generator: Provider | None = None,
    fitness: JudgeFitness | None = None,
    side_by_side: JudgeFitness | None = None,
) -> JudgeInfo | None:
    """What the report records about the judge, as the judge describes itself."""
    if judge is None:
        return None
    describe = getattr(judge, "describe", None)
    described = describe() if callable(describe) else {"greedy": True}
    same = grades_itself(suite, judge, generator)
    info = decode(JudgeInfo, {**described, "same_as_generator": same})
    if side_by_side is not None:
        info = replace(info, side_by_side=side_by_side)
    return replace(info, fitness=fitness) if fitness is not None else info


def grades_itself(suite: Suite, judge: Judge, generator: Provider | None) -> bool:
    """Whether the judge is the model under test, so that it grades its own outputs.

    It is when it shares the generator's provider, or when its model has the same identity
    (the same GGUF bytes under another spelling of the path, the same endpoint and model
    name). A judge given as its own provider is not, whatever `judge:` says.
    """
    own = getattr(judge, "provider", None)
    if generator is None or own is None:
        return suite.judge is None or suite.judge == suite.model
    if own is generator:
        return True
    try:
        return bool(own.identity().key() == generator.identity().key())
    except ProviderError:
        return suite.judge == suite.model
