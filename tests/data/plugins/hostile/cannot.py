"""A check that says it cannot evaluate the output, both ways the API offers."""

from skilleval import CannotEvaluate, Check, Verdict, assertion


@assertion("cannot-raise")
def cannot_raise(check: Check) -> bool:
    raise CannotEvaluate("the grading service is down")


@assertion("cannot-return")
def cannot_return(check: Check) -> Verdict:
    return Verdict.errored("the reference file is missing")
