"""Candidate skills: SKILL.md variants from a folder, or edits a proposer wrote.

A candidate folder holds one subfolder per candidate, ``DIR/NAME/SKILL.md`` with any files
beside it; the subfolder's name is the candidate's name everywhere. A proposer's edit
replaces one part of the current skill (its description, or its instructions: the body
after the frontmatter) and is written out as a SKILL.md of its own, so both kinds are
evaluated, diffed and reported alike.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from skilleval.errors import Diagnostic, Location, SuiteError, UsageError
from skilleval.suite.skills import Skill, load_skill
from skilleval.util.frozen import frozen

Part = Literal["description", "instructions", "both", "nothing"]
"""What a candidate changes, compared with the skill it would replace."""


@frozen
class Candidate:
    """One proposed replacement for the current skill."""

    name: str
    source: Literal["folder", "proposer"]
    skill: Skill
    why: str = ""
    """The proposer's reason; empty for a folder's candidate."""

    def part(self, current: Skill) -> Part:
        return changed_part(current, self.skill)

    def diff(self, current: Skill) -> str:
        return skill_diff(current, self.skill)

    def describe(self, current: Skill) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "part": self.part(current),
            "why": self.why,
            "digest": self.skill.digest,
            "diff": self.diff(current),
        }


def changed_part(current: Skill, other: Skill) -> Part:
    description = current.description != other.description or current.name != other.name
    body = current.body.strip() != other.body.strip()
    if description and body:
        return "both"
    if description:
        return "description"
    return "instructions" if body else "nothing"


def skill_diff(current: Skill, other: Skill) -> str:
    """A unified diff from the current SKILL.md to the candidate's."""
    lines = difflib.unified_diff(
        current.text.splitlines(keepends=True),
        other.text.splitlines(keepends=True),
        fromfile="SKILL.md",
        tofile="SKILL.improved.md",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def from_folder(folder: Path) -> list[Candidate]:
    """Every ``NAME/SKILL.md`` under ``folder``, by name.

    Raises:
        UsageError: The folder holds no candidate.
        SuiteError: A candidate's SKILL.md does not parse (positioned).
    """
    found = sorted(p for p in folder.iterdir() if p.is_dir() and (p / "SKILL.md").is_file())
    if not found:
        raise UsageError(
            f"{folder}: no candidates: put each one in a subfolder of its own, as NAME/SKILL.md"
        )
    return [Candidate(p.name, "folder", load_skill(p / "SKILL.md")) for p in found]


def _frontmatter(text: str) -> tuple[list[str], list[str]]:
    lines = text.splitlines()
    end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    return lines[: end + 1], lines[end + 1 :]


def _description_lines(front: list[str]) -> Iterator[int]:
    """The frontmatter lines of the ``description:`` key: its own and any indented ones."""
    start = next((i for i, line in enumerate(front) if line.startswith("description:")), None)
    if start is None:
        return
    yield start
    for i in range(start + 1, len(front) - 1):
        if not front[i].startswith((" ", "\t")):
            return
        yield i


def edited_text(current: Skill, part: str, text: str) -> str:
    """The current SKILL.md with its description or its instructions replaced by ``text``."""
    front, body = _frontmatter(current.text)
    if part == "description":
        drop = set(_description_lines(front))
        kept = [line for i, line in enumerate(front) if i not in drop]
        new = "description: " + json.dumps(" ".join(text.split()), ensure_ascii=False)
        kept.insert(min(drop) if drop else len(kept) - 1, new)
        return "\n".join([*kept, *body]) + "\n"
    return "\n".join(front) + "\n\n" + text.strip() + "\n"


def write_proposed(
    current: Skill, name: str, part: str, text: str, why: str, folder: Path
) -> Candidate | str:
    """Write a proposer's edit as ``folder/NAME/SKILL.md``; the problem when it is not a skill."""
    target = folder / name / "SKILL.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(edited_text(current, part, text), encoding="utf-8")
    try:
        skill = load_skill(target, Location(str(target)))
    except SuiteError as exc:
        first: Diagnostic = exc.diagnostics[0]
        return f"the edit does not make a valid SKILL.md: {first.message}"
    return Candidate(name, "proposer", skill, why=" ".join(why.split()))
