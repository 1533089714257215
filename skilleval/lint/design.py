"""Checks on the test set as a whole: enough distinct tests, negative controls, variety."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from skilleval import stats
from skilleval.errors import Location
from skilleval.lint.checks import (
    DUPLICATE_PROMPT,
    EVEN_TRIALS,
    NEAR_DUPLICATE_PROMPT,
    NO_NEGATIVE_CONTROLS,
    TOO_FEW_TESTS,
    UNIFORM_PROMPTS,
)
from skilleval.lint.finding import Finding
from skilleval.lint.ngrams import common_run, normalise, similarity, words
from skilleval.lint.view import LintTest, LintView
from skilleval.plugins.markers import lint_check

MIN_DISTINCT_TESTS = 5
"""Below 5 tests the lift is not judged: 4 wins of 4 is p = 0.125 two-sided (0.0625 one-sided)."""

PLANNING_WIN_RATE = 0.8
"""The true win rate the SE101 hint plans for (`skilleval power` takes any)."""

PLANNING_TIE_RATE = 0.5
"""The tie rate the SE101 hint assumes: half the tests pass or fail alike ON and OFF."""

NEAR_DUPLICATE = 0.9
"""Word-level similarity from which two prompts count as the same request reworded."""

UNIFORM = 0.75
"""Mean pairwise similarity of the positive prompts from which they count as one phrasing."""

MIN_FOR_UNIFORM = 3
"""Two prompts are a pair, not a pattern."""

UNIFORM_SAMPLE = 40
"""Past this many positive prompts, the mean similarity is taken over an even sample."""


@lint_check(
    TOO_FEW_TESTS,
    NO_NEGATIVE_CONTROLS,
    DUPLICATE_PROMPT,
    NEAR_DUPLICATE_PROMPT,
    UNIFORM_PROMPTS,
    EVEN_TRIALS,
    name="test-set",
)
def check(view: LintView) -> Iterator[Finding]:
    """SE101–SE106: too few tests, no negative controls, duplicates, one phrasing, even
    trials."""
    yield from _duplicates(view)
    yield from _even_trials(view)
    if view.skill_where is None:
        return
    yield from _too_few(view)
    yield from _negative_controls(view)
    yield from _uniform(view)


def _tests_at(view: LintView) -> Location:
    if view.doc is not None and isinstance(view.doc.data, dict) and "tests" in view.doc.data:
        return view.doc.key_at(["tests"])
    return view.skill_where or Location(view.display, 1, 1)


def _positives(view: LintView) -> list[LintTest]:
    """Tests that exercise the skill: everything except negative controls, one per prompt."""
    seen: set[str] = set()
    out: list[LintTest] = []
    for test in view.tests:
        key = normalise(test.prompt)
        if test.is_negative or not key or key in seen:
            continue
        seen.add(key)
        out.append(test)
    return out


def _too_few(view: LintView) -> Iterator[Finding]:
    count = len(_positives(view))
    if count >= MIN_DISTINCT_TESTS:
        return
    yield Finding(
        TOO_FEW_TESTS,
        _tests_at(view),
        f"only {count} distinct test{'s' if count != 1 else ''} exercise the skill (negative "
        f"controls and repeated prompts not counted); below {MIN_DISTINCT_TESTS} no lift can be "
        "judged, and even 4 wins out of 4 has p = 0.125 two-sided (0.0625 one-sided). "
        f"{_power_hint(view, count)}. Add tests with different requests: more trials of the "
        "same test do not help",
    )


def _lift_settings(view: LintView) -> tuple[float, stats.Sidedness]:
    """The suite's ``lift: {alpha, sidedness}`` as written, or the defaults."""
    data = view.doc.data if view.doc is not None else None
    raw = data.get("lift") if isinstance(data, dict) else None
    raw = raw if isinstance(raw, dict) else {}
    alpha, sidedness = raw.get("alpha", 0.05), raw.get("sidedness", "two-sided")
    if not isinstance(alpha, float | int) or not 0 < alpha < 1:
        alpha = 0.05
    try:
        return float(alpha), stats.sidedness_word(str(sidedness))
    except ValueError:
        return float(alpha), "two-sided"


def _power_hint(view: LintView, count: int) -> str:
    alpha, sidedness = _lift_settings(view)
    plan = stats.plan_power(
        count,
        win_rate=PLANNING_WIN_RATE,
        tie_rate=PLANNING_TIE_RATE,
        alpha=alpha,
        sidedness=sidedness,
    )
    if plan.tests_needed is None:
        return "`skilleval power` says how many tests your suite needs"
    return (
        f"If half the tests tie and the skill wins {PLANNING_WIN_RATE:.0%} of the rest, "
        f"about {plan.tests_needed} tests give an 80% chance of `helps` "
        "(`skilleval power` works it out for your suite)"
    )


def _even_trials(view: LintView) -> Iterator[Finding]:
    data = view.doc.data if view.doc is not None else None
    trials = data.get("trials") if isinstance(data, dict) else None
    if not isinstance(trials, int) or isinstance(trials, bool) or trials < 2 or trials % 2:
        return
    assert view.doc is not None
    yield Finding(
        EVEN_TRIALS,
        view.doc.key_at(["trials"]),
        f"trials: {trials} is even, so a test's majority vote can split {trials // 2}–"
        f"{trials // 2} and show as undecided. The lift test uses every test's pass rates, so "
        f"no test is lost, but {trials - 1} or {trials + 1} trials give each test a clear vote",
    )


def _negative_controls(view: LintView) -> Iterator[Finding]:
    if any(t.is_negative for t in view.tests):
        return
    yield Finding(
        NO_NEGATIVE_CONTROLS,
        view.skill_where or _tests_at(view),
        "no test has `should_trigger: false`, so nothing checks that the skill stays out of "
        "requests it does not fit, and trigger accuracy cannot see over-triggering. Add a "
        "few near-miss requests the skill must leave alone",
    )


def _duplicates(view: LintView) -> Iterator[Finding]:
    firsts: dict[str, LintTest] = {}
    earlier: list[tuple[LintTest, list[str]]] = []
    index: dict[str, list[tuple[int, int]]] = {}
    for test in view.tests:
        key = normalise(test.prompt)
        if not key:
            continue
        first = firsts.get(key)
        if first is not None:
            if first.where != test.where:
                yield Finding(
                    DUPLICATE_PROMPT,
                    test.where,
                    f"test '{test.id}' sends the same prompt as test '{first.id}' "
                    f"({_line(first.where, test.where)}) once case, spacing and punctuation "
                    "are ignored; a repeated request adds a count, not evidence",
                )
            continue
        firsts[key] = test
        seq = words(test.prompt)
        best, best_score = None, 0.0
        for j in _candidates(seq, earlier, index):
            other, other_seq = earlier[j]
            score = similarity(seq, other_seq)
            if score > best_score:
                best, best_score = other, score
        if best is not None and best_score >= NEAR_DUPLICATE:
            yield Finding(
                NEAR_DUPLICATE_PROMPT,
                test.where,
                f"test '{test.id}' is {best_score:.0%} the same words as test '{best.id}' "
                f"({_line(best.where, test.where)}): the two ask one thing. Make one of them a "
                "different request, or drop it",
            )
        counts = Counter(seq)
        for word, n in counts.items():
            index.setdefault(word, []).append((len(earlier), n))
        earlier.append((test, seq))


def _candidates(
    seq: list[str],
    earlier: list[tuple[LintTest, list[str]]],
    index: dict[str, list[tuple[int, int]]],
) -> list[int]:
    """Earlier prompts that share enough words to reach NEAR_DUPLICATE at all.

    difflib's ratio is 2·M / (|a| + |b|), and the matched words M can be no more than the
    words the two have in common, so that count bounds it. Comparing every pair in full would
    be quadratic in difflib calls; this keeps lint fast on suites with thousands of tests.
    """
    shared: dict[int, int] = {}
    for word, n in Counter(seq).items():
        for j, m in index.get(word, ()):
            shared[j] = shared.get(j, 0) + min(n, m)
    return [
        j
        for j, common in shared.items()
        if 2 * common / (len(seq) + len(earlier[j][1])) >= NEAR_DUPLICATE
    ]


def _uniform(view: LintView) -> Iterator[Finding]:
    positives = [words(t.prompt) for t in _positives(view)]
    if len(positives) < MIN_FOR_UNIFORM:
        return
    total = len(positives)
    if total > UNIFORM_SAMPLE:
        # The mean over an evenly spread sample is enough to tell one template from many.
        positives = [positives[i * total // UNIFORM_SAMPLE] for i in range(UNIFORM_SAMPLE)]
    scores = [similarity(a, b) for i, a in enumerate(positives) for b in positives[i + 1 :]]
    mean = sum(scores) / len(scores)
    if mean < UNIFORM:
        return
    shared = common_run(positives)
    common = f"; every one contains '{' '.join(shared)}'" if len(shared) >= 2 else ""
    yield Finding(
        UNIFORM_PROMPTS,
        _tests_at(view),
        f"the {total} positive tests are phrased almost the same way (mean word "
        f"similarity {mean:.2f}{common}): they measure one phrasing, not the skill. Vary the "
        "wording, length, context and what the user already knows",
    )


def _line(where: Location, near: Location) -> str:
    if where.path != near.path:
        return str(where)
    return f"line {where.line}" if where.line else where.path
