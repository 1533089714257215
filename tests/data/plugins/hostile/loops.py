"""A check that never returns: the time limit must end it while the run goes on."""

from skilleval import Check, assertion


@assertion("hostile-loop")
def hostile_loop(check: Check) -> bool:
    n = 0
    while True:
        n += 1
