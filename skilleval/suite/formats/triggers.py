"""Trigger sets: queries labelled with whether the skill should be picked for them.

skill-creator tunes a skill's description with a list ``[{query, should_trigger}]``. Three
wrappings are read: the bare list, ``{skill_name, queries: [...]}``, and
``{cases: [{query, expected: trigger | do_not_trigger}]}``; a query may be written ``query``
or ``prompt``. Each becomes a ``should_trigger`` test on the skill's routing, so the SKILL.md
beside the file must be found.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skilleval.errors import DiagnosticsError
from skilleval.suite.formats.reading import ANNOTATIONS, Part, Reading, literal
from skilleval.suite.skills import load_skill

FORMAT = "trigger set"

_WORDS = {"", "true", "false", "yes", "no", "y", "n", "1", "0"}
"""Texts that mean a boolean written as a string: an error, never a skill's name."""
_LABELS = {"trigger": True, "do_not_trigger": False, "no_trigger": False, "not_trigger": False}
_KNOWN = {
    "query",
    "prompt",
    "should_trigger",
    "expected",
    "id",
    "name",
    "description",
    "note",
    "notes",
}


RULE = {"runs": 3, "rate": 0.5}
"""skill-creator's trigger rule: each query run 3 times, triggered at a rate of at least 0.5."""


def rule_setting(sampled: bool) -> tuple[dict[str, Any] | None, str]:
    """The suite's ``trigger:`` setting for a trigger set, and the warning that says how its
    queries are decided: skill-creator's rule when the suite samples, else one greedy call."""
    if sampled:
        return dict(RULE), (
            "each query is routed 3 times, sampled, and triggers when at least half of the runs "
            "pick the skill, as skill-creator decides"
        )
    return None, (
        "skill-creator routes each query 3 times and counts a trigger rate of at least 0.5; "
        "here decoding is greedy, so each query is routed once (the skill's margin over `none` "
        "is reported as an AUROC). For skill-creator's rule, import the set and add "
        "`decoding: {mode: distribution}` and `trigger: {runs: 3, rate: 0.5}`"
    )


def _is_item(x: Any) -> bool:
    return (
        isinstance(x, Mapping)
        and ("query" in x or "prompt" in x)
        and ("should_trigger" in x or str(x.get("expected", "")).lower() in _LABELS)
    )


def detect(data: Any) -> str | None:
    """The wrapping of a trigger set, or None when ``data`` is not one."""
    if isinstance(data, list) and data and all(isinstance(x, Mapping) for x in data):
        return "a list of queries" if any(_is_item(x) for x in data) else None
    if not isinstance(data, Mapping) or "tests" in data:
        return None
    queries = data.get("queries")
    if isinstance(queries, list) and any(_is_item(x) for x in queries):
        return "{skill_name, queries}" if "skill_name" in data else "{queries}"
    evals = data.get("evals")
    if isinstance(evals, list) and evals and all(_is_item(x) for x in evals):
        return "{evals: [{query, should_trigger}]}"
    cases = data.get("cases")
    if isinstance(cases, list) and any(_is_item(x) for x in cases):
        return "{cases: [{expected: trigger | do_not_trigger}]}"
    return None


def read(reading: Reading, variant: str) -> Part:
    data = reading.doc.data
    key = None
    if not isinstance(data, list):
        key = next(k for k in ("queries", "evals", "cases") if isinstance(data.get(k), list))
    items = data if key is None else data[key]
    at: list[str | int] = [] if key is None else [key]
    part = Part(FORMAT, variant, needs_skill=True)
    for i, item in enumerate(items):
        test = _query(reading, item, [*at, i])
        if test is not None:
            part.tests.append(test)
    return part


def _query(reading: Reading, item: Any, at: list[str | int]) -> Any:
    if not isinstance(item, Mapping):
        reading.error(at, "a trigger query must be a mapping with `query` and `should_trigger`")
        return None
    for key in item:
        if key not in _KNOWN and key not in ANNOTATIONS:
            reading.warn([*at, key], f"`{key}` is not read (trigger sets do not use it)", key=True)
    name = "query" if "query" in item else "prompt" if "prompt" in item else None
    if name is None:
        reading.error(at, "this trigger query has no `query` (or `prompt`)")
        return None
    text = reading.text(item[name], [*at, name], name)
    label = _label(reading, item, at)
    if text is None or label is None:
        return None
    test: dict[str, Any] = {
        "prompt": reading.wrap([*at, name], literal(text)),
        "should_trigger": reading.wrap(
            [*at, "should_trigger" if "should_trigger" in item else "expected"], label
        ),
    }
    if isinstance(item.get("id"), (str, int)) and not isinstance(item.get("id"), bool):
        test["id"] = reading.wrap([*at, "id"], f"trigger-{item['id']}")
    return reading.wrap(at, test, reading.origin(at, "query"))


def _label(reading: Reading, item: Mapping[str, Any], at: list[str | int]) -> bool | None:
    if "should_trigger" in item:
        value = item["should_trigger"]
        if isinstance(value, bool):
            return value
        name = _skill_name(reading)
        named = isinstance(value, str) and value.strip().lower() not in _WORDS
        if isinstance(value, str) and value.strip() and named and name is not None:
            # A set for several skills names the one each query is for: this skill's own
            # queries should trigger it, the others' should not.
            return value == name or value.endswith((f":{name}", f"/{name}"))
        reading.error(
            [*at, "should_trigger"], "`should_trigger` must be true or false (or a skill's name)"
        )
        return None
    raw = item.get("expected")
    label = _LABELS.get(str(raw).lower()) if isinstance(raw, str) else None
    if label is None:
        reading.error(
            [*at, "expected"] if "expected" in item else at,
            "`expected` must be `trigger` or `do_not_trigger`"
            if "expected" in item
            else "this trigger query has no `should_trigger` (or `expected`)",
        )
    return label


def _skill_name(reading: Reading) -> str | None:
    """The name of the skill beside the file, for sets that name a skill per query."""
    if reading.skill is None:
        return None

    try:
        return load_skill(reading.skill, reading.at()).name
    except DiagnosticsError:
        return None
