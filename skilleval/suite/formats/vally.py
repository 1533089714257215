"""dotnet/skills' Vally specs: ``stimuli:`` with ``graders:``, and the older ``scenarios:``.

Each stimulus (or scenario) becomes a test. ``config:`` or ``defaults:`` (never both, as in
Vally) set ``runs`` (trials) and ``timeout``. Graders map to skilleval's assertion types:
``output-contains`` → ``contains``, ``output-matches`` → ``regex`` (and their ``not``
forms), the file graders → the ``file-*`` types (a glob path → a ``run-command`` check),
``run-command`` → ``run-command``, and ``exit-success`` → ``run-command`` when it names a
command, else the reply ending normally. ``environment.files`` (or the older ``setup:`` with
``files``, ``copy_test_files`` and ``commands``) set up the test's workspace,
``expect_activation`` is a ``should_trigger`` label, and ``expect_tools`` (the original
agent's tools) is a check the local run cannot make. The ``rubric`` is the ``side-by-side``
judge: the skill-on answer against the skill-off one, item by item, as Vally judges it.

The graders are read in :mod:`.vally_graders`, the workspace in :mod:`.vally_workspace`;
this module reads the spec, its stimuli and their tool constraints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skilleval.suite.formats.reading import ANNOTATIONS, Part, Reading, literal, unavailable
from skilleval.suite.formats.tree import At
from skilleval.suite.formats.vally_graders import grader_kind, read_grader, read_rubric
from skilleval.suite.formats.vally_workspace import read_environment

FORMAT = "Vally spec"

_TOP = {"name", "description", "type", "config", "defaults", "stimuli", "scenarios", "tags"}
_STIMULUS = {
    "name",
    "prompt",
    "environment",
    "setup",
    "graders",
    "assertions",
    "rubric",
    "expect_activation",
    "constraints",
    "runs",
    "timeout",
    "tags",
    "description",
    "expect_tools",
    "reject_tools",
}


def detect(data: Any) -> str | None:
    """The variant of a Vally spec, or None when ``data`` is not one."""
    if not isinstance(data, Mapping) or "tests" in data:
        return None
    if isinstance(data.get("stimuli"), list):
        return "stimuli/graders"
    scenarios = data.get("scenarios")
    if (
        isinstance(scenarios, list)
        and scenarios
        and all(isinstance(s, Mapping) and "prompt" in s and "tests" not in s for s in scenarios)
    ):
        return "scenarios/assertions (older)"
    return None


def read(reading: Reading, variant: str) -> Part:
    data: Mapping[str, Any] = reading.doc.data
    part = Part(FORMAT, variant)
    for key in data:
        if key not in _TOP:
            reading.warn([key], f"`{key}` is not read (Vally specs here do not use it)", key=True)
    if "config" in data and "defaults" in data:
        reading.error(
            ["defaults"], "`config:` and `defaults:` are the same block: keep one", key=True
        )
    block = "defaults" if "defaults" in data else "config" if "config" in data else None
    defaults: Mapping[str, Any] = {}
    if block is not None:
        if isinstance(data[block], Mapping):
            defaults = data[block]
            part.variant += f", `{block}:`"
        else:
            reading.error([block], f"`{block}` must be a mapping")
    if data.get("description") and isinstance(data["description"], str):
        part.settings["description"] = data["description"]
    if data.get("type") in ("capability", "regression"):
        part.settings["type"] = data["type"]
    runs = _runs(reading, defaults.get("runs"), [block or "", "runs"]) if defaults else 1
    if runs > 1:
        part.settings["trials"] = runs
        part.settings["decoding"] = {"mode": "distribution"}
    if defaults and "timeout" in defaults:
        _timeout_note(reading, [block or "", "timeout"])
    for setting in defaults:
        if setting not in ("runs", "timeout"):
            reading.warn(
                [block or "", setting],
                f"`{setting}` is not read: skilleval runs the suite's own model and judge",
                key=True,
            )
    key = "stimuli" if "stimuli" in data else "scenarios"
    items = data.get(key)
    if not isinstance(items, list) or not items:
        reading.error([key], f"`{key}` must list at least one stimulus")
        return part
    for i, item in enumerate(items):
        test = _stimulus(reading, item, [key, i], part)
        if test is not None:
            part.tests.append(test)
    return part


def _runs(reading: Reading, raw: Any, at: list[str | int]) -> int:
    if raw is None:
        return 1
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        reading.error(at, "`runs` must be a whole number of at least 1")
        return 1
    return raw


def _timeout_note(reading: Reading, at: list[str | int]) -> None:
    reading.warn_once(
        at,
        "`timeout` is not enforced: a local model call has no per-test time limit "
        "(stop a run with Ctrl-C and --resume it)",
    )


def _stimulus(reading: Reading, item: Any, at: list[str | int], part: Part) -> Any:
    if not isinstance(item, Mapping):
        reading.error(at, "a stimulus must be a mapping with a `prompt`")
        return None
    for key in item:
        if key not in _STIMULUS and key not in ANNOTATIONS:
            reading.warn([*at, key], f"`{key}` is not read", key=True)
    if "prompt" not in item:
        reading.error(at, "this stimulus has no `prompt`")
        return None
    prompt = reading.text(item["prompt"], [*at, "prompt"], "prompt")
    if prompt is None:
        return None
    test: dict[str, Any] = {}
    if isinstance(item.get("name"), str) and item["name"].strip():
        test["description"] = item["name"]
    test["prompt"] = reading.wrap([*at, "prompt"], literal(prompt))
    if "expect_activation" in item:
        value = item["expect_activation"]
        if isinstance(value, bool) and reading.skill is None:
            reading.warn(
                [*at, "expect_activation"],
                "`expect_activation` needs the skill to route, and no SKILL.md was found "
                "beside the spec: the stimulus runs without it",
                key=True,
            )
        elif isinstance(value, bool):
            test["should_trigger"] = reading.wrap([*at, "expect_activation"], value)
        else:
            reading.error([*at, "expect_activation"], "`expect_activation` must be true or false")
    if "runs" in item:
        runs = _runs(reading, item["runs"], [*at, "runs"])
        if runs != part.settings.get("trials", 1):
            reading.warn(
                [*at, "runs"],
                "a stimulus's own `runs` is not kept: skilleval runs every test the suite's "
                "number of trials (`runs` in `defaults:`)",
                key=True,
            )
    if "timeout" in item:
        _timeout_note(reading, [*at, "timeout"])
    asserts: list[Any] = []
    setup = read_environment(reading, item, at, asserts)
    for key in ("graders", "assertions"):
        graders = item.get(key)
        if graders is None:
            continue
        if not isinstance(graders, list):
            reading.error([*at, key], f"`{key}` must be a list")
            continue
        for j, grader in enumerate(graders):
            asserts.extend(read_grader(reading, grader, [*at, key, j], item, at))
    asserts.extend(_constraints(reading, item.get("constraints"), [*at, "constraints"]))
    # Older specs write the tool constraints on the scenario itself.
    loose = {k: item[k] for k in ("expect_tools", "reject_tools") if k in item}
    if loose:
        asserts.extend(_constraints(reading, loose, at))
    if "rubric" in item and not any(grader_kind(g) == "prompt" for g in item.get("graders") or []):
        asserts.extend(read_rubric(reading, item["rubric"], [*at, "rubric"]))
    if asserts:
        test["assert"] = asserts
    workspace = any(
        isinstance(a, At)
        and isinstance(a.value, Mapping)
        and (
            str(a.value.get("type", "")).startswith("file-") or a.value.get("type") == "run-command"
        )
        for a in asserts
    )
    if setup or workspace:
        test["environment"] = setup
    return reading.wrap(at, test, reading.origin(at, "stimulus"))


def _constraints(reading: Reading, raw: Any, at: list[str | int]) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        reading.error(at, "`constraints` must be a mapping")
        return []
    out: list[Any] = []
    for key, value in raw.items():
        names = (
            reading.texts(value, [*at, key], key) if key in ("expect_tools", "reject_tools") else []
        )
        if key == "expect_tools":
            for name, i in names:
                where = [*at, key] if i < 0 else [*at, key, i]
                out.append(
                    unavailable(
                        reading,
                        where,
                        f"tool {name} is called",
                        f"the local run has no tool `{name}` (Vally's agent's tools are not "
                        "available to a local model)",
                    )
                )
        elif key == "reject_tools":
            if names:
                reading.warn(
                    [*at, key],
                    "`reject_tools` is not checked: the local run has none of the agent's "
                    "tools, so it cannot call them",
                    key=True,
                )
        else:
            reading.warn([*at, key], f"constraint `{key}` is not read", key=True)
    return out
