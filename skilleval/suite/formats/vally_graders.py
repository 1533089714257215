"""Vally's graders as skilleval assertions.

``output-contains`` and ``output-matches`` (and their ``not`` forms) become ``contains`` and
``regex``; the file graders become the ``file-*`` types of the same name, a glob path a
``run-command`` of a short Python check; ``run-command`` stays itself and ``exit-success``
becomes ``run-command`` when it names a command, else the reply ending normally. A ``prompt``
grader with the stimulus's ``rubric`` is the ``side-by-side`` judge. Any other type is a check
the local run cannot make. A grader's settings are read from ``config:`` (newer specs) or
beside ``type:`` (older ones).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skilleval.suite.formats.reading import Reading, literal, unavailable

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


def grader_kind(grader: Any) -> str:
    raw = grader.get("type") if isinstance(grader, Mapping) else None
    return str(raw).replace("_", "-") if isinstance(raw, str) else ""


def _config(grader: Mapping[str, Any]) -> Mapping[str, Any]:
    """A grader's settings: its ``config:`` (newer) or its own keys (older)."""
    config = grader.get("config")
    if isinstance(config, Mapping):
        return config
    return {k: v for k, v in grader.items() if k not in ("type", "name", "config")}


def read_grader(
    reading: Reading,
    grader: Any,
    at: list[str | int],
    item: Mapping[str, Any],
    item_at: list[str | int],
) -> list[Any]:
    if not isinstance(grader, Mapping) or not isinstance(grader.get("type"), str):
        reading.error(at, "a grader must be a mapping with a `type`")
        return []
    kind = grader_kind(grader)
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
        return read_rubric(reading, rubric, where)
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


def read_rubric(reading: Reading, raw: Any, at: list[str | int]) -> list[Any]:
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
