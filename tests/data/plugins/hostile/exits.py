"""A check that calls sys.exit(0): it must be an error verdict, never a passing process."""

import sys

from skilleval import Check, assertion


@assertion("hostile-exit")
def hostile_exit(check: Check) -> bool:
    sys.exit(0)
