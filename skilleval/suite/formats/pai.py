"""PAI Evals: suites with ``cases:``, and task files with ``graders:``.

A case becomes a test; ``negative: true`` marks a should-not case (a ``should_trigger:
false`` test when a skill is found). Graders map by type: ``llm_rubric`` → ``llm-rubric``
(PAI's scale is normalised to 0–1, as the judge's 1–5 score is), ``natural_language_assert``
→ ``llm-assert``, ``string_match`` → ``contains``, ``regex_match`` → ``regex``,
``tool_calls`` → a check the local run cannot make (the agent's tools are not the local
model's), and any other grader the same, naming it; each keeps its ``weight``. ``pass_threshold`` keeps PAI's
meaning: the test passes when its mean weighted score reaches it (a test ``threshold:``).

A task file (``task: {id, graders, …}``) is run as PAI's runner runs it: its prompt
(``prompt``, ``input`` or ``query``) is sent and its graders applied. A task file with no
prompt cannot be run, and is refused with a message that says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from skilleval.errors import SkillevalError
from skilleval.suite.formats.reading import ANNOTATIONS, Part, Reading, literal, slug, unavailable
from skilleval.userfile import display_path, read_text

SUITE = "PAI suite"
TASK = "PAI task file"

_PROMPT_KEYS = ("prompt", "input", "query", "message", "user_input")
_CASE_KNOWN = {
    *_PROMPT_KEYS,
    "id",
    "name",
    "description",
    "desc",
    "negative",
    "graders",
    "pass_threshold",
    "trials",
    "type",
    "domain",
    "tags",
    "expected",
    "expected_output",
    "metadata",
}
_NO_LOCAL_EQUIVALENT = {
    "pairwise_comparison": "it compares the output with PAI's stored reference output",
    "reference_comparison": "it needs PAI's reference store",
    "identity_consistency": "it needs PAI's identity files",
}


def detect(data: Any) -> str | None:
    """``cases`` suite or ``task`` file, or None when ``data`` is neither."""
    if not isinstance(data, Mapping) or "tests" in data:
        return None
    cases = data.get("cases")
    listed = isinstance(cases, list) and bool(cases) and all(isinstance(c, Mapping) for c in cases)
    if listed and any("graders" in c or any(k in c for k in _PROMPT_KEYS) for c in cases or ()):
        return "cases suite"
    task = data.get("task")
    if isinstance(task, Mapping) and ("graders" in task or "id" in task):
        return "`task:` mapping"
    if "graders" in data and isinstance(data.get("graders"), list) and "stimuli" not in data:
        return "keys at the top"
    return None


def read(reading: Reading, variant: str) -> Part:
    data: Mapping[str, Any] = reading.doc.data
    if variant == "cases suite":
        return _suite(reading, data, variant)
    at: list[str | int] = ["task"] if "task" in data else []
    task = data["task"] if at else data
    part = Part(TASK, variant)
    if isinstance(task, Mapping) and task.get("type") in ("capability", "regression"):
        part.settings["type"] = task["type"]
    key = next((k for k in _PROMPT_KEYS if k in task), None)
    if key is None:
        name = task.get("id") or task.get("description") or reading.path.name
        reading.error(
            at,
            f"task {name!r} has no prompt: PAI's runner sends a task's `prompt` (or `input`) "
            "to the agent, and this task has none, so there is nothing to run. Add "
            "`prompt: ...` to the task",
        )
        return part
    test = _case(reading, task, at, [], part, None)
    if test is not None:
        part.tests.append(test)
    return part


def _suite(reading: Reading, data: Mapping[str, Any], variant: str) -> Part:
    part = Part(SUITE, variant)
    for key in ("name", "description"):
        if isinstance(data.get(key), str) and key == "description":
            part.settings["description"] = data[key]
    if data.get("type") in ("capability", "regression"):
        part.settings["type"] = data["type"]
    shared: list[Any] = data["graders"] if isinstance(data.get("graders"), list) else []
    threshold = data.get("pass_threshold")
    for i, case in enumerate(data["cases"]):
        test = _case(reading, case, ["cases", i], shared, part, threshold)
        if test is not None:
            part.tests.append(test)
    return part


def _case(
    reading: Reading,
    case: Any,
    at: list[str | int],
    shared: list[Any],
    part: Part,
    threshold: Any,
) -> Any:
    if not isinstance(case, Mapping):
        reading.error(at, "a case must be a mapping with a `prompt` (or `input`)")
        return None
    for key in case:
        if key not in _CASE_KNOWN and key not in ANNOTATIONS and part.format == SUITE:
            reading.warn([*at, key], f"`{key}` is not read", key=True)
    key = next((k for k in _PROMPT_KEYS if k in case), None)
    if key is None:
        reading.error(at, "this case has no prompt (`prompt` or `input`): there is nothing to send")
        return None
    prompt = reading.text(case[key], [*at, key], key)
    if prompt is None:
        return None
    test: dict[str, Any] = {}
    if isinstance(case.get("id"), (str, int)) and not isinstance(case.get("id"), bool):
        test["id"] = reading.wrap([*at, "id"], slug(str(case["id"])))
    label = case.get("description") or case.get("desc") or case.get("name")
    if isinstance(label, str) and label.strip():
        test["description"] = label
    test["prompt"] = reading.wrap([*at, key], literal(prompt))
    if case.get("negative") is True and reading.skill is None:
        reading.warn(
            [*at, "negative"],
            "`negative: true` marks a case the skill should stay out of, and no SKILL.md was "
            "found beside the file to route: the case runs without the label",
            key=True,
        )
    elif case.get("negative") is True:
        test["should_trigger"] = reading.wrap([*at, "negative"], False)
    asserts: list[Any] = []
    for j, grader in enumerate(shared):
        asserts.extend(_grader(reading, grader, ["graders", j]))
    graders = case.get("graders")
    if graders is not None and not isinstance(graders, list):
        reading.error([*at, "graders"], "`graders` must be a list")
    for j, grader in enumerate(graders if isinstance(graders, list) else []):
        asserts.extend(_grader(reading, grader, [*at, "graders", j]))
    if asserts:
        test["assert"] = asserts
    own = case.get("pass_threshold", threshold)
    if own is not None:
        where = [*at, "pass_threshold"] if "pass_threshold" in case else ["pass_threshold"]
        if isinstance(own, bool) or not isinstance(own, (int, float)) or not 0 <= own <= 1:
            reading.error(where, "`pass_threshold` must be a number from 0 to 1")
        else:
            test["threshold"] = reading.wrap(where, float(own))
    if "trials" in case:
        reading.warn(
            [*at, "trials"],
            "a case's own `trials` is not kept: set `trials:` for the suite (with "
            "`decoding: {mode: distribution}`) after `skilleval import pai`",
            key=True,
        )
    return reading.wrap(at, test, reading.origin(at, "case"))


def _grader(reading: Reading, grader: Any, at: list[str | int]) -> list[Any]:
    if not isinstance(grader, Mapping) or not isinstance(grader.get("type"), str):
        reading.error(at, "a grader must be a mapping with a `type`")
        return []
    kind = grader["type"]
    params: Mapping[str, Any] = (
        grader["params"] if isinstance(grader.get("params"), Mapping) else grader
    )
    weight = grader.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
        reading.error([*at, "weight"], "`weight` must be a number of at least 0")
        weight = 1
    origin = reading.origin(at, f"grader {kind}")
    base: dict[str, Any] = {} if weight == 1 else {"weight": weight}

    def entry(body: dict[str, Any]) -> Any:
        return reading.wrap(at, {**body, **base}, origin)

    if kind == "llm_rubric":
        key = next((k for k in ("rubric", "criteria", "outcome_assertions") if k in params), None)
        rubric = params.get(key) if key else None
        where: list[str | int] = [*at, "params"] if params is not grader else [*at]
        where.append(key or "type")
        if isinstance(rubric, str) and _RUBRIC_FILE.match(rubric.strip()):
            found = _rubric_file(reading, rubric.strip())
            if found is None:
                reading.warn(where, f"rubric file not found: {rubric}; the result will be an error")
                return [unavailable(reading, where, f"rubric {rubric}", "its file is missing")]
            rubric = found
        items = reading.texts(rubric, where, "rubric") if rubric else []
        if not items:
            reading.error(at, "this llm_rubric grader has no `rubric`")
            return []
        scale = params.get("scale")
        if scale is not None:
            reading.warn_once(
                at,
                f"llm_rubric's scale ({scale}) is read as the judge's 1–5 score, normalised to "
                "0–1 as PAI normalises its own",
            )
        value: Any = literal(items[0][0]) if items[0][1] < 0 else [literal(t) for t, _ in items]
        return [entry({"type": "llm-rubric", "value": value})]
    if kind == "natural_language_assert":
        raw = params.get("assertions", params.get("assertion"))
        items = reading.texts(raw, [*at, "params"], "assertion") if raw else []
        if not items:
            reading.error(at, "this natural_language_assert grader has no `assertion`")
            return []
        return [entry({"type": "llm-assert", "value": [literal(t) for t, _ in items]})]
    if kind in ("string_match", "regex_match"):
        raw = params.get(
            "patterns", params.get("pattern", params.get("expected", params.get("value")))
        )
        items = reading.texts(raw, [*at, "params"], "pattern") if raw is not None else []
        if not items:
            reading.error(at, f"this {kind} grader has no `pattern`")
            return []
        target = "contains" if kind == "string_match" else "regex"
        return [entry({"type": target, "value": literal(t)}) for t, _ in items]
    if kind == "tool_calls":
        out = []
        for name in _names(params.get("required", params.get("sequence"))):
            out.append(
                unavailable(
                    reading,
                    at,
                    f"tool {name} is called",
                    f"the local run has no tool `{name}` (PAI's agent's tools are not available "
                    "to a local model)",
                )
            )
        if _names(params.get("forbidden", params.get("prohibited"))):
            reading.warn(
                at,
                "tool_calls' forbidden tools are not checked: the local run has none of the "
                "agent's tools, so it cannot call them",
            )
        elif not out:
            reading.error(at, "this tool_calls grader names no `required` or `forbidden` tools")
        return out
    why = _NO_LOCAL_EQUIVALENT.get(kind, f"PAI's `{kind}` grader has no equivalent in a local run")
    return [unavailable(reading, at, kind, why)]


def _names(raw: Any) -> list[str]:
    """Tool names written as texts or as ``{tool: NAME, params}`` mappings."""
    if isinstance(raw, str):
        return [raw]
    out: list[str] = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, Mapping):
            item = item.get("tool", item.get("name"))
        if isinstance(item, (str, int)) and not isinstance(item, bool):
            out.append(str(item))
    return out


_RUBRIC_FILE = re.compile(r"^[\w./-]+\.(?:md|txt|markdown)$")


def _rubric_file(reading: Reading, name: str) -> str | None:
    """The text of a rubric written as a file name, looked up beside the file and the skill."""
    roots = [reading.path.parent, *([reading.skill.parent] if reading.skill else [])]
    for root in roots:
        path = root / name
        if path.is_file():
            try:
                return read_text(path, display_path(path))
            except SkillevalError:
                return None
    return None
