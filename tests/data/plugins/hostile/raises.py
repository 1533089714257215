"""A check that raises; the error verdict must name this file and line 10."""

from skilleval import Check, assertion


@assertion("hostile-raise")
def hostile_raise(check: Check) -> bool:
    words = check.output.split()
    if words:
        raise ValueError("the plugin broke")
    return True
