"""``skill:``, ``skills:`` and ``arms:``: the skill under test, its distractors, the arms run."""

from __future__ import annotations

from skilleval.errors import DiagnosticsError, Location, missing_file
from skilleval.suite.context import Loader
from skilleval.suite.skills import Skill, load_skill
from skilleval.suite.yamlio import Document, display_path
from skilleval.userfile import lookup_problem

_ARM_ORDER = {"off": 0, "on": 1, "routed": 2}


def skill_file(loader: Loader, raw: str, where: Location) -> Skill | None:
    """The skill at ``raw`` (a SKILL.md or its folder, relative to the suite), or None."""
    path = loader.base / raw
    unreadable = lookup_problem(path)
    if unreadable is not None:
        loader.error(where, unreadable)
        return None
    if path.is_dir():
        path = path / "SKILL.md"
    if not path.exists():
        loader.add(
            missing_file(
                where, f"skill not found: {raw} (looked for {display_path(path)})", str(path)
            )
        )
        return None
    try:
        skill = load_skill(path, where)
    except DiagnosticsError as exc:
        loader.absorb(exc)
        return None
    loader.reader.files.add(path.resolve())
    return skill


def load_skills(loader: Loader, doc: Document) -> tuple[Skill | None, tuple[Skill, ...]]:
    """The skill under test and the distractors, each read and checked."""
    data = doc.data
    skill = skill_file(loader, data["skill"], doc.at(["skill"])) if "skill" in data else None
    others: list[Skill] = []
    for i, raw in enumerate(data.get("skills") or []):
        found = skill_file(loader, raw, doc.at(["skills", i]))
        if found is None:
            continue
        names = [s.name for s in others] + ([skill.name] if skill else [])
        if found.name in names:
            loader.error(doc.at(["skills", i]), f"two skills are named '{found.name}'")
            continue
        others.append(found)
    if others and skill is None and "skill" not in loader.top:
        loader.error(
            doc.key_at(["skills"]), "`skills:` lists distractors for routing; set `skill:` too"
        )
    return skill, tuple(others)


def arms(loader: Loader, doc: Document, skill: Skill | None) -> tuple[str, ...]:
    """The arms to run: ``default`` without a skill, ``off`` and ``on`` unless ``arms:`` says."""
    raw = doc.data.get("arms")
    if skill is None and "skill" not in loader.top:
        if raw is not None:
            loader.error(
                doc.key_at(["arms"]), "`arms:` needs a skill: add `skill: path/to/SKILL.md`"
            )
        return ("default",)
    if raw is None:
        return ("off", "on")
    if skill is None:
        return ("default",)
    return tuple(sorted(raw, key=lambda a: _ARM_ORDER[a]))
