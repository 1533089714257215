"""Checks another tool's eval file asks for and a local run cannot make.

An imported expectation such as "used scripts/fill.py", or a grader that needs the agent's
own tools, has no honest verdict here: ``unavailable`` records it as an ``error`` with the
reason, never as a pass, and ``skilleval lint`` lists it before the run (SE305).
"""

from __future__ import annotations

from typing import Any

from skilleval.api import Check, Verdict, assertion

_VALUE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "minLength": 1, "description": "the check as written"},
        "reason": {"type": "string", "minLength": 1, "description": "why it cannot run here"},
    },
    "required": ["text", "reason"],
    "additionalProperties": False,
}


@assertion("unavailable", value=_VALUE)
def unavailable(check: Check) -> Verdict:
    """Always an ``error``: the check (``text``) needs what this run lacks (``reason``)."""
    value = check.value if isinstance(check.value, dict) else {}
    return Verdict.errored(
        f"cannot be checked in a local run: {value.get('reason', '')} "
        f"(the check: {value.get('text', '')!r})"
    )
