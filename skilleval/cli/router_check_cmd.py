"""``skilleval router-check``: is the router model good enough to trust with trigger figures?"""

from __future__ import annotations

from typing import Any

import click

from skilleval.cli.judge_check_cmd import judge_spec, model_name
from skilleval.cli.options import cached_provider, emit_json, fitness_options, json_option
from skilleval.errors import ProviderError
from skilleval.exitcodes import ExitCode
from skilleval.runner.routercheck import (
    CaseOutcome,
    RouterCheckReport,
    load_router_set,
    run_router_check,
)


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
    """Route the router-fitness set; report accuracy with its interval, recall and false triggers.

    The set is suites/router-fitness.yaml: requests, each with the skill it should trigger or
    none, routed the way a suite's trigger measurement routes them.

    Exits 0 when the check ran, whatever the figures, and 3 when the router could not run.
    """
    router_set = load_router_set()
    provider = cached_provider(
        judge_spec(router_model, key="router", option="--router-model"), use_cache=not no_cache
    )
    try:
        try:
            model: dict[str, Any] = provider.identity().to_json()
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


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _summary(report: RouterCheckReport) -> None:
    if report.aborted:
        click.echo(f"error: the router could not run: {report.aborted}", err=True)
        return
    n = len(report.outcomes)
    interval = report.interval
    shown = "" if interval is None else f" [{interval[0]:.2f}, {interval[1]:.2f}]"
    lines = [
        f"accuracy        {_figure(report.accuracy)}{shown}  "
        f"({report.correct}/{n} cases routed to the expected label, 95% Wilson interval; "
        "always answering none gets 0.50)",
        f"recall          {_figure(report.recall)}  (requests for a skill routed to that skill)",
        f"false triggers  {_figure(report.false_triggers)}  "
        f"(requests for no skill routed to one; near-misses alone: "
        f"{_figure(report.near_miss_false_triggers)})",
        f"error rate      {_figure(report.error_rate)}  "
        f"({report.errors}/{n} cases could not be routed)",
    ]
    if interval is not None and interval[0] <= 0.5:
        lines.append(
            "note: the interval includes 0.50, what a router answering none every time gets"
        )
    if report.constant:
        lines.append("note: the router gave every case the same label; it cannot tell them apart")
    click.echo("\n".join(lines), err=True)
    click.echo(f"{report.seconds:.1f}s", err=True)
