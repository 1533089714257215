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
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from skilleval.suite.formats.reading import ANNOTATIONS, Part, Reading, literal, unavailable
from skilleval.suite.formats.tree import At

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
_TEXT_GRADERS = {
    "output-contains": ("contains", ("substring", "value", "text")),
    "output-not-contains": ("not-contains", ("substring", "value", "text")),
    "output-matches": ("regex", ("pattern", "regex", "value")),
    "output-not-matches": ("not-regex", ("pattern", "regex", "value")),
}
_FILE_GRADERS = {
    "file-exists": "file-exists",
    "file-not-exists": "file-not-exists",
    "file-contains": "file-contains",
    "file-not-contains": "file-not-contains",
    "file-matches": "file-matches",
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
    setup = _environment(reading, item, at, asserts)
    for key in ("graders", "assertions"):
        graders = item.get(key)
        if graders is None:
            continue
        if not isinstance(graders, list):
            reading.error([*at, key], f"`{key}` must be a list")
            continue
        for j, grader in enumerate(graders):
            asserts.extend(_grader(reading, grader, [*at, key, j], item, at))
    asserts.extend(_constraints(reading, item.get("constraints"), [*at, "constraints"]))
    # Older specs write the tool constraints on the scenario itself.
    loose = {k: item[k] for k in ("expect_tools", "reject_tools") if k in item}
    if loose:
        asserts.extend(_constraints(reading, loose, at))
    if "rubric" in item and not any(_kind(g) == "prompt" for g in item.get("graders") or []):
        asserts.extend(_rubric(reading, item["rubric"], [*at, "rubric"]))
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


def _kind(grader: Any) -> str:
    raw = grader.get("type") if isinstance(grader, Mapping) else None
    return str(raw).replace("_", "-") if isinstance(raw, str) else ""


def _config(grader: Mapping[str, Any]) -> Mapping[str, Any]:
    """A grader's settings: its ``config:`` (newer) or its own keys (older)."""
    config = grader.get("config")
    if isinstance(config, Mapping):
        return config
    return {k: v for k, v in grader.items() if k not in ("type", "name", "config")}


def _grader(
    reading: Reading,
    grader: Any,
    at: list[str | int],
    item: Mapping[str, Any],
    item_at: list[str | int],
) -> list[Any]:
    if not isinstance(grader, Mapping) or not isinstance(grader.get("type"), str):
        reading.error(at, "a grader must be a mapping with a `type`")
        return []
    kind = _kind(grader)
    config = _config(grader)
    if (
        "config" in grader
        and not isinstance(grader["config"], Mapping)
        and kind not in ("exit-success", "prompt")
    ):
        reading.error(
            [*at, "config"],
            f"this {kind} grader's `config` is empty: it would check nothing",
            key=True,
        )
        return []
    origin = reading.origin(at, f"grader {kind}")
    if kind in _TEXT_GRADERS:
        target, keys = _TEXT_GRADERS[kind]
        key = next((k for k in keys if k in config), None)
        if key is None:
            reading.error(at, f"this {kind} grader has no `{keys[0]}`")
            return []
        text = reading.text(
            config[key], [*at, "config", key] if "config" in grader else [*at, key], key
        )
        if text is None:
            return []
        return [reading.wrap(at, {"type": target, "value": literal(text)}, origin)]
    if kind in _FILE_GRADERS:
        return [_file_grader(reading, _FILE_GRADERS[kind], config, at, origin)]
    if kind in ("run-command", "exit-success"):
        command = config.get("command")
        if command is None and kind == "exit-success":
            reading.warn(
                at,
                "exit-success names no command: it is read as the reply ending normally "
                "(`finish-reason: stop`), the closest a local run has to the agent exiting cleanly",
            )
            return [reading.wrap(at, {"type": "finish-reason", "value": "stop"}, origin)]
        if not isinstance(command, (str, list)) or not command:
            reading.error(at, f"this {kind} grader has no `command`")
            return []
        value: dict[str, Any] = {"command": command}
        code = config.get("exit_code", config.get("expected_exit_code", 0))
        if isinstance(code, int) and not isinstance(code, bool):
            value["exit_code"] = code
        return [reading.wrap(at, {"type": "run-command", "value": value}, origin)]
    if kind == "prompt":
        rubric = item.get("rubric", config.get("prompt"))
        if rubric is None:
            reading.error(at, "this prompt grader has no `rubric` beside it to judge")
            return []
        where = [*item_at, "rubric"] if "rubric" in item else [*at, "config", "prompt"]
        return _rubric(reading, rubric, where)
    return [
        unavailable(reading, at, kind, f"Vally's `{kind}` grader has no equivalent in a local run")
    ]


def _file_grader(
    reading: Reading, target: str, config: Mapping[str, Any], at: list[str | int], origin: str
) -> Any:
    path = config.get("path", config.get("file"))
    if not isinstance(path, str) or not path:
        reading.error(at, "this grader has no `path`")
        return reading.wrap(
            at, {"type": "unavailable", "value": {"text": target, "reason": "no path"}}
        )
    if any(c in path for c in "*?["):
        return reading.wrap(at, _glob_check(target, path, config), origin)
    if target in ("file-exists", "file-not-exists"):
        return reading.wrap(at, {"type": target, "value": path}, origin)
    if target == "file-matches":
        pattern = config.get("pattern", config.get("regex", ""))
        return reading.wrap(
            at, {"type": target, "value": {"path": path, "pattern": str(pattern)}}, origin
        )
    text = config.get("substring", config.get("value", config.get("text", "")))
    return reading.wrap(at, {"type": target, "value": {"path": path, "value": str(text)}}, origin)


_GLOB_SCRIPT = """\
import glob, re, sys
kind, pattern, needle = sys.argv[1:4]
paths = [p for p in glob.glob(pattern, recursive=True) if kind.endswith("exists") or not p.endswith("/")]
if kind.endswith("exists"):
    found = bool(paths)
else:
    def text(p):
        try:
            with open(p, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""
    test = (lambda t: re.search(needle, t, re.M)) if kind == "file-matches" else (lambda t: needle in t)
    found = any(test(text(p)) for p in paths)
negated = "-not-" in kind
sys.exit(0 if found != negated else 1)
"""


def _glob_check(target: str, path: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """A file grader whose path is a glob (``**/*.csproj``): any matching file, as in Vally.

    skilleval's file types take one path, so the check is a ``run-command`` of a short
    Python script over the workspace."""
    if target == "file-matches":
        needle = config.get("pattern", config.get("regex", ""))
    else:
        needle = config.get("substring", config.get("value", config.get("text", "")))
    command = ["python3", "-c", _GLOB_SCRIPT, target, path, str(needle)]
    return {"type": "run-command", "value": {"command": command}}


def _rubric(reading: Reading, raw: Any, at: list[str | int]) -> list[Any]:
    items = reading.texts(raw, at, "rubric")
    if not items:
        return []
    texts = [literal(text) for text, _ in items]
    if reading.skill is not None:
        # Vally's own meaning: the skill's answer against the no-skill arm's, item by item.
        value: Any = texts if items[0][1] >= 0 else texts[0]
        return [
            reading.wrap(at, {"type": "side-by-side", "value": value}, reading.origin(at, "rubric"))
        ]
    reading.warn_once(
        at,
        "Vally judges the rubric side by side against the no-skill arm, and no SKILL.md was "
        "found beside the spec to make that arm: the judge grades each item on the reply alone",
    )
    out = []
    for text, i in items:
        where = at if i < 0 else [*at, i]
        out.append(
            reading.wrap(
                where,
                {"type": "llm-rubric", "value": literal(text), "threshold": 0},
                reading.origin(where, "rubric item"),
            )
        )
    return out


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


def _environment(
    reading: Reading, item: Mapping[str, Any], at: list[str | int], missing: list[Any]
) -> dict[str, Any]:
    """The stimulus's workspace; a fixture not found adds an ``unavailable`` check to
    ``missing``."""
    env = item.get("environment")
    out: dict[str, Any] = {}
    if isinstance(env, Mapping) and isinstance(env.get("files"), list):
        files = []
        for j, entry in enumerate(env["files"]):
            where = [*at, "environment", "files", j]
            if not isinstance(entry, Mapping) or not isinstance(entry.get("src"), str):
                reading.error(where, "an environment file must be `{src, dest}`")
                continue
            src = reading.path.parent / entry["src"]
            if not src.exists():
                reading.warn(
                    [*where, "src"],
                    f"fixture not found: {entry['src']}; the stimulus's result will be an error",
                )
                missing.append(
                    unavailable(
                        reading, [*where, "src"], f"fixture {entry['src']}", "it is missing"
                    )
                )
                continue
            dest = entry.get("dest") if isinstance(entry.get("dest"), str) else src.name
            files.append(reading.wrap(where, {"src": reading.relative(src), "dest": dest}))
        if files:
            out["files"] = files
    elif env is not None:
        reading.error([*at, "environment"], "`environment` must be a mapping with `files:`")
    setup = item.get("setup")
    if setup is None:
        return out
    if not isinstance(setup, Mapping):
        reading.error([*at, "setup"], "`setup` must be a mapping (`files:`, `commands:` …)")
        return out
    for key in setup:
        if key not in ("files", "commands", "copy_test_files"):
            reading.warn([*at, "setup", key], f"setup `{key}` is not read", key=True)
    if setup.get("copy_test_files") is True:
        out.setdefault("files", []).extend(_test_files(reading, [*at, "setup", "copy_test_files"]))
    commands: list[Any] = []
    for j, entry in enumerate(setup.get("files") or []):
        where = [*at, "setup", "files", j]
        path = entry.get("path") if isinstance(entry, Mapping) else None
        if not isinstance(path, str) or not _SAFE.match(path) or ".." in path.split("/"):
            reading.error(where, "a setup file must be `{path, content}` with a relative path")
            continue
        content = entry.get("content", "")
        commands.append(
            reading.wrap(
                where,
                [
                    "sh",
                    "-c",
                    'mkdir -p "$(dirname "$1")" && printf %s "$2" > "$1"',
                    "sh",
                    path,
                    str(content),
                ],
            )
        )
    raw = setup.get("commands")
    for j, command in enumerate(raw if isinstance(raw, list) else [] if raw is None else [raw]):
        where = (
            [*at, "setup", "commands"]
            if not isinstance(raw, list)
            else [*at, "setup", "commands", j]
        )
        text = reading.text(command, where, "command")
        if text is not None:
            commands.append(reading.wrap(where, text))
    if commands:
        out["commands"] = commands
    return out


_SPEC_NAMES = ("SKILL.md",)


def _test_files(reading: Reading, at: list[str | int]) -> list[Any]:
    """``copy_test_files: true``: everything beside the spec (but the spec and the skill)."""
    folder = reading.path.parent
    out = []
    for entry in sorted(folder.iterdir()):
        if entry.resolve() == reading.path.resolve() or entry.name in _SPEC_NAMES:
            continue
        if entry.name.startswith(".") or (
            entry.suffix in (".yaml", ".yml") and "eval" in entry.name
        ):
            continue
        out.append(reading.wrap(at, {"src": reading.relative(entry), "dest": entry.name}))
    return out


_SAFE = re.compile(r"^[^/~][^\0]*$")
