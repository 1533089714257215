"""A check that changes its vars, and one after it that reports what it sees."""

from skilleval import Check, Verdict, assertion


@assertion("hostile-mutate")
def hostile_mutate(check: Check) -> bool:
    check.vars["items"].append("added")  # its own copy: nobody else sees it
    check.vars["name"] = "changed"  # read-only: raises TypeError
    return True


@assertion("hostile-report-vars")
def hostile_report_vars(check: Check) -> Verdict:
    seen = {"name": check.vars["name"], "items": list(check.vars["items"])}
    return Verdict(passed=seen == {"name": "original", "items": ["a"]}, reason=repr(seen))
