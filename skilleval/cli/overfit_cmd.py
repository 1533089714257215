"""``skilleval overfit``: ask a judge model whether a suite rewards echoing its skill."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from skilleval.cli.cached import cached_provider
from skilleval.cli.options import (
    emit_json,
    json_option,
    model_option,
    plugin_options,
)
from skilleval.errors import UsageError
from skilleval.exitcodes import ExitCode
from skilleval.judge import JudgeClient
from skilleval.judge.overfit import FLAGGED, UNCLASSIFIED, overfit_report
from skilleval.suite.load import Overrides, load_suite


@click.command()
@click.argument(
    "suite_file", metavar="SUITE", type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@model_option(
    "--judge-model",
    help="default, a .gguf path or echo (overrides `judge:`, then `model:`).",
)
@click.option("--no-cache", is_flag=True, help="Call the judge even when a cached reply exists.")
@plugin_options
@json_option
@click.pass_context
def overfit(
    ctx: click.Context,
    suite_file: Path,
    judge_model: str | None,
    no_cache: bool,
    plugins_dir: tuple[Path, ...],
    no_entry_points: bool,
    as_json: bool,
) -> None:
    """Classify SUITE's rubric items and assertions against its SKILL.md (informational).

    The judge sees SKILL.md and the suite, never a run result. The severity (Low, Moderate,
    High, or Unknown when nothing could be classified) never changes the exit code: 0, or
    2 when the suite has no skill, or 4 when it does not load.
    """
    overrides = Overrides(
        judge=judge_model, plugin_dirs=plugins_dir, entry_points=not no_entry_points
    )
    suite, _ = load_suite(suite_file, overrides)
    if suite.skill is None:
        raise UsageError(
            f"{suite.display} has no `skill:`: the overfitting judge compares a suite with "
            "the SKILL.md it tests"
        )
    spec = suite.judge or suite.model
    judge = JudgeClient(cached_provider(spec, use_cache=not no_cache), seed=suite.decoding.seed)
    try:
        block = overfit_report(suite, judge)
        described = judge.describe()
    finally:
        judge.close()
    if as_json:
        emit_json({"suite": suite.display, "judge": described, "overfit": block})
    else:
        model = described.get("model") or {}
        label = str(model.get("name") or spec.label or spec.kind)
        click.echo(render(suite.display, label, block), err=True)
    ctx.exit(ExitCode.OK)


def render(display: str, judge_label: str, block: dict[str, Any]) -> str:
    """The report for people: the verdict, then the flagged items with the judge's reasoning."""
    lines = [f"{display}: overfitting {block['severity']} (judge: {judge_label})"]
    lines.append(f"  {block['reason']}")
    items = block["items"]
    flagged = [i for i in items if i["label"] in FLAGGED]
    if flagged:
        lines.append("  flagged items:")
        for item in flagged:
            lines.append(
                f"    [{item['index']}] {item['label']:<10} {item['kind']:<9} "
                f"test {item['test_id']}: {item['text']}"
            )
            if item["reasoning"]:
                lines.append(f"        judge: {item['reasoning']}")
    clean: dict[str, int] = {}
    for item in items:
        if item["label"] not in FLAGGED and item["label"] != UNCLASSIFIED:
            clean[item["label"]] = clean.get(item["label"], 0) + 1
    if clean:
        lines.append("  not flagged: " + ", ".join(f"{n} {label}" for label, n in clean.items()))
    if block["unclassified"]:
        shown = ", ".join(f"[{i}]" for i in block["unclassified"])
        lines.append(f"  unclassified (left out of the score): {shown}")
    lines.append("  informational only: this never changes the exit code")
    return "\n".join(lines)
