"""The English sentence behind each lift verdict, written from a :class:`Decision`.

Kept apart from the estimators so that the numbers can be checked without the words, and the
words changed without touching the numbers.
"""

from __future__ import annotations

from skilleval.stats.verdict import Decision


def fmt(x: float) -> str:
    return f"{x:.3g}"


def fmt_p(p: float) -> str:
    return "p<0.0001" if p < 0.0001 else f"p={p:.3g}"


def lift_reason(d: Decision) -> str:
    """One sentence saying why the verdict was reached, with the numbers it compared."""
    return _core(d) + _interval_note(d)


def _core(d: Decision) -> str:
    m = d.discordant
    side = d.sidedness
    if d.rule == "too-few-tests":
        tests_word = "test" if d.n == 1 else "tests"
        return (
            f"only {d.n} distinct {tests_word} compared; at least {d.min_tests} are needed "
            f"before the skill can be judged"
        )
    if d.rule == "too-few-discordant":
        changed = "none" if m == 0 else f"only {m}"
        return (
            f"{changed} of {d.n} tests changed outcome between ON and OFF (b={d.b}, c={d.c}); "
            f"at least {d.needed} are needed for any result to reach p ≤ {d.alpha:g} ({side})"
        )
    assert d.lift is not None
    assert d.p is not None
    lift = fmt(float(d.lift))
    p = fmt_p(float(d.p))
    if d.b > d.c:
        lead = f"{d.b} of {m} discordant tests favour ON (b={d.b}, c={d.c})"
    elif d.c > d.b:
        lead = f"{d.c} of {m} discordant tests favour OFF (b={d.b}, c={d.c})"
    else:
        lead = f"the {m} discordant tests split evenly (b={d.b}, c={d.c})"
    if d.rule == "helps":
        return f"{lead}, {p} ≤ {d.alpha:g} ({side}) and lift {lift} ≥ min_lift {d.min_lift:g}"
    if d.rule == "below-min-lift":
        return (
            f"{lead}, {p} ≤ {d.alpha:g} ({side}), but lift {lift} is below min_lift {d.min_lift:g}"
        )
    if d.rule == "hurts":
        return f"{lead}, {p} ≤ {d.alpha:g} ({side}); lift {lift}"
    return f"{lead}, {p} > {d.alpha:g} ({side})"


def _interval_note(d: Decision) -> str:
    """Why an interval that excludes 0 did not give a helps or hurts verdict."""
    if d.interval is None or not d.interval_excludes_zero:
        return ""
    if d.verdict not in ("underpowered", "no evidence") or d.rule == "below-min-lift":
        return ""
    lo, hi = d.interval
    shown = f"the 95% interval [{lo:+.2f}, {hi:+.2f}] excludes 0"
    if d.rule == "too-few-tests":
        why = (
            f"below {d.min_tests} distinct tests skilleval does not judge, because an interval "
            "from so few tests is a rough guide"
        )
    elif d.rule == "too-few-discordant":
        why = (
            "the interval is an approximation, and with this few changed tests even a clean "
            "sweep does not reach significance in the exact test"
        )
    else:
        why = (
            "the verdict rests on the exact test, which asks for more evidence than the "
            "approximate interval at counts this small"
        )
    return f"; {shown}, but {why}"
