"""The judge's fitness: measured the first time a judge model grades a run, then remembered.

A run with model-graded assertions first asks whether its judge can tell a good output from
a bad one. It grades the judge-fitness set (:mod:`skilleval.runner.judgecheck`, 73 pairs,
146 judge calls) and turns the figures into a :class:`~skilleval.results.model.JudgeFitness`
with Wilson intervals over pairs (:mod:`skilleval.stats.fitness`). The judge is qualified
when both accuracy ("fitness") and discrimination lie above chance.

The outcome is remembered in ``<home>/judge-fitness.json``, keyed by everything that could
change it (``suites/judge-fitness.measured.json`` ships the same kind of entries, measured
for the embedded model, so that its first run does not spend minutes repeating them): the judge model's identity (:meth:`~skilleval.engine.base.ModelIdentity.key`, the
SHA-256 for a GGUF), its seed unless it is greedy, the text of the fitness set and of the judge prompts, and the
version of this rule, and how the judge reaches an ``llm-rubric`` verdict when it reads it
from choice scores. The next run with the same judge reads it back for free. A judge with
no readable identity (a plugin's own ``Judge``) is measured every run and never remembered.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from skilleval.api import Judge
from skilleval.engine.cache import CachingProvider
from skilleval.engine.greedy_grammar import LOOP_GUARD
from skilleval.errors import DecodeError, ProviderError
from skilleval.judge import JudgeClient, choice
from skilleval.judge.leak import WORKED_EXAMPLE
from skilleval.results.codec import decode, encode
from skilleval.results.model import JudgeFitness
from skilleval.shipped import JUDGE_FITNESS_SET, package_files, suite_text
from skilleval.stats.fitness import CHANCE, above_chance, figure_words, wilson_mean
from skilleval.util.memo import read_memo
from skilleval.util.memo import remember as remember_entry

if TYPE_CHECKING:
    from skilleval.runner.judgecheck import JudgeCheckReport, Pair, PairOutcome

MEMO_FILE: Final = "judge-fitness.json"
"""The remembered measurements, inside skilleval's home."""

SHIPPED_MEMO: Final = "judge-fitness.measured.json"
"""Measurements that ship in ``suites/``: made with ``judge-check`` on the whole set, under the
same keys, and read when the home's memo has none (a changed set or prompt changes the key,
so a stale entry is never read)."""

RULE_VERSION: Final = 1
"""Part of every memo key: raise it when the measurement or its rule changes."""

SKIPPED: Final = "judge not checked: the fitness check was skipped (--no-judge-check)"

_PROMPTS: Final = ("rubric.j2", "assert.j2", "repair.j2")
_SCORED_PROMPT: Final = "rubric_score.j2"
"""The prompt of a verdict read from choice scores; in the key of a judge that reads them."""
_NOTICE_EVERY_S: Final = 30.0
"""Seconds between progress notes while the judge is measured."""

Notice = Callable[[str], None]


def judge_fitness(
    judge: Judge,
    home: Path,
    *,
    seed: int,
    check: bool = True,
    notice: Notice | None = None,
    pairs: list[Pair] | None = None,
) -> JudgeFitness:
    """The judge's fitness: from the memo when this judge was measured before, else measured.

    Args:
        judge: The judge the run grades with.
        home: skilleval's home; the memo is ``home / MEMO_FILE``.
        seed: The judge's seed (part of the memo key).
        check: False skips the measurement: the result says the judge was not checked.
        notice: Where to say that a measurement starts, how it goes and how it ended.
        pairs: Grade these instead of the whole fitness set (tests); the result is then
            neither read from nor written to the memo.
    """
    if not check:
        return JudgeFitness(status="not checked", reason=SKIPPED)
    say = notice or (lambda _message: None)
    key = None if pairs is not None else memo_key(judge, seed)
    return kept_or_measured(
        home, key, "judge fitness", say, lambda: _measure(judge, seed, say, pairs)
    )


def kept_or_measured(
    home: Path,
    key: str | None,
    label: str,
    say: Notice,
    measure: Callable[[], JudgeFitness],
) -> JudgeFitness:
    """The fitness kept under ``key`` in the home, else ``measure()``'s, kept when it is a
    verdict (qualified or unqualified). A None ``key`` neither reads nor keeps."""
    if key is not None:
        known = recall(home, key)
        if known is not None:
            say(f"{label} (measured before): {known.reason}")
            return replace(known, cached=True)
    fitness = measure()
    if key is not None and fitness.status in ("qualified", "unqualified"):
        remember(home, key, fitness)
    return fitness


def _measure(judge: Judge, seed: int, say: Notice, pairs: list[Pair] | None) -> JudgeFitness:
    """Grade the fitness pairs (``pairs``, else the shipped set) with ``judge``."""
    # lazy: start-up time (a judge measured before is read from the memo)
    from skilleval.runner.judgecheck import load_pairs, run_judge_check

    todo = pairs if pairs is not None else load_pairs()
    name = _judge_name(judge)
    say(
        f"judge fitness: grading {len(todo)} known-good and known-bad pairs with {name}; "
        "this runs once per judge model (--no-judge-check skips it)"
    )

    last = [time.monotonic()]

    def progress(_outcome: PairOutcome, done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= _NOTICE_EVERY_S and done < total:
            last[0] = now
            say(f"judge fitness: {done}/{total} pairs")

    report = run_judge_check(own_counters(judge, seed), todo, progress=progress)
    fitness = from_report(report, fitness_set=set_label() if pairs is None else None)
    say(f"{fitness.reason} ({report.seconds:.0f}s)")
    return fitness


def from_report(report: JudgeCheckReport, fitness_set: str | None = None) -> JudgeFitness:
    """The fitness a judge-check report shows, with its intervals and status."""
    measured = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    if report.aborted is not None or not report.outcomes:
        why = report.aborted or "no pair was graded"
        return JudgeFitness(
            status="error",
            reason=f"judge fitness unknown: the judge could not run: {why}",
            fitness_set=fitness_set,
            measured_at=measured,
            seconds=round(report.seconds, 3),
        )
    pairs, scored = len(report.outcomes), len(report.scored_pairs)
    accuracy = report.correct / report.outputs
    ci = wilson_mean(accuracy, pairs)
    discrimination = report.discrimination
    dci = None if discrimination is None else wilson_mean(discrimination, scored)
    assert ci is not None
    qualified = above_chance(ci) and above_chance(dci)
    if not above_chance(ci) or qualified:
        words = figure_words("fitness", accuracy, ci, pairs, "pairs")
    elif discrimination is None or dci is None:
        words = "no pair was scored on both sides, so discrimination is unknown"
    else:
        words = figure_words("discrimination", discrimination, dci, scored, "pairs scored")
    return JudgeFitness(
        status="qualified" if qualified else "unqualified",
        reason=f"{'qualified' if qualified else 'unqualified'} judge: {words}",
        fitness=accuracy,
        ci95=ci,
        discrimination=discrimination,
        discrimination_ci95=dci,
        error_rate=report.error_rate,
        pairs=pairs,
        scored_pairs=scored,
        outputs=report.outputs,
        correct=report.correct,
        errors=report.errors,
        chance=CHANCE,
        fitness_set=fitness_set,
        measured_at=measured,
        seconds=round(report.seconds, 3),
    )


# --------------------------------------------------------------------------- the memo


def memo_key(judge: Judge, seed: int, *, verdict: bool = True) -> str | None:
    """What the measurement depends on, as one string; None when the judge has no identity.

    A judge that reads its ``llm-rubric`` verdicts from choice scores
    (:mod:`skilleval.judge.choice`) has the way it reads them and its prompt in the key, so
    a measurement of the written verdict is never read for it (a written verdict's key is
    as it always was). ``verdict=False`` leaves them out, for a measurement that grades no
    rubric (the side-by-side check)."""
    provider = getattr(judge, "provider", None)
    identity = getattr(provider, "identity", None)
    if not callable(identity):
        return None
    try:
        model = identity().key()
    except ProviderError:
        return None
    digest = hashlib.sha256(suite_text(JUDGE_FITNESS_SET).encode("utf-8"))
    templates = package_files("skilleval.judge") / "templates"
    for name in _PROMPTS:
        digest.update(templates.joinpath(name).read_bytes())
    digest.update(json.dumps(WORKED_EXAMPLE.texts).encode("utf-8"))
    # How a local model decodes a judge's reply (engine/greedy_grammar.py's loop guard).
    digest.update(f"loop-guard={LOOP_GUARD}".encode())
    # A greedy judge gives the same grades whatever its seed, so its measurement serves every
    # seed (a suite's `decoding.seed` is the judge's seed too).
    describe = getattr(judge, "describe", None)
    described = describe() if callable(describe) else {}
    greedy = bool(described.get("greedy") or (described.get("decoding") or {}).get("greedy"))
    sampling = "greedy" if greedy else f"seed={seed}"
    key = f"{model}|{sampling}|rule={RULE_VERSION}|inputs={digest.hexdigest()[:16]}"
    mode = described.get("rubric_verdict") or choice.WRITTEN
    if verdict and mode != choice.WRITTEN:
        prompt = hashlib.sha256(templates.joinpath(_SCORED_PROMPT).read_bytes())
        key += f"|verdict={mode}:{prompt.hexdigest()[:16]}"
    return key


def own_counters(judge: Judge, seed: int) -> Judge:
    """The judge behind a cache wrapper of its own, so the run's call counts stay the run's,
    and writing no reasons, which the measurement does not read.

    The model and the response cache are shared: a measurement warms the cache for later.
    """
    if not isinstance(judge, JudgeClient):
        return judge
    provider = judge.provider
    if isinstance(provider, CachingProvider):
        provider = CachingProvider(provider.inner, provider.cache, provider.warn)
    # The measurement reads verdicts only, so a scored verdict writes no reason.
    return JudgeClient(provider, seed=seed, scores=judge.scores, reasons=False)


def set_label() -> str:
    """The fitness set as results name it: its path and the start of its SHA-256."""
    digest = hashlib.sha256(suite_text(JUDGE_FITNESS_SET).encode("utf-8")).hexdigest()
    return f"suites/{JUDGE_FITNESS_SET} sha256:{digest[:12]}"


def _judge_name(judge: Judge) -> str:
    describe = getattr(judge, "describe", None)
    model = (describe() if callable(describe) else {}).get("model") or {}
    return str(model.get("name") or "the judge").replace("\\", "/").rsplit("/", 1)[-1]


def recall(home: Path, key: str) -> JudgeFitness | None:
    """The remembered fitness for ``key``: the home's own measurement, else a shipped one;
    None when there is none or it does not read."""
    entry = read_memo(home / MEMO_FILE).get(key) or _shipped().get(key)
    if entry is None:
        return None
    try:
        fitness = decode(JudgeFitness, entry)
    except DecodeError:
        return None
    return fitness if fitness.status in ("qualified", "unqualified") else None


@functools.cache
def _shipped() -> dict[str, Any]:
    try:
        data = json.loads(suite_text(SHIPPED_MEMO))
    except (OSError, ValueError, RecursionError):
        return {}
    if isinstance(data, dict) and isinstance(data.get("entries"), dict):
        data = data["entries"]  # copied from a home's memo, digest and all
    return data if isinstance(data, dict) else {}


def remember(home: Path, key: str, fitness: JudgeFitness) -> None:
    """Store ``fitness`` under ``key``, replacing the memo file atomically.

    A home that cannot be written only means the next run measures again.
    """
    remember_entry(home / MEMO_FILE, key, encode(replace(fitness, cached=False)))
