"""``skilleval router-check``: is the router model good enough to trust with trigger figures?"""

from __future__ import annotations

from typing import Any

import click

from skilleval.cli.cached import cached_provider, warn
from skilleval.cli.fitness_summary import echo_summary, figure
from skilleval.cli.model_spec import judge_spec, model_name
from skilleval.cli.options import (
    emit_json,
    fitness_options,
    json_option,
)
from skilleval.engine.base import ModelIdentity
from skilleval.errors import ProviderError
from skilleval.exitcodes import ExitCode
from skilleval.runner.routercheck import (
    CaseOutcome,
    RouterCheckReport,
    load_router_set,
    run_router_check,
    store_fitness,
)
from skilleval.runner.rundir import home_dir


@click.command("router-check")
@fitness_options("router", "Route")
@json_option
@click.pass_context
def router_check(
    ctx: click.Context,
    router_model: str,
    seed: int,
    limit: int | None,
    no_cache: bool,
    as_json: bool,
) -> None:
    """Route the router-fitness set; report accuracy and AUROC with their intervals, recall
    and false triggers, and whether the router is qualified.

    The set is suites/router-fitness.yaml: requests, each with the skill it should trigger or
    none, routed the way a suite's trigger measurement routes them. A full check (no --limit)
    is kept per router model, and runs routed by that model show its verdict.

    Exits 0 when the check ran, whatever the figures, and 3 when the router could not run.
    """
    router_set = load_router_set()
    provider = cached_provider(
        judge_spec(router_model, key="router", option="--router-model"), use_cache=not no_cache
    )
    identity: ModelIdentity | None = None
    try:
        try:
            identity = provider.identity()
            model: dict[str, Any] = identity.to_json()
        except ProviderError as exc:
            model = {"error": str(exc)}
        describe = {
            "model": model,
            "decoding": {"greedy": True, "temperature": 0.0, "top_p": 1.0, "seed": seed},
            "skills": [s.name for s in router_set.skills],
        }
        if not as_json:
            click.echo(f"router: {model_name(describe)}, greedy, seed {seed}", err=True)
        report = run_router_check(
            provider,
            router_set,
            seed=seed,
            limit=limit,
            describe=describe,
            progress=None if as_json else _progress,
        )
    finally:
        provider.close()
    # Only a full check is a verdict; runs with this router show it in their trigger block.
    if identity is not None and limit is None and not report.aborted and report.outcomes:
        try:
            store_fitness(home_dir(), identity, report)
        except OSError as exc:
            warn(f"could not keep the router's verdict: {exc}")
    if as_json:
        emit_json(report.to_json())
    else:
        _summary(report)
    ctx.exit(ExitCode.RUNTIME if report.aborted else ExitCode.OK)


def _progress(outcome: CaseOutcome, done: int, total: int) -> None:
    chosen = outcome.routed.chosen or "error"
    mark = "ok" if outcome.correct else "WRONG"
    click.echo(
        f"  [{done:>2}/{total}] {outcome.case.id:<28} expect {outcome.case.expect:<18} "
        f"chose {chosen:<18} {mark}",
        err=True,
    )


def _summary(report: RouterCheckReport) -> None:
    def figures() -> list[str]:
        n = len(report.outcomes)
        interval = report.interval
        shown = "" if interval is None else f" [{interval[0]:.2f}, {interval[1]:.2f}]"
        lines = [
            f"accuracy        {figure(report.accuracy)}{shown}  "
            f"({report.correct}/{n} cases routed to the expected label, 95% Wilson interval; "
            "always answering none gets 0.50)",
            f"recall          {figure(report.recall)}  (requests for a skill routed to that skill)",
            f"false triggers  {figure(report.false_triggers)}  "
            f"(requests for no skill routed to one; near-misses alone: "
            f"{figure(report.near_miss_false_triggers)})",
            f"error rate      {figure(report.error_rate)}  "
            f"({report.errors}/{n} cases could not be routed)",
        ]
        estimate = report.auroc
        if estimate.value is None:
            lines.append("AUROC           n/a  (the router gives no scores to rank by)")
        else:
            lo, hi = estimate.ci95 or (0.0, 1.0)
            lines.append(
                f"AUROC           {estimate.value:.2f} [{lo:.2f}, {hi:.2f}]  (how well the best "
                "skill's score minus none's ranks requests for a skill above the rest; 0.50 is a "
                "coin, 95% Newcombe interval)"
            )
        reasons = report.unqualified_because()
        if reasons:
            lines.extend(f"UNQUALIFIED: {reason}" for reason in reasons)
        else:
            lines.append("qualified: both intervals clear chance")
        return lines

    echo_summary(report, "router", figures, "case the same label")
