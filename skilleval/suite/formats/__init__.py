"""Other tools' skill-eval files, read as they are written.

Four shapes are recognised by their content, never by their name: skill-creator's
``evals.json`` (:mod:`.skill_creator`), trigger sets (:mod:`.triggers`), dotnet/skills'
Vally specs (:mod:`.vally`) and PAI suites and task files (:mod:`.pai`). Each reader builds
the equivalent skilleval suite as a tree whose nodes keep their place in the file
(:mod:`.tree`), so the suite loader checks it like any suite and reports every problem at the
``file:line:col`` the user wrote. A skill folder is read as one suite: its SKILL.md is the
skill, and every eval file in it (or in its ``evals/`` or ``tests/`` folder) adds its tests.
``skilleval import FORMAT`` writes the same tree as an editable suite (:mod:`.emit`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from skilleval.errors import Diagnostic, DiagnosticsError, Location, SuiteError
from skilleval.suite.formats import pai, skill_creator, triggers, vally
from skilleval.suite.formats.reading import Part, Reading
from skilleval.suite.formats.tree import At, plain, to_document
from skilleval.suite.skills import load_skill
from skilleval.suite.yamldoc import Document
from skilleval.suite.yamlio import display_path, load_yaml

__all__ = ["FORMATS", "Translated", "detect", "read_file", "read_folder"]

_Reader = tuple[Callable[[Any], str | None], Callable[[Reading, str], Part]]

FORMATS: dict[str, _Reader] = {
    "skill-creator": (skill_creator.detect, skill_creator.read),
    "triggers": (triggers.detect, triggers.read),
    "vally": (vally.detect, vally.read),
    "pai": (pai.detect, pai.read),
}
"""Each format's name (as ``skilleval import`` takes it), its detector and its reader.
Trigger sets are tried before PAI so that ``{cases: [{expected: trigger}]}`` is a trigger set."""

_ORDER = ("triggers", "skill-creator", "vally", "pai")
_FOLDERS = (".", "evals", "tests", "eval")
_SUFFIXES = (".json", ".yaml", ".yml")
_MAX_FILES = 50


@dataclass
class Translated:
    """A foreign file (or a skill folder) as a skilleval suite."""

    doc: Document
    """The suite, its positions pointing into the files read."""
    tree: dict[str, Any]
    """The same suite with its nodes' origins, for ``import``."""
    base: Path
    """The folder the suite's paths are relative to."""
    anchor: Path
    """A file in ``base`` that stands for the suite (the file read, or the SKILL.md)."""
    notes: list[Diagnostic] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    detected: list[str] = field(default_factory=list)
    """``file: format (variant)``, one per file read."""
    trigger_sets: list[Location] = field(default_factory=list)
    """Where each trigger set read starts: its rule depends on the whole suite's decoding."""


def detect(data: Any, only: str | None = None) -> tuple[str, str] | None:
    """The format name and variant of ``data``, or None when it is none of them."""
    if isinstance(data, dict) and "tests" in data:
        return None  # a skilleval suite (or a promptfoo config)
    for name in _ORDER if only is None else (only,):
        variant = FORMATS[name][0](data)
        if variant is not None:
            return name, variant
    return None


def find_skill(start: Path) -> Path | None:
    """The SKILL.md in ``start`` or in one of its two parent folders."""
    here = start.resolve()
    for folder in (here, here.parent, here.parent.parent):
        candidate = folder / "SKILL.md"
        if candidate.is_file():
            return candidate
    return None


def _usable(skill: Path | None) -> tuple[Path | None, list[Diagnostic]]:
    """``skill`` when it reads as a skill; otherwise None, and a warning saying why.

    Skills written for other tools do not always follow the SKILL.md rules skilleval checks
    (a name in capitals, say): their evals still run, without the skill, rather than not at all.
    """
    if skill is None:
        return None, []

    try:
        load_skill(skill, Location(display_path(skill), 1, 1))
    except DiagnosticsError as exc:
        first = exc.diagnostics[0] if exc.diagnostics else None
        why = first.message if first is not None else "it cannot be read"
        where = first.where if first is not None else Location(display_path(skill), 1, 1)
        return None, [
            Diagnostic(
                where,
                f"this SKILL.md is not used as the skill under test ({why}): the evals run "
                "without it; fix it to compare with and without the skill",
                severity="warning",
            )
        ]
    return skill, []


def read_file(path: Path, doc: Document, only: str | None = None) -> Translated | None:
    """The suite a foreign file stands for, or None when ``doc`` is a skilleval suite.

    With ``only`` (``skilleval import FORMAT``), the file must be that format.

    Raises:
        SuiteError: The file is the format but cannot be read as a suite.
    """
    found = detect(doc.data, only)
    if found is None:
        return None
    beside = find_skill(path.parent)
    skill, unusable = _usable(beside)
    out = _start(path.parent, path, skill)
    _add(out, path, doc, found, skill)
    out.notes.extend(unusable)
    if beside is not None and skill is None:
        out.files.append(beside)  # watched: fixing it brings the skill in
    if beside is None:
        out.notes.append(
            Diagnostic(
                doc.at(),
                "no SKILL.md was found beside this file (in its folder or the two above): the "
                "tests run once, with no skill to compare against",
                severity="warning",
            )
        )
    return _finish(out, doc.display, path)


def read_folder(folder: Path) -> Translated:
    """A skill folder as one suite: its SKILL.md and every eval file found in it.

    Raises:
        SuiteError: No SKILL.md, no eval file, or a file that cannot be read.
    """
    display = display_path(folder)
    skill = folder / "SKILL.md"
    if not skill.is_file():
        raise SuiteError(
            [
                Diagnostic(
                    Location(display),
                    "no SKILL.md in this folder: give a skill folder or a suite file",
                )
            ]
        )
    usable, unusable = _usable(skill)
    out = _start(folder, skill, usable)
    out.notes.extend(unusable)
    if usable is None:
        out.files.append(skill)  # watched: fixing it brings the skill in
    problems: list[Diagnostic] = []
    for path in _candidates(folder):
        try:
            doc = load_yaml(path, strict=False)
        except DiagnosticsError as exc:
            if _named_like_evals(path, folder):
                problems.extend(exc.diagnostics)
            continue
        found = detect(doc.data)
        if found is None:
            continue
        problems.extend(doc.problems)
        try:
            _add(out, path, doc, found, usable)
        except DiagnosticsError as exc:
            problems.extend(exc.diagnostics)
    if problems:
        raise SuiteError(problems)
    if not out.detected:
        raise SuiteError(
            [
                Diagnostic(
                    Location(display),
                    "no eval file found in this skill folder (looked for evals/evals.json, "
                    "a trigger set, a Vally eval.yaml or a PAI suite in it, evals/ and tests/)",
                )
            ]
        )
    return _finish(out, display, skill)


def _named_like_evals(path: Path, folder: Path) -> bool:
    """Whether a file that does not parse was meant as an eval file (then it is reported)."""
    if path.parent != folder:
        return True
    return any(word in path.name.lower() for word in ("eval", "trigger", "quer", "case"))


def _candidates(folder: Path) -> list[Path]:
    seen: list[Path] = []
    for sub in _FOLDERS:
        here = folder / sub
        if not here.is_dir():
            continue
        for path in sorted(here.iterdir()):
            if path.suffix.lower() in _SUFFIXES and path.is_file() and path not in seen:
                seen.append(path)
            if len(seen) >= _MAX_FILES:
                return seen
    return seen


def _start(base: Path, anchor: Path, skill: Path | None) -> Translated:
    tree: dict[str, Any] = {"version": 1}
    out = Translated(to_document({}, ""), tree, base, anchor)
    if skill is not None:
        reading = Reading(Document(None, display_path(skill), skill), anchor, base)
        tree["skill"] = At(
            reading.relative(skill),
            Location(display_path(skill), 1, 1),
            None,
            "the skill beside the evals",
        )
        out.files.append(skill)
    tree["tests"] = []
    return out


def _add(
    out: Translated, path: Path, doc: Document, found: tuple[str, str], skill: Path | None
) -> None:
    name, variant = found
    reading = Reading(doc, path, out.base, skill)
    part = FORMATS[name][1](reading, variant)
    if part.needs_skill and skill is None:
        reading.problems.append(
            Diagnostic(
                doc.at(),
                f"this {part.format} labels whether the skill should be picked, and no "
                f"SKILL.md was found beside {path.name} (looked in its folder and the two above)",
            )
        )
    if doc.problems or reading.problems:
        raise SuiteError([*doc.problems, *reading.problems])
    out.notes.append(
        Diagnostic(doc.at(), f"read as {part.format} ({part.variant})", severity="note")
    )
    out.notes.extend(sorted(reading.notes, key=lambda d: (d.where.line, d.where.col)))
    out.detected.append(f"{doc.display}: {part.format} ({part.variant})")
    if part.format == triggers.FORMAT:
        out.trigger_sets.append(doc.at())
    out.files.append(path)
    out.tree["tests"].extend(part.tests)
    for key, value in part.settings.items():
        if key not in out.tree:
            out.tree[key] = value
        elif out.tree[key] != value:
            out.notes.append(
                Diagnostic(
                    doc.at(),
                    f"`{key}` differs from an earlier file's; the first is kept",
                    severity="warning",
                )
            )


def _finish(out: Translated, display: str, anchor: Path) -> Translated:
    tree = out.tree
    # None of these tools gates on a pass rate of 1.0: report, and fail only on errors,
    # unless the file says it is a regression suite.
    tree.setdefault("type", "capability")
    if out.trigger_sets:
        sampled = plain(tree.get("decoding") or {}).get("mode") == "distribution"
        rule, how = triggers.rule_setting(sampled)
        if rule is not None:
            tree.setdefault("trigger", rule)
        # A note when skill-creator's rule decides; a warning when its meaning is not kept.
        severity: Final = "note" if rule is not None else "warning"
        out.notes.extend(Diagnostic(at, how, severity=severity) for at in out.trigger_sets)
    ordered: dict[str, Any] = {
        k: tree[k]
        for k in ("version", "description", "type", "skill", "trials", "decoding")
        if k in tree
    }
    ordered.update((k, v) for k, v in tree.items() if k not in ordered)
    out.tree = ordered
    out.doc = to_document(ordered, display, anchor)
    out.anchor = anchor
    return out
