"""What a re-run reused from the cache and what changed since the previous run, as text.

``skilleval watch`` prints these after every re-run; they read only typed runs, so a
re-run can be explained from its ``results.json`` alone.
"""

from __future__ import annotations

from skilleval.report import view
from skilleval.report.compare import Comparison
from skilleval.results.model import Run
from skilleval.util.frozen import frozen


@frozen
class ArmReuse:
    """Generation for one arm: how many outputs came from the cache and which were recomputed."""

    arm: str
    reused: int
    recomputed: tuple[str, ...]
    """Test ids with at least one output the model had to produce."""
    made: int


@frozen
class Reuse:
    """What a run took from the cache and what it asked the model for."""

    arms: tuple[ArmReuse, ...]
    model_calls: int
    """Calls that reached the model under test: generation and routing (``calls.model_calls``)."""
    cache_hits: int
    judge_calls: int | None = None
    """Calls the judge made (``calls.judge_calls``), when the run had a judge."""
    judge_hits: int | None = None
    separate_judge: bool = False
    """The judge is a model of its own (``judge:``) rather than the model under test."""

    @property
    def other_calls(self) -> int:
        """Routing calls that reached the model."""
        return max(0, self.model_calls - sum(a.made for a in self.arms))

    @property
    def other_hits(self) -> int:
        """Routing calls that the cache answered."""
        return max(0, self.cache_hits - sum(a.reused for a in self.arms))


def reuse_of(run: Run) -> Reuse:
    """Count, per arm, the records served from the cache (``stats.cached``) and the rest."""
    reused: dict[str, int] = {}
    made: dict[str, int] = {}
    recomputed: dict[str, list[str]] = {}
    arms = [*view.arms(run), *(r.arm for r in run.records)]
    for arm in dict.fromkeys(arms):
        reused[arm], made[arm], recomputed[arm] = 0, 0, []
    for rec in run.records:
        if rec.stats is None:
            continue  # an error before generation: nothing was asked or reused
        if rec.stats.cached:
            reused[rec.arm] += 1
            continue
        made[rec.arm] += 1
        if rec.test_id not in recomputed[rec.arm]:
            recomputed[rec.arm].append(rec.test_id)
    calls = run.calls
    # The judge keeps its own counters even when it is the model under test, so its calls
    # are never in model_calls: they are shown on a line of their own, as results.json has them.
    judged = run.judge is not None and calls is not None
    return Reuse(
        arms=tuple(ArmReuse(a, reused[a], tuple(recomputed[a]), made[a]) for a in reused),
        model_calls=calls.model_calls if calls else sum(made.values()),
        cache_hits=calls.cache_hits if calls else sum(reused.values()),
        judge_calls=(calls.judge_calls or 0) if judged and calls else None,
        judge_hits=(calls.judge_cache_hits or 0) if judged and calls else None,
        separate_judge=run.judge is not None and run.judge.same_as_generator is False,
    )


def reuse_lines(reuse: Reuse) -> list[str]:
    """``model calls: 7 made, 9 from the cache`` and one line per arm."""
    out = [f"  model calls: {reuse.model_calls} made, {reuse.cache_hits} from the cache"]
    for arm in reuse.arms:
        line = f"    [{arm.arm}] {arm.reused} reused, {arm.made} recomputed"
        if arm.recomputed:
            ids = ", ".join(arm.recomputed[:5])
            more = f" +{len(arm.recomputed) - 5}" if len(arm.recomputed) > 5 else ""
            line += f": {ids}{more}"
        out.append(line)
    if reuse.other_calls or reuse.other_hits:
        out.append(f"    routing: {reuse.other_calls} made, {reuse.other_hits} from the cache")
    if reuse.judge_calls is not None:
        label = "judge model" if reuse.separate_judge else "judging"
        out.append(f"    {label}: {reuse.judge_calls} made, {reuse.judge_hits or 0} from the cache")
    return out


def _change(before: float | None, after: float | None, change: float | None) -> str:
    return f"{view.pct(before, 1)} → {view.pct(after, 1)} ({view.signed_pct(change)})"


def delta_lines(c: Comparison) -> list[str]:
    """A compact delta: flipped tests, pass rates per arm and tier, lift, trigger accuracy."""
    out = [f"  since {c.a.run_id}:"]
    flipped = [t for t in c.tests if t.change in ("newly_failing", "newly_passing")]
    if flipped:
        shown = [f"{t.test_id} [{t.arm}] {t.before} → {t.after}" for t in flipped[:8]]
        more = f" +{len(flipped) - 8}" if len(flipped) > 8 else ""
        out.append("    flipped: " + ", ".join(shown) + more)
    else:
        out.append("    no test flipped")
    for s in c.settings:
        before, after = (
            (view.short_digest(str(s.a)), view.short_digest(str(s.b)))
            if "digest" in s.name or "sha256" in s.name
            else (s.a, s.b)
        )
        out.append(f"    changed: {s.name} {before} → {after}")
    added, removed = c.by_change("only_in_b"), c.by_change("only_in_a")
    if added or removed:
        out.append(f"    tests added: {len(added)} · removed: {len(removed)}")
    changed = sum(1 for t in c.tests if t.output_changed)
    if changed:
        out.append(f"    outputs changed: {changed}")
    for arm in dict.fromkeys(t.arm for t in c.tiers):
        parts = [
            f"{t.tier} {_change(t.a, t.b, t.change)}"
            for t in c.tiers
            if t.arm == arm and (t.a is not None or t.b is not None)
        ]
        if parts:
            out.append(f"    [{arm}] " + " · ".join(parts))
    if c.lift:
        lift = c.lift[0]
        verdicts = c.lift_verdicts or (None, None)
        verdict = verdicts[1] if verdicts[0] == verdicts[1] else f"{verdicts[0]} → {verdicts[1]}"
        out.append(
            f"    lift {view.signed_pct(lift.before)} → {view.signed_pct(lift.after)} "
            f"({view.signed_pct(lift.change)}) · verdict {verdict or '—'}"
        )
    if c.trigger:
        acc = c.trigger[0]
        out.append(f"    trigger accuracy {_change(acc.before, acc.after, acc.change)}")
    return out
