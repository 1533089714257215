"""The suite-wide settings (trials, decoding, skill and arms, lift, trigger, gate), and the Suite itself.

A setting the suite does not write takes the default its dataclass declares in
:mod:`skilleval.suite.model`, the one place defaults are written (the schema shows them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skilleval.suite.context import Loader
from skilleval.suite.defaults import written
from skilleval.suite.gate import parse_gate
from skilleval.suite.model import SUITE_DEFAULTS, LiftConfig, Suite, TestCase, TriggerConfig
from skilleval.suite.model_config import ModelSpec, parse_decoding
from skilleval.suite.skill_config import arms, load_skills
from skilleval.suite.yamlio import Document


def assemble(
    loader: Loader,
    doc: Document,
    tests: list[TestCase],
    model: ModelSpec,
    judge: ModelSpec | None,
) -> Suite:
    """The Suite from its compiled tests and models, with the suite-wide settings checked."""
    data: dict[str, Any] = doc.data
    decoding, diags = parse_decoding(doc, loader.overrides.seed)
    loader.diags.extend(diags)
    trials = loader.overrides.trials or int(data.get("trials", SUITE_DEFAULTS["trials"]))
    if trials > 1 and decoding.mode == "deterministic":
        where = doc.key_at(["trials"]) if "trials" in data else doc.at()
        loader.error(
            where,
            f"trials: {trials} needs `decoding: {{mode: distribution}}`; "
            "greedy decoding gives the same answer every trial",
        )
    skill, distractors = load_skills(loader, doc)
    arm_names = arms(loader, doc, skill)
    if skill is None and "skill" not in loader.top:
        for test in tests:
            if test.should_trigger is not None:
                loader.error(
                    test.should_trigger_at or test.where,
                    "`should_trigger` needs a skill: add `skill: path/to/SKILL.md`",
                )
                break
    lift = LiftConfig(
        **written(data.get("lift") or {}, {"alpha": float, "min_lift": float, "sidedness": str})
    )
    trigger = TriggerConfig(**written(data.get("trigger") or {}, {"calibrate": bool}))
    if "trigger" in data and skill is None and "skill" not in loader.top:
        loader.error(
            doc.key_at(["trigger"]),
            "`trigger` settings need a skill to route: add `skill: path/to/SKILL.md`",
        )
    graded = any(a.spec.tier == "model" for t in tests for a in t.every_assert)
    gate_cfg = parse_gate(
        doc, data.get("gate"), "skill" in loader.top, loader.error, has_judge=graded
    )
    plugin_dirs = tuple((loader.base / p).resolve() for p in data.get("plugins") or [])
    files = set(loader.reader.files) | {Path(s).resolve() for s in loader.registry.sources}
    return Suite(
        path=loader.path,
        display=doc.display,
        tests=tuple(tests),
        model=model,
        decoding=decoding,
        trials=trials,
        plugin_dirs=plugin_dirs + loader.overrides.plugin_dirs,
        judge=judge,
        skill=skill,
        distractors=distractors,
        arms=arm_names,
        lift=lift,
        trigger=trigger,
        gate=gate_cfg,
        files=frozenset(files),
        registry_listing=tuple(loader.registry.listing()),
        **written(
            data,
            {"description": str, "type": str, "threshold": float, "metadata": dict},
        ),
    )
