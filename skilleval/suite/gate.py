"""The ``gate:`` block: extra conditions a run must meet, parsed when the suite loads.

A condition such as ``">= 0.9"`` is checked here, at its position in the file, so a typo is a
diagnostic from ``validate`` rather than a failure after the whole run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from skilleval.errors import Location
from skilleval.suite.yamlio import Document
from skilleval.util.frozen import frozen

Op = Literal[">=", ">", "<=", "<", "=="]
LiftRequirement = Literal["helps", "not-hurts"]

_OPS: dict[str, Op] = {">=": ">=", ">": ">", "<=": "<=", "<": "<", "==": "=="}
_CONDITION = re.compile(r"^\s*(>=|>|<=|<|==)\s*(\S*)\s*$")
_NUMBER = re.compile(r"^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$")


@frozen
class Condition:
    """A comparison with a bound, e.g. ``>= 0.9``."""

    op: Op
    bound: float
    text: str
    """As written in the suite; reports show it unchanged."""

    def holds(self, actual: float | None) -> bool:
        """Whether ``actual`` meets the condition; a missing value never does."""
        if actual is None:
            return False
        return {
            ">=": actual >= self.bound,
            ">": actual > self.bound,
            "<=": actual <= self.bound,
            "<": actual < self.bound,
            "==": actual == self.bound,
        }[self.op]


@frozen
class GateConfig:
    """What ``gate:`` asks for; every field is optional."""

    pass_rate: Condition | None = None
    trigger_accuracy: Condition | None = None
    lift: LiftRequirement | None = None
    max_errors: int | None = None
    judge_fitness: Condition | None = None
    """On the judge's fitness (accuracy on the judge-fitness set)."""
    side_by_side_fitness: Condition | None = None
    """On the side-by-side judge's fitness (the good output preferred, on the same set)."""


def parse_condition(text: str) -> Condition | str:
    """A condition, or the reason ``text`` is not one."""
    match = _CONDITION.match(text)
    if match is None:
        return 'expected a comparison such as ">= 0.9" (one of >=, >, <=, <, == and a number)'
    op, number = match.group(1), match.group(2)
    if not _NUMBER.match(number):
        shown = f"'{number}'" if number else "nothing"
        return f"{shown} after {op} is not a number"
    return Condition(_OPS[op], float(number), text)


def parse_gate(
    doc: Document,
    raw: Mapping[str, Any] | None,
    has_skill: bool,
    error: Callable[[Location, str], None],
    *,
    has_judge: bool = True,
    has_side_by_side: bool = True,
) -> GateConfig:
    """Read ``gate:``; every problem goes to ``error`` with its position.

    The suite schema has already checked the keys and their types; this checks what a
    pattern cannot: that each bound is a number, that skill-only conditions have a skill, and
    that ``judge_fitness`` has a judge to measure.
    """
    raw = raw or {}
    conditions: dict[str, Condition | None] = {
        "pass_rate": None,
        "trigger_accuracy": None,
        "judge_fitness": None,
        "side_by_side_fitness": None,
    }
    for key in conditions:
        value = raw.get(key)
        if not isinstance(value, str):
            continue
        parsed = parse_condition(value)
        if isinstance(parsed, str):
            error(doc.at(["gate", key]), f"gate.{key}: {parsed}, found {value!r}")
        else:
            conditions[key] = parsed
    if not has_skill and ("lift" in raw or "trigger_accuracy" in raw):
        key = "lift" if "lift" in raw else "trigger_accuracy"
        error(
            doc.key_at(["gate", key]), f"`gate.{key}` needs a skill: add `skill: path/to/SKILL.md`"
        )
    if not has_judge and "judge_fitness" in raw:
        error(
            doc.key_at(["gate", "judge_fitness"]),
            "`gate.judge_fitness` needs a model-graded assertion (llm-rubric, llm-assert): "
            "without one no judge runs",
        )
    if not has_side_by_side and "side_by_side_fitness" in raw:
        error(
            doc.key_at(["gate", "side_by_side_fitness"]),
            "`gate.side_by_side_fitness` needs a side-by-side assertion: without one the "
            "side-by-side judge does not run",
        )
    lift = raw.get("lift")
    max_errors = raw.get("max_errors")
    return GateConfig(
        pass_rate=conditions["pass_rate"],
        trigger_accuracy=conditions["trigger_accuracy"],
        judge_fitness=conditions["judge_fitness"],
        side_by_side_fitness=conditions["side_by_side_fitness"],
        lift=lift if lift in ("helps", "not-hurts") else None,
        max_errors=max_errors
        if isinstance(max_errors, int) and not isinstance(max_errors, bool)
        else None,
    )
