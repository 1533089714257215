"""promptfoo's ``trajectory:*`` checks, on the steps of skilleval's agent loop.

promptfoo reads an agent's trajectory from the trace spans its providers record; skilleval
has the steps themselves (:class:`~skilleval.trajectory.Step`). Each step is seen as promptfoo
would see its span:

* a tool call that ran is a ``tool`` step named after the tool, with its arguments;
* a final answer is a ``message`` step (``agent response``);
* a reply that was neither is a ``span`` step (``invalid reply``).

A tool call rejected before it ran (an unknown tool, invalid arguments) is left out, as it
is by ``tool-called``. Names are matched as promptfoo matches them: a glob (``*``, ``?``),
ignoring case. A test that runs no agent loop has no steps, and these checks give an
``error`` there, as promptfoo does without a trace.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.builtin._common import dump, json_difference
from skilleval.trajectory import Step

_TYPES = ["tool", "message", "span", "command", "search", "reasoning"]
_MATCHER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "pattern": {"type": "string", "minLength": 1},
        "type": {"anyOf": [{"enum": _TYPES}, {"type": "array", "items": {"enum": _TYPES}}]},
        "min": {"type": "integer", "minimum": 0},
        "max": {"type": "integer", "minimum": 0},
    },
    "additionalProperties": False,
}
_NAMED: dict[str, Any] = _MATCHER
_TOOL_USED: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "minLength": 1},
        {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
        _NAMED,
    ]
}
_STEP_COUNT: dict[str, Any] = _MATCHER
_SEQUENCE_STEP: dict[str, Any] = {"anyOf": [{"type": "string", "minLength": 1}, _NAMED]}
_SEQUENCE: dict[str, Any] = {
    "anyOf": [
        {"type": "array", "minItems": 1, "items": _SEQUENCE_STEP},
        {
            "type": "object",
            "properties": {
                "mode": {"enum": ["in_order", "exact"]},
                "steps": {"type": "array", "minItems": 1, "items": _SEQUENCE_STEP},
            },
            "required": ["steps"],
            "additionalProperties": False,
        },
    ]
}
_ARGS_MATCH: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "pattern": {"type": "string", "minLength": 1},
        "type": _MATCHER["properties"]["type"],
        "args": {},
        "arguments": {},
        "mode": {"enum": ["partial", "exact"]},
        "defaults": {"type": "object"},
        "ignore": {
            "anyOf": [
                {"type": "string", "minLength": 1},
                {"type": "array", "items": {"type": "string", "minLength": 1}},
            ]
        },
    },
    "additionalProperties": False,
}


# -- steps as promptfoo sees them --------------------------------------------------------------


class Seen:
    """One step as promptfoo's trajectory reading has it: a type, a name, aliases, args."""

    __slots__ = ("aliases", "args", "name", "type")

    def __init__(self, kind: str, name: str, aliases: Iterable[str], args: Any = None) -> None:
        self.type = kind
        self.name = name
        self.aliases = tuple(aliases)
        self.args = args

    @property
    def label(self) -> str:
        return f"{self.type}:{self.name}"


def seen_steps(steps: Sequence[Step]) -> list[Seen]:
    """The agent's steps as promptfoo would read their spans (see the module docstring)."""
    out: list[Seen] = []
    for step in steps:
        if step.kind == "tool":
            if step.ran and step.tool:
                out.append(Seen("tool", step.tool, (step.tool,), step.arguments))
        elif step.kind == "final":
            out.append(Seen("message", "agent response", ("agent response", "message")))
        else:
            out.append(Seen("span", "invalid reply", ("invalid reply",)))
    return out


@functools.lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(f"^{body}$", re.IGNORECASE | re.DOTALL)


def glob_match(name: str, pattern: str) -> bool:
    """promptfoo's pattern match: ``*`` any run, ``?`` one character, ignoring case."""
    return _glob(pattern).search(name) is not None


def _matcher(spec: Any, default_type: str | None) -> dict[str, Any]:
    if isinstance(spec, str):
        return {"pattern": spec, **({"type": default_type} if default_type else {})}
    out = dict(spec)
    if not out.get("type") and default_type:
        out["type"] = default_type
    return out


def _matches(step: Seen, matcher: Mapping[str, Any]) -> bool:
    kind = matcher.get("type")
    if kind and step.type not in (kind if isinstance(kind, list) else [kind]):
        return False
    pattern = matcher.get("pattern") or matcher.get("name")
    return not pattern or any(glob_match(a, str(pattern)) for a in step.aliases)


def _label(matcher: Mapping[str, Any]) -> str:
    return str(matcher.get("pattern") or matcher.get("name") or "*")


def _listed(steps: Sequence[Seen]) -> str:
    return ", ".join(s.label for s in steps) or "(none)"


def _steps(check: Check) -> list[Seen] | Verdict:
    if check.trajectory is None:
        return Verdict.errored("this test has no trajectory (it runs no agent loop)")
    return seen_steps(check.trajectory)


def _range(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"expected {low}-{high}"
    return f"expected at least {low}" if high is None else f"expected at most {high}"


# -- the checks --------------------------------------------------------------------------------


def _unnamed(value: Any) -> bool:
    return isinstance(value, Mapping) and not value.get("name") and not value.get("pattern")


def check_tool_used(value: Any) -> str | None:
    """An object names its tool (``name`` or ``pattern``); ``min`` must not exceed ``max``."""
    if _unnamed(value):
        return "trajectory:tool-used: name the tool with `name` or `pattern`"
    if isinstance(value, Mapping):
        low, high = value.get("min"), value.get("max")
        if isinstance(low, int) and isinstance(high, int) and low > high:
            return f"trajectory:tool-used: min ({low}) is greater than max ({high})"
    return None


@assertion("trajectory:tool-used", value=_TOOL_USED, check_value=check_tool_used)
def tool_used(check: Check) -> Verdict:
    """The agent called each listed tool (names or globs); with ``{name, min, max}``, a
    number of times within the bounds (at least once by default)."""
    seen = _steps(check)
    if isinstance(seen, Verdict):
        return seen
    tools = [s for s in seen if s.type == "tool"]
    value = check.value
    if not isinstance(value, Mapping):
        wanted = [_matcher(v, "tool") for v in ([value] if isinstance(value, str) else value)]
        found = [m for m in wanted if any(_matches(s, m) for s in tools)]
        missing = [m for m in wanted if m not in found]
        names = ", ".join(_label(m) for m in wanted)
        if check.negated:
            # promptfoo's not- of a list: none of them was used (the runner flips this).
            if found:
                used = ", ".join(_label(m) for m in found)
                return Verdict.of(True, f"{used} used; tools: {_listed(tools)}")
            return Verdict.of(False, f"none of {names} used")
        if missing:
            gone = ", ".join(_label(m) for m in missing)
            return Verdict.of(False, f"{gone} never used; tools: {_listed(tools)}")
        return Verdict.of(True, f"used {names}; tools: {_listed(tools)}")
    matcher = _matcher(value, "tool")
    low = int(value.get("min", 1))
    high = value.get("max")
    matching = [s for s in tools if _matches(s, matcher)]
    passed = len(matching) >= low and (high is None or len(matching) <= int(high))
    return Verdict.of(
        passed,
        f"tool {_label(matcher)!r} matched {len(matching)} time(s) ({_range(low, high)})",
    )


def check_step_count(value: Any) -> str | None:
    """One of ``min`` and ``max`` is needed, and ``min`` must not exceed ``max``."""
    if isinstance(value, Mapping) and "min" not in value and "max" not in value:
        return "trajectory:step-count needs `min`, `max` or both"
    low, high = value.get("min"), value.get("max")
    if isinstance(low, int) and isinstance(high, int) and low > high:
        return f"trajectory:step-count: min ({low}) is greater than max ({high})"
    return None


def check_sequence(value: Any) -> str | None:
    """Each step names its tool."""
    steps = value.get("steps") if isinstance(value, Mapping) else value
    for number, step in enumerate(steps if isinstance(steps, list) else [], 1):
        if _unnamed(step):
            return (
                f"trajectory:tool-sequence: step {number}: name the tool with `name` or `pattern`"
            )
    return None


def check_args_match(value: Any) -> str | None:
    """The tool is named, and the expected arguments are given."""
    if _unnamed(value):
        return "trajectory:tool-args-match: name the tool with `name` or `pattern`"
    if isinstance(value, Mapping) and "args" not in value and "arguments" not in value:
        return "trajectory:tool-args-match: give the expected arguments as `args` (or `arguments`)"
    return None


@assertion("trajectory:step-count", value=_STEP_COUNT, check_value=check_step_count)
def step_count(check: Check) -> Verdict:
    """The number of steps (of a ``type``, matching ``name`` or ``pattern``) is within
    ``min``..``max``."""
    seen = _steps(check)
    if isinstance(seen, Verdict):
        return seen
    value = check.value
    matcher = _matcher(value, None)
    low, high = value.get("min"), value.get("max")
    matching = [s for s in seen if _matches(s, matcher)]
    count = len(matching)
    passed = (low is None or count >= low) and (high is None or count <= high)
    filters = []
    if matcher.get("type"):
        kinds = matcher["type"] if isinstance(matcher["type"], list) else [matcher["type"]]
        filters.append(f"type={'|'.join(kinds)}")
    if matcher.get("pattern") or matcher.get("name"):
        filters.append(f"pattern={_label(matcher)}")
    scope = f" for {', '.join(filters)}" if filters else ""
    return Verdict.of(passed, f"{count} step(s){scope} ({_range(low, high)})")


@assertion("trajectory:tool-sequence", value=_SEQUENCE, check_value=check_sequence)
def tool_sequence(check: Check) -> Verdict:
    """The tools were called in this order (others may come between); with ``mode: exact``,
    exactly these calls and no others."""
    seen = _steps(check)
    if isinstance(seen, Verdict):
        return seen
    tools = [s for s in seen if s.type == "tool"]
    value = check.value
    exact = isinstance(value, Mapping) and value.get("mode") == "exact"
    wanted = [
        _matcher(v, "tool") for v in (value["steps"] if isinstance(value, Mapping) else value)
    ]
    names = ", ".join(_label(m) for m in wanted)
    if exact:
        passed = len(tools) == len(wanted) and all(
            _matches(s, m) for s, m in zip(tools, wanted, strict=False)
        )
        return Verdict.of(passed, f"expected exactly {names}; tools: {_listed(tools)}")
    at = 0
    for step in tools:
        if at < len(wanted) and _matches(step, wanted[at]):
            at += 1
    if at == len(wanted):
        return Verdict.of(True, f"{names} called in order; tools: {_listed(tools)}")
    return Verdict.of(False, f"{_label(wanted[at])!r} not called in order; tools: {_listed(tools)}")


def _partial(actual: Any, expected: Any) -> bool:
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(_partial(a, e) for a, e in zip(actual, expected, strict=True))
        )
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            k in actual and _partial(actual[k], v) for k, v in expected.items()
        )
    return json_difference(actual, expected) is None


def _without(args: Any, ignore: Sequence[str]) -> Any:
    if not ignore or not isinstance(args, Mapping):
        return args
    return {
        k: v
        for k, v in args.items()
        if not any(k == i or (re.search(r"[*?]", i) and glob_match(k, i)) for i in ignore)
    }


def _without_defaults(args: Any, defaults: Mapping[str, Any] | None) -> Any:
    if not defaults or not isinstance(args, Mapping):
        return args
    return {
        k: v
        for k, v in args.items()
        if not (k in defaults and json_difference(v, defaults[k]) is None)
    }


@assertion("trajectory:tool-args-match", value=_ARGS_MATCH, check_value=check_args_match)
def tool_args_match(check: Check) -> Verdict:
    """A call of the tool had these arguments: a subset of its arguments by default
    (``mode: partial``), or exactly them (``mode: exact``), after leaving out the ``ignore``
    keys and any argument equal to its ``defaults`` entry."""
    seen = _steps(check)
    if isinstance(seen, Verdict):
        return seen
    value = check.value
    if "args" not in value and "arguments" not in value:
        return Verdict.errored("trajectory:tool-args-match needs `args` or `arguments`")
    expected = value["args"] if "args" in value else value["arguments"]
    exact = value.get("mode") == "exact"
    ignore = value.get("ignore") or []
    ignore = [ignore] if isinstance(ignore, str) else list(ignore)
    defaults = value.get("defaults")
    matcher = _matcher(value, "tool")
    calls = [s for s in seen if s.type == "tool" and _matches(s, matcher)]
    with_args = [s for s in calls if s.args is not None]
    wanted = _without(expected, ignore)
    for call in with_args:
        actual = _without_defaults(_without(call.args, ignore), defaults)
        same = json_difference(actual, wanted) is None if exact else _partial(actual, wanted)
        if same:
            return Verdict.of(
                True, f"{call.label} matched {dump(expected)} ({'exact' if exact else 'partial'})"
            )
    if not calls:
        tools = [s for s in seen if s.type == "tool"]
        return Verdict.of(False, f"no call matched {_label(matcher)!r}; tools: {_listed(tools)}")
    got = ", ".join(dump(c.args, 60) for c in with_args[:3]) or "(none)"
    return Verdict.of(
        False,
        f"no call of {_label(matcher)!r} had arguments matching {dump(expected)}; got {got}",
    )
