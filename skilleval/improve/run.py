"""One ``skilleval improve``: from a loaded suite and the command's choices to the written
report. The command parses flags; this module builds the models, the split and the loop,
and writes ``SKILL.improved.md``, ``improve.json``, ``cost.json`` and ``report.html``."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skilleval.engine.base import Provider
from skilleval.engine.cache import CachingProvider, ResponseCache, open_cache
from skilleval.engine.factory import check_model, create_provider
from skilleval.errors import SkillevalError, UsageError
from skilleval.improve import report_html, report_json
from skilleval.improve.candidates import Candidate
from skilleval.improve.evaluate import judge_for
from skilleval.improve.guards import lint_view
from skilleval.improve.loop import Loop, Models, Outcome, Settings
from skilleval.improve.meter import Metered
from skilleval.improve.rule import decision_sizes, round_alpha
from skilleval.improve.split import DEFAULT_FRACTIONS, Split, make_split
from skilleval.improve.state import State, files_digest, fingerprint
from skilleval.runner.providers import Paced
from skilleval.runner.shard import suite_digest
from skilleval.suite.model import Suite, TestCase
from skilleval.suite.model_config import ModelSpec
from skilleval.util.signals import sigterm_as_interrupt


@dataclass
class Request:
    """What the command asks for."""

    suite: Suite
    out: Path
    home: Path
    settings: Settings
    seed: int
    fractions: tuple[float, float, float] = DEFAULT_FRACTIONS
    folder: Path | None = None
    folder_candidates: Sequence[Candidate] = ()
    grow: Path | None = None
    grown: Sequence[TestCase] = ()
    proposer: ModelSpec | None = None
    proposer_label: str | None = None
    template: str = ""
    use_cache: bool = True
    write: bool = False
    warn: Callable[[str], None] = print
    notice: Callable[[str], None] = print


@dataclass
class Finished:
    """A finished improvement: the report, what it cost, and where it was written."""

    document: dict[str, Any]
    cost: dict[str, Any]
    out: Path
    improved: Path | None
    written: Path | None
    outcome: Outcome = field(default_factory=Outcome)


def check_split(split: Split, fractions: Sequence[float]) -> None:
    """Refuse a split with an empty set, saying how many tests it needs."""
    empty = [name for name, size in split.sizes().items() if size == 0]
    if empty:
        share = min(fractions) / sum(fractions)
        raise UsageError(
            f"the suite is too small to split: the {' and '.join(empty)} set"
            f"{'s are' if len(empty) > 1 else ' is'} empty "
            f"({', '.join(f'{k} {v}' for k, v in split.sizes().items())}); "
            f"this split needs at least {int(1 / share) + 1} tests, and a decision far more "
            "(see `skilleval power`)"
        )


def _build(spec: ModelSpec, req: Request, cache: ResponseCache | None) -> CachingProvider:
    """The model for ``spec``, metered, behind the response cache, built as a run builds it."""
    inner: Provider = create_provider(spec, home=req.home, jobs=req.settings.jobs)
    check_model(inner, spec)
    if req.suite.delay_ms:
        inner = Paced(inner, req.suite.delay_ms / 1000)
    return CachingProvider(Metered(inner), cache, req.warn)


def _providers(
    req: Request,
) -> tuple[CachingProvider, CachingProvider | None, CachingProvider | None]:
    suite = req.suite
    cache = open_cache(req.home / "cache.db", req.warn) if req.use_cache else None
    generator = _build(suite.model, req, cache)
    judge = None
    if suite.judge is not None and suite.judge != suite.model:
        judge = _build(suite.judge, req, cache)
    proposer = None
    if req.proposer is not None:
        if req.proposer == suite.model:
            proposer = generator
        elif req.proposer == suite.judge and judge is not None:
            proposer = judge
        else:
            proposer = _build(req.proposer, req, cache)
    return generator, judge, proposer


def _inputs(req: Request, generator: Provider) -> str:
    suite = req.suite
    try:
        model = json.dumps(generator.identity().to_json(), sort_keys=True)
    except SkillevalError:
        model = suite.model.label
    parts: list[tuple[str, str | bytes]] = [
        ("suite", suite_digest(suite)),
        ("model", model),
        ("seed", str(req.seed)),
        ("fractions", repr(req.fractions)),
        (
            "settings",
            repr(
                (
                    req.settings.rounds,
                    req.settings.max_candidates,
                    req.settings.max_calls,
                    req.settings.alpha,
                    req.settings.min_lift,
                )
            ),
        ),
        ("proposer", req.proposer_label or ""),
        ("template", req.template),
        ("grown", ",".join(t.id for t in req.grown)),
    ]
    if req.grow is not None:
        parts.append(("grow", req.grow.read_bytes()))
    if req.folder is not None:
        files = [p for p in req.folder.rglob("*") if p.is_file()]
        parts.append(("candidates", files_digest(files, req.folder)))
    return fingerprint(parts)


def _cost(
    providers: Sequence[CachingProvider | None], started: float, state: State
) -> dict[str, Any]:
    """What this invocation cost: the calls the models answered (not the cache), their
    tokens, the seconds, and the steps read back from the state file instead."""
    meters: list[Metered] = []
    for p in providers:
        inner = None if p is None else p.inner
        if isinstance(inner, Metered) and all(inner is not m for m in meters):
            meters.append(inner)
    totals = {"model_calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    for meter in meters:
        for key, value in meter.stats().items():
            totals[key] += value
    return totals | {
        "seconds": round(time.perf_counter() - started, 3),
        "steps_resumed": state.resumed,
    }


def improve(req: Request) -> Finished:
    """Run the loop and write its outputs to ``req.out``.

    Raises:
        UsageError: The suite cannot be split.
        KeyboardInterrupt: Stopped (Ctrl-C, SIGTERM); what finished is in the state file.
    """
    suite = req.suite
    skill = suite.skill
    if skill is None:
        raise UsageError(f"{suite.display} has no `skill:`: there is nothing to improve")
    started = time.perf_counter()
    own = [t for t in suite.tests if t.id not in {g.id for g in req.grown}]
    split = make_split(own, seed=req.seed, fractions=req.fractions, grown=req.grown)
    check_split(split, req.fractions)
    settings = req.settings
    share = req.fractions[2] / sum(req.fractions)
    sizes = decision_sizes(
        len(split.confirm), share, round_alpha(settings.alpha, settings.rounds), settings.min_lift
    )
    smallest = sizes["smallest_decidable"]
    if smallest is None or len(split.confirm) < max(smallest, 5):
        req.warn(
            f"the confirmation set has {len(split.confirm)} tests: too few for any decision at "
            f"α = {sizes['alpha']:.4g} (at least {max(smallest or 0, 5)} needed; "
            f"{sizes['confirmation_tests_needed']} for 80% power). The candidates are still "
            "measured, and the report says so"
        )
    req.out.mkdir(parents=True, exist_ok=True)
    generator, judge_provider, proposer_provider = _providers(req)
    state = State(req.out, _inputs(req, generator), req.notice)
    models = Models(
        provider=generator,
        judge_provider=judge_provider,
        judge=judge_for(generator, judge_provider, suite.decoding.seed),
        proposer=None
        if proposer_provider is None
        else judge_for(proposer_provider, None, suite.decoding.seed),
        template=req.template,
    )
    loop = Loop(
        suite, split, lint_view(suite), settings, models, req.out, state, req.warn, req.notice
    )
    restore = sigterm_as_interrupt()
    try:
        outcome = loop.run(skill, req.folder_candidates)
    finally:
        restore()
        for p in {id(p): p for p in (generator, judge_provider, proposer_provider) if p}.values():
            p.close()
    final = outcome.final or skill
    improved = req.out / "SKILL.improved.md"
    if outcome.accepted:
        improved.write_text(final.text, encoding="utf-8")
    else:
        improved.unlink(missing_ok=True)
    written = None
    if req.write and outcome.accepted:
        skill.path.write_text(final.text, encoding="utf-8")
        written = skill.path
    document = report_json.build_report(
        suite,
        split,
        settings,
        outcome,
        sizes,
        seed=req.seed,
        proposer=req.proposer_label,
        candidates_folder=None if req.folder is None else req.folder.name,
        grow=None if req.grow is None else req.grow.name,
        written=req.write,
    )
    cost = _cost((generator, judge_provider, proposer_provider), started, state)
    (req.out / "improve.json").write_text(report_json.dumps(document), encoding="utf-8")
    (req.out / "cost.json").write_text(json.dumps(cost, indent=2) + "\n", encoding="utf-8")
    (req.out / "report.html").write_text(
        report_html.render(document, cost, skill.text), encoding="utf-8"
    )
    return Finished(
        document, cost, req.out, improved if outcome.accepted else None, written, outcome
    )
