"""Agent skills: a ``SKILL.md`` with YAML frontmatter (``name``, ``description``) and a body.

The frontmatter sits between two ``---`` lines at the very top of the file. The body is the
skill's instructions, which the ``on`` arm puts in the system prompt.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from skilleval.errors import Diagnostic, Location, SuiteError
from skilleval.suite.yamlio import display_path, parse_yaml, read_text
from skilleval.util.frozen import frozen

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@frozen
class Skill:
    """One skill, parsed."""

    name: str
    description: str
    body: str
    path: Path
    display: str
    text: str
    """The whole file, for lint and the overfitting judge."""
    body_line: int
    """The 1-based line where the body starts."""

    @property
    def digest(self) -> str:
        """Changes whenever the file does; part of every ON-arm cache key."""
        return hashlib.sha256(self.text.encode()).hexdigest()

    def system_prompt(self) -> str:
        """What the ``on`` arm adds to the system prompt."""
        return f"You have the skill '{self.name}': {self.description}\n\n{self.body.strip()}"


def load_skill(path: Path, where: Location | None = None) -> Skill:
    """Parse a SKILL.md, with positioned errors for a missing or invalid frontmatter."""
    display = display_path(path)
    text = read_text(path, display, where=where)
    top = Location(display, 1, 1)
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise SuiteError(
            [
                Diagnostic(
                    top,
                    "SKILL.md must start with a `---` frontmatter block "
                    "holding `name:` and `description:`",
                )
            ]
        )
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise SuiteError(
            [Diagnostic(top, "the frontmatter is never closed: add a `---` line after it")]
        )
    front = parse_yaml("\n".join(lines[1:end]), display, path, line_offset=1)
    data = front.data
    if not isinstance(data, dict):
        raise SuiteError(
            [
                Diagnostic(
                    Location(display, 2, 1),
                    "the frontmatter must be a mapping with `name:` and `description:`",
                )
            ]
        )
    problems: list[Diagnostic] = []
    for key in ("name", "description"):
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            where_key = front.key_at([key]) if key in data else Location(display, 2, 1)
            problems.append(Diagnostic(where_key, f"the frontmatter needs a non-empty `{key}:`"))
    name = data.get("name")
    if isinstance(name, str) and name.strip() and not NAME_RE.match(name.strip()):
        problems.append(
            Diagnostic(
                front.at(["name"]),
                f"skill name {name!r} must be lower-case letters, digits and hyphens",
            )
        )
    body = "\n".join(lines[end + 1 :])
    if not problems and not body.strip():
        problems.append(
            Diagnostic(
                Location(display, end + 2, 1), "the skill has no instructions after its frontmatter"
            )
        )
    if problems:
        raise SuiteError(problems)
    return Skill(
        name=str(name).strip(),
        description=" ".join(str(data["description"]).split()),
        body=body,
        path=path,
        display=display,
        text=text,
        body_line=end + 2,
    )
