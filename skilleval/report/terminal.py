"""The human summary of a run, printed to stderr: a table of tests and the figures below it."""

from __future__ import annotations

from collections.abc import Sequence

from skilleval.report import preference_view, view
from skilleval.report.trigger_view import confusion_text, trigger_extra_lines
from skilleval.results.model import Lift, Reliability, Run, Tally, TestRow, Trigger
from skilleval.results.records import Record
from skilleval.util.scrub import printable

_MARK = {"pass": "PASS", "fail": "FAIL", "error": "ERROR"}


def _pct(rate: float | None) -> str:
    return "—" if rate is None else f"{rate:.0%}"


def _trials_cell(row: TestRow) -> str:
    if row.trials == 1:
        status = "pass" if row.passed else "fail" if row.failed else "error"
        return _MARK[status]
    return f"{row.passed}/{row.trials}" + (f" ({row.errors} err)" if row.errors else "")


def _reasons(records: Sequence[Record], width: int = 70) -> str:
    seen: list[str] = []
    for rec in records:
        if rec.status == "error" and rec.error:
            seen.append(f"error: {rec.error}")
        for a in rec.asserts:
            if a.status != "pass" and a.weight > 0:
                text = f"{a.type}: {a.reason}"
                if a.status == "error":
                    text = f"{a.type} error: {a.error}"
                seen.append(text)
    unique = list(dict.fromkeys(seen))
    lines = [s if len(s) <= width else s[: width - 1] + "…" for s in unique[:3]]
    if len(unique) > 3:
        lines.append(f"… and {len(unique) - 3} more")
    return "\n".join(lines)


def decoding_line(run: Run) -> str:
    """How the outputs were produced, printed beside every score."""
    env = run.environment
    if env is None:
        return "model unknown · decoding unknown"
    model, dec = env.model, env.decoding
    name = (model.file or model.name or "?").replace("\\", "/").rsplit("/", 1)[-1]
    if dec.mode == "deterministic":
        how = f"greedy, seed {dec.seed}"
    else:
        how = f"sampled (temperature {dec.temperature}, top_p {dec.top_p}), seed {dec.seed}+trial"
    return f"model {name} · {how} · trials {env.trials} · max_tokens {dec.max_tokens}"


def _test_rows(run: Run) -> tuple[list[str], list[list[str]]]:
    by_key: dict[tuple[str, str], list[Record]] = {}
    for rec in run.records:
        by_key.setdefault((rec.test_id, rec.arm), []).append(rec)
    rows_by_test: dict[str, dict[str, TestRow]] = {}
    for row in run.summary.tests:
        rows_by_test.setdefault(row.test_id, {})[row.arm] = row
    arms = list(run.arms)
    primary = run.primary_arm
    trigger = {t.test_id: t for t in run.trigger.tests} if run.trigger else {}
    headers = ["test"]
    if trigger:
        headers.append("routed to")
    headers += [a for a in arms] + [f"why not ({primary})" if len(arms) > 1 else "why not"]
    rows = []
    for test_id, per_arm in rows_by_test.items():
        cells = [test_id]
        if trigger:
            t = trigger.get(test_id)
            if t is None:
                cells.append("")
            else:
                mark = "" if t.correct is None else (" ✓" if t.correct else " ✗")
                expect = "skill" if t.expected else "none"
                cells.append(f"{t.chosen or 'error'} (want {expect}){mark}")
        for arm in arms:
            cells.append(_trials_cell(per_arm[arm]) if arm in per_arm else "")
        recs = by_key.get((test_id, primary)) or by_key.get((test_id, arms[0]), [])
        cells.append(_reasons(recs))
        rows.append(cells)
    return headers, rows


def _lift_line(lift: Lift) -> str:
    shown = "n/a" if lift.lift is None else f"{lift.lift:+.2f}"
    ci = lift.ci95
    interval = "no interval" if ci is None else f"95% CI [{ci[0]:+.2f}, {ci[1]:+.2f}]"
    return (
        f"lift {shown} over {lift.n} tests (b={lift.b} ON-only passes, c={lift.c} OFF-only)"
        f" · exact McNemar p={lift.p_two_sided:.3g} (two-sided), sign test p={lift.p_one_sided:.3g}"
        f" (one-sided) · {interval} (Newcombe)\n"
        f"lift verdict: {lift.verdict.upper()} ({lift.sidedness}): {lift.reason}"
    )


def _trigger_lines(trigger: Trigger) -> list[str]:
    lines = [f"trigger {confusion_text(trigger)}"]
    from tabulate import tabulate  # lazy: start-up time

    if trigger.labels and trigger.matrix:
        table = [
            [f"want {lab}", *row] for lab, row in zip(trigger.labels, trigger.matrix, strict=False)
        ]
        lines.append(
            tabulate(
                table, headers=["", *[f"chose {lab}" for lab in trigger.labels]], tablefmt="simple"
            )
        )
    if trigger.misrouted:
        lines.append("misrouted: " + ", ".join(trigger.misrouted))
    lines.extend(trigger_extra_lines(trigger))
    return lines


DIM, UNDIM = "\x1b[2m", "\x1b[22m"
"""ANSI faint on and off: how the terminal greys the figures of an unqualified judge."""


def _model_tier(run: Run, mod: Tally, color: bool) -> str:
    text = f"model tier {_pct(mod.pass_rate)} ({mod.passed}/{mod.passed + mod.failed})"
    if not view.judge_unqualified(run):
        return text
    text += f" [{view.UNQUALIFIED_TAG}]"
    return f"{DIM}{text}{UNDIM}" if color else text


def render_terminal(run: Run, *, color: bool = False) -> str:
    """The full terminal report for a run.

    Args:
        run: The run's results.
        color: Grey the model tier's figures with ANSI faint when the judge is unqualified
            (they are marked in words either way).
    """
    from tabulate import tabulate  # lazy: start-up time

    headers, rows = _test_rows(run)
    out = [tabulate(rows, headers=headers, tablefmt="simple")] if rows else []
    out.append("")
    multi_arm = len(run.arms) > 1
    styled: set[int] = set()
    """Lines that hold this renderer's own ANSI codes, their untrusted parts escaped already."""
    for arm, s in run.summary.arms.items():
        label = printable(f"[{arm}] ") if multi_arm else ""
        det, mod = s.tier("deterministic"), s.tier("model")
        styled.add(len(out))
        out.append(
            f"{label}pass rate {s.passed}/{s.passed + s.failed} ({_pct(s.pass_rate)})"
            f" · deterministic tier {_pct(det.pass_rate)} ({det.passed}/{det.passed + det.failed})"
            f" · {_model_tier(run, mod, color)}" + (f" · errors {s.errors}" if s.errors else "")
        )
        if s.metrics:
            out.append("  metrics: " + ", ".join(f"{k} {v:.2f}" for k, v in s.metrics.items()))
    if run.lift:
        out.append(_lift_line(run.lift))
    preferred = preference_view.preference(run)
    if preferred is not None:
        out.append(preferred.line())
    if run.trigger:
        out.extend(_trigger_lines(run.trigger))
    for arm, rel in (run.reliability or {}).items():
        out.append(_reliability_line(arm, rel))
    fitness = view.judge_fitness_line(run)
    if fitness is not None:
        out.append(f"warning: {fitness}" if view.judge_unqualified(run) else fitness)
    compared = view.side_by_side_fitness_line(run)
    if compared is not None:
        out.append(f"warning: {compared[0]}" if compared[1] else compared[0])
    if view.judge_grades_itself(run):
        out.append(
            "warning: the judge is the generator model; set `judge:` to grade with another model"
        )
    out.append(decoding_line(run))
    calls = run.calls
    if calls is not None:
        out.append(
            f"model calls {calls.model_calls} · cache hits {calls.cache_hits} · "
            f"tokens evaluated {calls.tokens_evaluated} · generated {calls.completion_tokens}"
            + (f" · {calls.generation_tokens_per_s} tok/s" if calls.generation_tokens_per_s else "")
            + (
                f" · judge calls {calls.judge_calls or 0}"
                f" (cache hits {calls.judge_cache_hits or 0},"
                f" tokens evaluated {calls.judge_tokens_evaluated or 0})"
                if run.judge
                else ""
            )
        )
    out.append(headline(run))
    # Test ids, reasons (a model's reply may be quoted in one), metric names: a terminal must
    # show them, never act on them.
    return "\n".join(line if i in styled else printable(line) for i, line in enumerate(out))


def headline(run: Run) -> str:
    """The last line: the verdict, the trigger recall and the lift verdict, then the reasons."""
    verdict = view.verdict(run)
    gate = run.gate
    if gate is None:
        return printable(f"run {verdict.label}: {verdict.detail}")
    shown = verdict.headline if verdict.note else f"{gate.type} gate {verdict.label}"
    facts = "".join(f" · {f.text}" for f in view.headline_facts(run))
    return printable(shown + facts + (f": {verdict.detail}" if verdict.detail else ""))


def _reliability_line(arm: str, rel: Reliability) -> str:
    """pass@1, then pass@k and pass^k at the same k: the largest k both were computed for."""
    both = [
        (p.k, p.pass_at_k.value, p.pass_hat_k.value, p.tests_counted)
        for p in rel.aggregate
        if p.pass_at_k is not None and p.pass_hat_k is not None
    ]
    flaky = f" · flaky: {', '.join(rel.flaky)}" if rel.flaky else ""
    if not both:
        return f"[{arm}] reliability: no test ran enough trials" + flaky
    (k1, at1, _, _), (k, at, hat, counted) = both[0], both[-1]
    parts = [f"pass@{k1} {at1:.2f}"] if k1 != k else []
    parts += [f"pass@{k} {at:.2f}", f"pass^{k} {hat:.2f}"]
    return (
        f"[{arm}] reliability {' · '.join(parts)}"
        f" ({counted} test{'s' if counted != 1 else ''})" + flaky
    )
