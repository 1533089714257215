"""``skilleval judge-check``: is the judge model good enough to trust?"""

from __future__ import annotations

import time
from typing import Any

import click

from skilleval.cli.cached import cached_provider
from skilleval.cli.fitness_summary import echo_summary, figure
from skilleval.cli.model_spec import judge_spec, model_name
from skilleval.cli.options import emit_json, fitness_options, json_option
from skilleval.exitcodes import ExitCode
from skilleval.judge import JudgeClient
from skilleval.judge.choice import scores_verdicts
from skilleval.results.codec import encode
from skilleval.runner import judgefit
from skilleval.runner.judgecheck import JudgeCheckReport, PairOutcome, load_pairs, run_judge_check
from skilleval.runner.rundir import home_dir


@click.command("judge-check")
@fitness_options("judge", "Grade")
@click.option(
    "--side-by-side",
    is_flag=True,
    help="Also show each pair's good and bad outputs side by side (the side-by-side judge) "
    "and report how often the good one is preferred.",
)
@json_option
@click.pass_context
def judge_check(
    ctx: click.Context,
    judge_model: str,
    seed: int,
    limit: int | None,
    no_cache: bool,
    side_by_side: bool,
    as_json: bool,
) -> None:
    """Grade the judge-fitness set; report accuracy, discrimination and errors.

    The set is suites/judge-fitness.yaml: known-good and known-bad outputs, one of each per pair.
    The last line says whether the judge is qualified (both 95% intervals above chance 0.5).
    A check of the whole set is remembered for the judge model, so `run` does not repeat it.

    Exits 0 when the check ran, whatever the figures, and 3 when the judge could not run.
    """
    every = load_pairs()
    pairs = every[:limit] if limit else every
    client = _client(judge_model, seed, no_cache)
    try:
        describe = client.describe()
        if not as_json:
            click.echo(f"judge: {model_name(describe)}, greedy, seed {seed}", err=True)
        report = run_judge_check(
            client, pairs, describe=describe, progress=None if as_json else _progress
        )
        whole = len(pairs) == len(every)
        fitness = judgefit.from_report(report, judgefit.set_label() if whole else None)
        key = judgefit.memo_key(client, seed) if whole else None
        if key is not None and fitness.status in ("qualified", "unqualified"):
            # A run with this judge then reads the measurement back instead of repeating it.
            judgefit.remember(home_dir(), key, fitness)
        compared = kept = None
        if side_by_side and not report.aborted:
            from skilleval.runner import sidebyside_check, sidebyside_fit  # lazy: start-up time

            start = time.perf_counter()
            compared = sidebyside_check.run_side_by_side_check(client, pairs)
            kept = sidebyside_fit.from_side_report(
                compared, time.perf_counter() - start, judgefit.set_label() if whole else None
            )
            side_key = sidebyside_fit.memo_key_side_by_side(client, seed) if whole else None
            if side_key is not None and kept.status in ("qualified", "unqualified"):
                # A run that compares arms with this judge then reads it back, as above.
                judgefit.remember(home_dir(), side_key, kept)
    finally:
        client.close()
    if as_json:
        extra = {}
        if compared is not None and kept is not None:
            extra = {"side_by_side": {**_side_json(compared), "fitness": encode(kept)}}
        emit_json({**report.to_json(), "fitness": encode(fitness), **extra})
    else:
        _summary(report)
        if compared is not None and kept is not None:
            click.echo(compared.line(), err=True)
            click.echo(kept.reason, err=True)
        if not report.aborted:
            click.echo(fitness.reason, err=True)
    ctx.exit(ExitCode.RUNTIME if report.aborted else ExitCode.OK)


def _client(judge_model: str, seed: int, no_cache: bool) -> JudgeClient:
    spec = judge_spec(judge_model)
    # The check reads verdicts only: a scored verdict writes no reason here.
    return JudgeClient(
        cached_provider(spec, use_cache=not no_cache),
        seed=seed,
        scores=scores_verdicts(spec.provider.capabilities),
        reasons=False,
    )


def _grade(g: Any) -> str:
    if g.error is not None:
        return "error"
    return f"{'pass' if g.passed else 'fail'} {g.score:.2f}"


def _progress(outcome: PairOutcome, done: int, total: int) -> None:
    mark = {2: "ok", 1: "half", 0: "WRONG"}[outcome.correct]
    click.echo(
        f"  [{done:>2}/{total}] {outcome.pair.id:<22} good {_grade(outcome.good):<10} "
        f"bad {_grade(outcome.bad):<10} {mark}",
        err=True,
    )


def _summary(report: JudgeCheckReport) -> None:
    def figures() -> list[str]:
        scored = len(report.scored_pairs)
        return [
            f"accuracy        {figure(report.accuracy)}  "
            f"({report.correct}/{report.outputs} outputs graded right; a constant judge gets 0.50)",
            f"discrimination  {figure(report.discrimination)}  "
            f"(good scored above bad, ties half, over {scored} pairs scored on both sides; "
            "chance is 0.50)",
            f"error rate      {figure(report.error_rate)}  "
            f"({report.errors}/{report.outputs} outputs could not be graded)",
        ]

    echo_summary(report, "judge", figures, "output the same grade")


def _side_json(compared: Any) -> dict[str, Any]:
    return {
        "accuracy": compared.accuracy,
        "good": compared.count("good"),
        "bad": compared.count("bad"),
        "ties": compared.count("tie"),
        "errors": compared.count("error"),
        "calls_disagreed": compared.split,
        "pairs": [
            {"id": o.pair.id, "preferred": o.preferred, "split": o.split} for o in compared.outcomes
        ],
    }
