"""promptfoo's ``skill-used``, on skilleval's own routing decision.

promptfoo reads the skills an agent invoked from its provider's response (Claude Agent SDK,
Codex); skilleval's router chooses, for each test, one of the suite's skill and its
distractors, or ``none`` (:attr:`~skilleval.api.Check.skills`). So ``skill-used: my-skill``
passes when the router chose ``my-skill`` for the test. A test has a decision when it sets
``should_trigger`` or the run has the ``routed`` arm; elsewhere the check is an ``error``.

The value has promptfoo's shapes: a name, a list of names (each must be used; with
``not-``, none may be), or ``{name | pattern, min, max}`` counting the matching skills. Names
match exactly; a ``pattern`` is a glob (``*``, ``?``) that ignores case.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.builtin.trajectories import glob_match

_NAME: dict[str, Any] = {"type": "string", "pattern": r"\S"}
_VALUE: dict[str, Any] = {
    "anyOf": [
        _NAME,
        {"type": "array", "minItems": 1, "items": _NAME},
        {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "pattern": {"type": "string"},
                "min": {"type": "integer", "minimum": 0},
                "max": {"type": "integer", "minimum": 0},
            },
            "additionalProperties": False,
        },
    ]
}


def check_skill_value(value: Any) -> str | None:
    """An object needs a ``name`` or a ``pattern``, and ``min`` at most ``max``."""
    if not isinstance(value, Mapping):
        return None
    if not str(value.get("name") or "").strip() and not str(value.get("pattern") or "").strip():
        return "skill-used: an object value needs a `name` or a `pattern`"
    low, high = value.get("min"), value.get("max")
    if isinstance(low, int) and isinstance(high, int) and high < low:
        return f"skill-used: max ({high}) is less than min ({low})"
    return None


def _used(skills: tuple[str, ...]) -> str:
    return ", ".join(skills) or "(none)"


def _matches(skill: str, name: str | None, pattern: str | None) -> bool:
    if name and skill != name:
        return False
    return not pattern or glob_match(skill, pattern)


@assertion("skill-used", value=_VALUE, check_value=check_skill_value)
def skill_used(check: Check) -> Verdict:
    """The router chose the skill (or each listed skill); with ``{name | pattern, min, max}``,
    the number of matching skills chosen is within the bounds (at least 1 by default)."""
    skills = check.skills
    if skills is None:
        return Verdict.errored(
            "this test was not routed: give it `should_trigger`, or run the `routed` arm"
        )
    value = check.value
    if not isinstance(value, Mapping):
        wanted = [n.strip() for n in ([value] if isinstance(value, str) else value)]
        found = [n for n in wanted if n in skills]
        if check.negated:
            # promptfoo's not- of a list: none of them was used (the runner flips this).
            if found:
                return Verdict.of(True, f"{', '.join(found)} chosen by the router")
            return Verdict.of(
                False, f"none of {', '.join(wanted)} chosen; router chose {_used(skills)}"
            )
        missing = [n for n in wanted if n not in found]
        if missing:
            return Verdict.of(
                False, f"{', '.join(missing)} not chosen; the router chose {_used(skills)}"
            )
        return Verdict.of(True, f"the router chose {_used(skills)}")
    name = str(value.get("name") or "").strip() or None
    pattern = str(value.get("pattern") or "").strip() or None
    label = pattern or name or "*"
    count = sum(1 for s in skills if _matches(s, name, pattern))
    if check.negated:
        if "min" in value or ("max" in value and value["max"] != 0):
            return Verdict.errored(
                "not-skill-used takes a name or pattern with no bounds, or max: 0"
            )
        return Verdict.of(
            count > 0, f"{label!r} matched {count} time(s); router chose {_used(skills)}"
        )
    low = int(value["min"]) if "min" in value else (0 if "max" in value else 1)
    high = value.get("max")
    passed = count >= low and (high is None or count <= int(high))
    bounds = f"at least {low}" if high is None else f"{low}-{high}"
    return Verdict.of(
        passed,
        f"{label!r} matched {count} time(s) (expected {bounds}); router chose {_used(skills)}",
    )
