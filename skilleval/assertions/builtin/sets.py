"""``assert-set``: a group of assertions that passes or fails as one.

The set's assertions are compiled with it at load, and the runner grades them
(:func:`skilleval.runner.grade.run_assertion`): the set's score is the weighted mean of
theirs, and it passes when that score reaches the set's ``threshold``, or, without one, when
every assertion with weight > 0 passes. An error in one of them makes the set an error.
The set then counts as one assertion of the test, with its own ``weight`` and ``metric``.
"""

from __future__ import annotations

from typing import Any, Final

from skilleval.api import Check, Verdict, assertion

_ASSERTIONS: Final[dict[str, Any]] = {
    "assert": {
        "type": "array",
        "minItems": 1,
        "items": {"type": "object"},
        "description": "assert-set: the assertions of the set, written as on a test.",
    }
}


@assertion("assert-set", value=None, options=_ASSERTIONS)
def assert_set(check: Check) -> Verdict:
    """A group of assertions with its own ``threshold``: passes when their weighted score reaches it."""
    return Verdict.errored("assert-set is graded by the runner, which runs its assertions")
