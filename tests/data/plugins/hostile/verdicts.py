"""Checks that return verdicts no results file can hold."""

from skilleval import Check, Verdict, assertion


@assertion("hostile-nan")
def hostile_nan(check: Check) -> Verdict:
    return Verdict(passed=True, score=float("nan"))


@assertion("hostile-maybe")
def hostile_maybe(check: Check) -> Verdict:
    return Verdict(passed="maybe")  # type: ignore[arg-type]


@assertion("hostile-huge")
def hostile_huge(check: Check) -> int:
    return 10**5000


@assertion("hostile-huge-verdict")
def hostile_huge_verdict(check: Check) -> Verdict:
    return Verdict(passed=True, score=10**5000)
