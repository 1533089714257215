"""skill-creator's ``evals/evals.json``: one test per eval, one judged check per expectation.

Shapes read (``docs/formats.md`` has the mapping):

- ``{skill_name, evals: [...]}``, or a bare list of evals;
- an eval's prompt as ``prompt`` or ``query``; ``expected_output`` (the judge's reference);
  ``files`` (copied into the test's workspace);
- ``expectations`` or ``assertions``, each a text or ``{name, description}``,
  ``{name, check}`` or ``{text}``: one ``llm-rubric`` each, judged pass or fail on its own,
  its reason being the evidence (as skill-creator's ``grading.json`` gives
  ``{text, passed, evidence}``);
- ``expect`` as ``expectations``, and ``fail`` (``must_not``, ``anti_expectations``):
  behaviours that fail the eval, one ``not-llm-rubric`` each;
- an eval with only an ``expected_output``: that text is its one rubric;
- ``must_have`` and ``must_not_have`` regex lists: ``regex`` and ``not-regex``.

An expectation about what the agent ran or wrote cannot be judged from the reply, and is an
``unavailable`` check (an ``error`` verdict with the reason) rather than a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from skilleval.suite.formats.reading import (
    ANNOTATIONS,
    Part,
    Reading,
    literal,
    needs_more_than_reply,
    slug,
    unavailable,
)
from skilleval.suite.skills import load_skill

FORMAT = "skill-creator evals"

_EVAL_KEYS = {"prompt", "query", "expectations", "assertions", "expected_output", "expect"}
_POSITIVE = ("expectations", "assertions", "expect")
"""Keys of the checks that must hold (``expect`` in some hand-written files)."""
_NEGATIVE = ("fail", "must_not", "anti_expectations")
"""Keys of behaviours that fail the eval when the reply shows them."""
_KNOWN = {
    "id",
    "name",
    "description",
    "prompt",
    "query",
    "expected_output",
    "files",
    "expectations",
    "assertions",
    "must_have",
    "must_not_have",
    *_POSITIVE,
    *_NEGATIVE,
}
_READ_FILE_TOOL = {
    "name": "read_file",
    "description": "Read a text file in the working folder.",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
    "command": ["cat", "--", "{path}"],
}


def detect(data: Any) -> str | None:
    """The variant of a skill-creator evals file, or None when ``data`` is not one."""
    if isinstance(data, Mapping) and isinstance(data.get("evals"), list) and "tests" not in data:
        return "{skill_name, evals}" if "skill_name" in data else "{evals}"
    if not isinstance(data, list) or not data or not all(isinstance(x, Mapping) for x in data):
        return None
    if any("should_trigger" in x for x in data):
        return None
    graded = {*_POSITIVE, *_NEGATIVE, "expected_output", "must_have"}
    if any(_EVAL_KEYS & set(x) for x in data) and any(graded & set(x) for x in data):
        return "a list of evals"
    return None


def read(reading: Reading, variant: str) -> Part:
    data = reading.doc.data
    at: list[str | int] = ["evals"] if isinstance(data, Mapping) else []
    evals = data["evals"] if isinstance(data, Mapping) else data
    part = Part(FORMAT, variant)
    shapes: set[str] = set()
    if isinstance(data, Mapping) and isinstance(data.get("skill_name"), str) and reading.skill:
        _check_name(reading, data["skill_name"])
    if isinstance(data, Mapping) and isinstance(data.get("description"), str):
        part.settings["description"] = data["description"]
    if not evals:
        reading.error(at, "`evals` is empty: there is nothing to run")
    for i, item in enumerate(evals):
        test = _eval(reading, item, [*at, i], shapes)
        if test is not None:
            part.tests.append(test)
    if shapes:
        part.variant = f"{variant}; expectations as {', '.join(sorted(shapes))}"
    return part


def _check_name(reading: Reading, name: str) -> None:

    try:
        skill = load_skill(reading.skill, reading.at(["skill_name"])) if reading.skill else None
    except Exception:  # a broken SKILL.md is reported when the suite loads it
        return
    if skill is not None and reading.skill is not None and skill.name != name:
        reading.warn(
            ["skill_name"],
            f"skill_name {name!r} differs from the name in {reading.skill.name} "
            f"({skill.name!r}); the SKILL.md beside the file is the skill under test",
        )


def _eval(reading: Reading, item: Any, at: list[str | int], shapes: set[str]) -> Any:
    if not isinstance(item, Mapping):
        reading.error(at, "an eval must be a mapping with a `prompt`")
        return None
    for key in item:
        if key not in _KNOWN and key not in ANNOTATIONS:
            reading.warn(
                [*at, key], f"`{key}` is not read (skill-creator evals do not use it)", key=True
            )
    key = "prompt" if "prompt" in item else "query" if "query" in item else None
    if key is None:
        reading.error(at, "this eval has no `prompt` (or `query`): there is nothing to send")
        return None
    prompt = reading.text(item[key], [*at, key], key)
    if prompt is None:
        return None
    test: dict[str, Any] = {}
    raw_id = item.get("id")
    if raw_id is not None and not isinstance(raw_id, (dict, list, bool)):
        text = str(raw_id)
        test["id"] = reading.wrap([*at, "id"], f"eval-{text}" if text.isdigit() else slug(text))
    label = item.get("name") or item.get("description")
    if isinstance(label, str) and label.strip():
        test["description"] = label
    test["prompt"] = reading.wrap([*at, key], literal(prompt))
    reference = item.get("expected_output")
    if reference is not None and not isinstance(reference, str):
        reading.error([*at, "expected_output"], "`expected_output` must be a text")
        reference = None
    asserts: list[Any] = []
    for name in _POSITIVE:
        if name in item:
            asserts.extend(_expectations(reading, item[name], [*at, name], reference, shapes))
    for name in _NEGATIVE:
        if name in item:
            shapes.add(f"`{name}` (must not happen)")
            asserts.extend(
                _expectations(reading, item[name], [*at, name], reference, shapes, negated=True)
            )
    for name, kind in (("must_have", "regex"), ("must_not_have", "not-regex")):
        if name not in item:
            continue
        for pattern, i in reading.texts(item[name], [*at, name], name):
            where = [*at, name] if i < 0 else [*at, name, i]
            asserts.append(
                reading.wrap(
                    where, {"type": kind, "value": literal(pattern)}, reading.origin(where, name)
                )
            )
    if not asserts and reference:
        # Nothing but the expected output: the judge holds the reply to it.
        where = [*at, "expected_output"]
        reading.warn(
            where,
            "this eval has no expectations: its expected_output is judged as its one rubric",
            key=True,
        )
        asserts.append(
            reading.wrap(
                where,
                {"type": "llm-rubric", "value": literal(reference), "threshold": 0},
                reading.origin(where, "expected_output"),
            )
        )
    if not asserts:
        reading.warn(at, "this eval has no expectations: it is run, and only its reply is kept")
    else:
        test["assert"] = asserts
    missing: list[Any] = []
    files = _files(reading, item.get("files"), [*at, "files"], missing)
    if missing:
        test.setdefault("assert", []).extend(missing)
    if files:
        test["environment"] = {"files": files}
        test["tools"] = [dict(_READ_FILE_TOOL)]
    return reading.wrap(at, test, reading.origin(at, "eval"))


def _expectations(
    reading: Reading,
    raw: Any,
    at: list[str | int],
    reference: str | None,
    shapes: set[str],
    *,
    negated: bool = False,
) -> list[Any]:
    """One judged check per expectation; with ``negated``, each is a behaviour the reply must
    not show (``not-llm-rubric``: it fails when the judge finds it)."""
    if not isinstance(raw, list):
        raw, single = [raw], True
    else:
        single = False
    out: list[Any] = []
    for i, item in enumerate(raw):
        where = at if single else [*at, i]
        text, name = _expectation(reading, item, where, shapes)
        if text is None:
            continue
        why = needs_more_than_reply(text)
        if why is not None:
            out.append(unavailable(reading, where, text, why))
            continue
        kind = "not-llm-rubric" if negated else "llm-rubric"
        entry: dict[str, Any] = {"type": kind, "value": literal(text), "threshold": 0}
        if reference:
            entry["reference"] = literal(reference)
        if name:
            entry["metric"] = name
        out.append(reading.wrap(where, entry, reading.origin(where, "expectation")))
    return out


def _expectation(
    reading: Reading, item: Any, at: list[str | int], shapes: set[str]
) -> tuple[str | None, str | None]:
    if isinstance(item, str):
        shapes.add("texts")
        return reading.text(item, at, "expectation"), None
    if not isinstance(item, Mapping):
        reading.error(at, "an expectation must be a text or a mapping with `text`")
        return None, None
    for key in ("text", "description", "check", "expectation", "assertion"):
        if key in item:
            name = item.get("name")
            shapes.add("{name, " + key + "}" if name is not None else "{" + key + "}")
            return reading.text(item[key], [*at, key], key), str(name) if name else None
    if "name" in item:
        shapes.add("{name}")
        return reading.text(item["name"], [*at, "name"], "name"), None
    reading.error(at, "this expectation has no `text`, `description` or `check`")
    return None, None


def _files(reading: Reading, raw: Any, at: list[str | int], missing: list[Any]) -> list[Any]:
    """The workspace's files; each one not found adds an ``unavailable`` check to ``missing``."""
    if raw is None or raw == []:
        return []
    single = not isinstance(raw, list)
    if single:
        raw = [raw]
    out: list[Any] = []
    roots = [
        r
        for r in (
            reading.skill.parent if reading.skill else None,
            reading.path.parent,
            reading.path.parent.parent,
        )
        if r
    ]
    for i, item in enumerate(raw):
        where = at if single else [*at, i]
        name = reading.text(item, where, "files")
        if name is None:
            continue
        found = next((r / name for r in roots if (r / name).exists()), None)
        if found is None:
            reading.warn(
                where,
                f"input file not found: {name} (looked beside the SKILL.md, beside this file "
                "and in the folder above it); the eval's result will be an error",
            )
            missing.append(unavailable(reading, where, f"input file {name}", "it is missing"))
            continue
        written = PurePosixPath(name)
        dest = (
            written.as_posix()
            if not written.is_absolute() and ".." not in written.parts
            else Path(name).name
        )
        out.append(reading.wrap(where, {"src": reading.relative(found), "dest": dest}))
    return out
