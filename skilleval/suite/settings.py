"""The suite-wide settings (trials, decoding, skill and arms, lift, trigger, gate), and the Suite itself.

A setting the suite does not write takes the default its dataclass declares in
:mod:`skilleval.suite.model`, the one place defaults are written (the schema shows them).
"""

from __future__ import annotations

import re
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
    evaluate = data.get("evaluateOptions") or {}
    repeat = evaluate.get("repeat")
    if repeat is not None and "trials" in data:
        loader.error(
            doc.key_at(["evaluateOptions", "repeat"]),
            "`evaluateOptions.repeat` and `trials:` both set the trials: keep `trials:`",
        )
    trials = loader.overrides.trials or int(data.get("trials", repeat or SUITE_DEFAULTS["trials"]))
    if trials > 1 and decoding.mode == "deterministic":
        where = doc.key_at(["trials"]) if "trials" in data else doc.at()
        if "trials" not in data and repeat is not None and not loader.overrides.trials:
            where = doc.key_at(["evaluateOptions", "repeat"])
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
    trigger = TriggerConfig(
        **written(data.get("trigger") or {}, {"calibrate": bool, "runs": int, "rate": float})
    )
    if trigger.runs > 1 and decoding.mode == "deterministic":
        loader.error(
            doc.key_at(["trigger", "runs"]),
            f"trigger.runs: {trigger.runs} needs `decoding: {{mode: distribution}}`; greedy "
            "routing picks the same option every run",
        )
    if "rate" in (data.get("trigger") or {}) and trigger.runs == 1:
        loader.error(
            doc.key_at(["trigger", "rate"]),
            "`trigger.rate` counts sampled routing runs: set `trigger.runs` above 1 too",
        )
    if "trigger" in data and skill is None and "skill" not in loader.top:
        loader.error(
            doc.key_at(["trigger"]),
            "`trigger` settings need a skill to route: add `skill: path/to/SKILL.md`",
        )
    graded = any(a.spec.tier == "model" for t in tests for a in t.every_assert)
    compared = any(a.spec.name == "side-by-side" for t in tests for a in t.every_assert)
    gate_cfg = parse_gate(
        doc,
        data.get("gate"),
        "skill" in loader.top,
        loader.error,
        has_judge=graded,
        has_side_by_side=compared,
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
        outputs=_outputs(loader, doc),
        jobs=evaluate.get("maxConcurrency"),
        delay_ms=int(evaluate.get("delay") or 0),
        use_cache=bool(evaluate.get("cache", True)),
        env=_env(loader, doc),
        **written(
            data,
            {"description": str, "type": str, "threshold": float, "metadata": dict},
        ),
    )


def _outputs(loader: Loader, doc: Document) -> tuple[Path, ...]:
    """promptfoo's ``outputPath`` (one path or several), relative to the suite."""
    raw = doc.data.get("outputPath")
    listed: list[tuple[Any, list[str | int]]] = (
        [(raw, ["outputPath"])]
        if isinstance(raw, str)
        else [(p, ["outputPath", i]) for i, p in enumerate(raw or [])]
    )
    out = []
    for text, at in listed:
        path = loader.base / str(text)
        if loader.registry.reporter_for(path.suffix) is None:
            known = ", ".join(sorted(r.suffix for r in loader.registry.reporters()))
            shown = f"'{path.suffix}'" if path.suffix else "no extension"
            loader.error(
                doc.at(at), f"outputPath: {shown} is not a format skilleval writes; use {known}"
            )
            continue
        out.append(path)
    return tuple(out)


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _env(loader: Loader, doc: Document) -> dict[str, str]:
    """``env:``, each value as the environment holds it."""
    out = {}
    for name, value in (doc.data.get("env") or {}).items():
        if not _ENV_NAME.match(str(name)):
            loader.error(
                doc.key_at(["env", name]),
                f"env: '{name}' is not a variable name (letters, digits and _, not starting"
                " with a digit)",
            )
            continue
        out[str(name)] = _env_text(value)
    return out


def _env_text(value: Any) -> str:
    """An ``env:`` value as the environment holds it (promptfoo's String(value))."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
