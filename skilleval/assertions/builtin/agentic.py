"""Checks on what an agent did: the tools it called, its step count, queries over its steps.

They read :attr:`~skilleval.api.Check.trajectory`, the steps of the agent loop
(:class:`~skilleval.trajectory.Step`). A test that runs no agent loop has none, and these
checks give an ``error`` verdict there, not a fail: they cannot be evaluated.

A tool counts as *called* when its implementation ran; an attempt rejected for an unknown
name or invalid arguments does not count, and nor does a command that could not start
(reasons mention such attempts). Prefer the workspace checks (:mod:`.workspace`), which grade
outcomes and accept any route; keep trajectory checks for "a required tool actually ran".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.builtin._common import clip, dump, json_difference, quote
from skilleval.assertions.builtin.structured import check_query
from skilleval.trajectory import Step, args_match

_NAME: dict[str, Any] = {"type": "string", "minLength": 1}
_CALL: dict[str, Any] = {
    "anyOf": [
        _NAME,
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["name"],
            "properties": {
                "name": _NAME,
                "args": {"type": "object"},
                "match": {"enum": ["subset", "exact"]},
            },
        },
    ]
}
_COUNT: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "properties": {
        "name": _NAME,
        "min": {"type": "integer", "minimum": 0},
        "max": {"type": "integer", "minimum": 0},
    },
}
_QUERY: dict[str, Any] = {
    "oneOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "properties": {"query": {"type": "string", "minLength": 1}, "equals": {}},
            "required": ["query", "equals"],
            "additionalProperties": False,
        },
    ]
}
_LISTED = 5


# -- context ----------------------------------------------------------------------------------


def _steps(check: Check) -> tuple[Step, ...] | Verdict:
    if check.trajectory is None:
        return Verdict.errored("this test has no trajectory (it runs no agent loop)")
    return check.trajectory


def _calls(steps: Sequence[Step], name: str | None = None) -> list[Step]:
    return [s for s in steps if s.ran and (name is None or s.tool == name)]


def _rejected(steps: Sequence[Step], name: str) -> str:
    count = sum(1 for s in steps if s.tool == name and not s.ran)
    if not count:
        return ""
    return f" ({count} attempt{'s' if count > 1 else ''} rejected before running)"


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _summary(steps: Sequence[Step]) -> str:
    counts: dict[str, int] = {}
    for step in _calls(steps):
        counts[str(step.tool)] = counts.get(str(step.tool), 0) + 1
    if not counts:
        return "no tool ran"
    shown = [f"{n} ×{c}" if c > 1 else n for n, c in counts.items()]
    rest = len(shown) - _LISTED
    return "calls: " + ", ".join(shown[:_LISTED]) + (f" and {rest} more" if rest > 0 else "")


def _call_spec(value: Any) -> tuple[str, Mapping[str, Any] | None, bool]:
    if isinstance(value, Mapping):
        return str(value["name"]), value.get("args"), value.get("match") == "exact"
    return str(value), None, False


def _matching(calls: Sequence[Step], args: Mapping[str, Any] | None, exact: bool) -> list[Step]:
    if args is None:
        return list(calls)
    return [
        c
        for c in calls
        if isinstance(c.arguments, Mapping) and args_match(c.arguments, args, exact=exact)
    ]


def _step_numbers(steps: Sequence[Step]) -> str:
    numbers = [str(s.index) for s in steps[:_LISTED]]
    more = len(steps) - _LISTED
    word = "step" if len(steps) == 1 else "steps"
    return f"{word} {', '.join(numbers)}" + (f" and {more} more" if more > 0 else "")


# -- trajectory -------------------------------------------------------------------------------


@assertion("tool-called", value=_CALL)
def tool_called(check: Check) -> Verdict:
    """A tool ran at least once; with ``{name, args}``, with matching arguments.

    ``args`` match as a subset by default (the call has at least these arguments with these
    values, at any depth of nested objects); ``match: exact`` requires exactly these.
    """
    steps = _steps(check)
    if isinstance(steps, Verdict):
        return steps
    name, args, exact = _call_spec(check.value)
    calls = _calls(steps, name)
    if not calls:
        return Verdict.of(
            False, f"{name} was never called{_rejected(steps, name)}; {_summary(steps)}"
        )
    found = _matching(calls, args, exact)
    if args is None:
        return Verdict.of(True, f"{name} was called {_times(len(calls))} ({_step_numbers(calls)})")
    wanted = f"arguments {'equal to' if exact else 'matching'} {dump(args)}"
    if found:
        return Verdict.of(True, f"{name} was called with {wanted} ({_step_numbers(found)})")
    got = ", ".join(dump(c.arguments, 60) for c in calls[:3])
    return Verdict.of(
        False, f"{name} was called {_times(len(calls))}, never with {wanted}; got {got}"
    )


@assertion("tool-not-called", value=_CALL)
def tool_not_called(check: Check) -> Verdict:
    """A tool never ran; with ``{name, args}``, never with matching arguments."""
    steps = _steps(check)
    if isinstance(steps, Verdict):
        return steps
    name, args, exact = _call_spec(check.value)
    found = _matching(_calls(steps, name), args, exact)
    if found:
        how = "" if args is None else f" with arguments matching {dump(args)}"
        return Verdict.of(
            False, f"{name} was called{how} {_times(len(found))} ({_step_numbers(found)})"
        )
    how = "" if args is None else f" with arguments matching {dump(args)}"
    return Verdict.of(True, f"{name} was not called{how}; {_summary(steps)}")


def check_count(value: Any) -> str | None:
    """``min`` must not exceed ``max``, and one of them must be given."""
    if not isinstance(value, Mapping):
        return None
    if "min" not in value and "max" not in value:
        return "tool-call-count needs `min`, `max` or both"
    low, high = value.get("min"), value.get("max")
    if isinstance(low, int) and isinstance(high, int) and low > high:
        return f"tool-call-count: min ({low}) is greater than max ({high})"
    return None


@assertion("tool-call-count", value=_COUNT, check_value=check_count)
def tool_call_count(check: Check) -> Verdict:
    """The number of calls that ran, of one tool (``name``) or of all, is within ``min``..``max``."""
    steps = _steps(check)
    if isinstance(steps, Verdict):
        return steps
    name = check.value.get("name")
    low, high = check.value.get("min"), check.value.get("max")
    count = len(_calls(steps, name))
    subject = f"{name} was called" if name else "tools were called"
    bounds = " and ".join(
        part
        for part in (
            f"at least {low}" if low is not None else "",
            f"at most {high}" if high is not None else "",
        )
        if part
    )
    passed = (low is None or count >= low) and (high is None or count <= high)
    return Verdict.of(passed, f"{subject} {_times(count)}; expected {bounds}")


@assertion("max-steps", value={"type": "integer", "minimum": 0})
def max_steps(check: Check) -> Verdict:
    """The agent used at most this many steps (model calls), error steps included."""
    steps = _steps(check)
    if isinstance(steps, Verdict):
        return steps
    limit = int(check.value)
    used = len(steps)
    word = "step" if used == 1 else "steps"
    return Verdict.of(used <= limit, f"the agent took {used} {word} (limit {limit})")


def _truthy(value: Any) -> bool:
    # JMESPath truthiness: numbers, 0 included, are true; empty containers are false
    return not (value is None or value is False or value in ("", [], {}))


@assertion("trajectory", value=_QUERY, check_value=check_query)
def trajectory(check: Check) -> Verdict:
    """A JMESPath query over the list of steps is truthy, or equals ``equals``.

    Each step has ``index``, ``turn``, ``kind`` (tool, final, invalid), ``tool``,
    ``arguments``, ``result``, ``error``, ``ran``, ``answer`` and token counts. For example
    ``length([?tool=='search' && ran]) >= `1``` or ``[?ran].tool | [0]``.
    """
    steps = _steps(check)
    if isinstance(steps, Verdict):
        return steps
    query = check.value if isinstance(check.value, str) else str(check.value["query"])
    try:
        result = jmespath.search(query, [s.to_json() for s in steps])
    except JMESPathError as exc:
        return Verdict.errored(f"query {quote(query)} failed: {clip(str(exc))}")
    shown = f"query {quote(query)} gives {dump(result)}"
    if isinstance(check.value, Mapping):
        difference = json_difference(result, check.value["equals"])
        if difference is None:
            return Verdict.of(True, shown)
        return Verdict.of(False, f"{shown}, which differs: {difference}")
    return Verdict.of(
        _truthy(result), f"{shown}, which is {'truthy' if _truthy(result) else 'falsy'}"
    )
