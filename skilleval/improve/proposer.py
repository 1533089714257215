"""The proposer: a model that reads the skill and its failures on the training tests, and
writes one edit.

Its reply is held to :data:`proposal_schema` through the judge's client
(:class:`~skilleval.judge.JudgeClient`): greedy, seeded, decoded under the grammar the
schema compiles to, validated, with one repair retry, and through the response cache. It is
asked once per part that has something to fix: the description when the router misjudged a
training test, the instructions when a training test failed.

The proposer sees the training tests only: :func:`failures` takes the training outcomes
and nothing else, and the loop hands it nothing else (see ``loop.py``).

The prompt ships as ``proposer_prompt.md`` beside this module; ``--proposer-prompt FILE``
replaces it. It is a :class:`string.Template`: ``$skill`` (the whole SKILL.md), ``$part``
(``description`` or ``instructions``) and ``$failures``; any other ``$name`` is left alone.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from skilleval.api import Judge
from skilleval.errors import ProviderError
from skilleval.improve.evaluate import TestOutcome
from skilleval.suite.skills import Skill
from skilleval.util.frozen import frozen

PROMPT_FILE = Path(__file__).with_name("proposer_prompt.md")
MAX_TOKENS = {"description": 200, "instructions": 900}
"""The reply's token budget per part: what bounds the new text's length. The schema sets no
``maxLength``: llama.cpp refuses the grammar a long bounded string compiles to."""
SHOWN_FAILURES = 8
"""The most training failures one prompt shows."""


def proposal_schema(part: str) -> dict[str, Any]:
    """The JSON Schema a proposal must match: which part, the new text, and why."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["part", "text", "why"],
        "properties": {
            "part": {"enum": [part]},
            "text": {"type": "string", "minLength": 1},
            "why": {"type": "string", "minLength": 1},
        },
    }


@frozen
class Failure:
    """One training test the current skill got wrong, as the proposer is shown it."""

    test_id: str
    prompt: str
    routing: bool
    """The router misjudged it (else: the output failed its checks)."""
    should_trigger: bool | None
    output: str
    checks: tuple[str, ...]

    def render(self) -> str:
        lines = [f"- request: {self.prompt.strip()}"]
        if self.routing:
            wanted = "should" if self.should_trigger else "should not"
            lines.append(f"  the router got it wrong: the skill {wanted} be loaded for it")
        else:
            lines.append(f"  reply: {self.output.strip() or '(empty)'}")
            lines.extend(f"  failed check: {check}" for check in self.checks)
        return "\n".join(lines)


def failures(
    train: Mapping[str, TestOutcome],
    prompts: Mapping[str, str],
    expected: Mapping[str, bool | None],
) -> list[Failure]:
    """The training tests the skill failed: routing first, then outputs, in test order."""
    out: list[Failure] = []
    for test_id, outcome in train.items():
        if outcome.routed is False:
            out.append(Failure(test_id, prompts[test_id], True, expected.get(test_id), "", ()))
    for test_id, outcome in train.items():
        if outcome.vote is False:
            out.append(
                Failure(
                    test_id,
                    prompts[test_id],
                    False,
                    expected.get(test_id),
                    outcome.output,
                    outcome.failed_checks,
                )
            )
    return out


def parts_to_edit(found: Sequence[Failure]) -> list[str]:
    """The parts worth a proposal: instructions for failed outputs, the description for
    misrouted requests."""
    parts = []
    if any(not f.routing for f in found):
        parts.append("instructions")
    if any(f.routing for f in found):
        parts.append("description")
    return parts


def prompt_text(template: str, skill: Skill, part: str, found: Sequence[Failure]) -> str:
    relevant = [f for f in found if f.routing == (part == "description")][:SHOWN_FAILURES]
    return string.Template(template).safe_substitute(
        skill=skill.text.strip(),
        part=part,
        failures="\n".join(f.render() for f in relevant) or "(none)",
    )


@frozen
class Proposal:
    part: str
    text: str
    why: str


def propose(
    judge: Judge, template: str, skill: Skill, part: str, found: Sequence[Failure]
) -> Proposal | str:
    """One proposal for ``part``; the problem, as text, when the proposer gave none."""
    messages = [{"role": "user", "content": prompt_text(template, skill, part, found)}]
    try:
        reply = judge.complete_json(messages, proposal_schema(part), MAX_TOKENS[part])
    except ProviderError as exc:
        # The judge's client words its errors for a judge ("judge reply invalid ..."): here
        # the reply is the proposer's.
        problem = str(exc).removeprefix("judge ")
        return f"the proposer gave no usable reply: {problem}"
    return Proposal(part, str(reply["text"]), str(reply["why"]))


def read_template(path: Path | None) -> str:
    """The proposer prompt: the user's file, or the one that ships."""
    return (path or PROMPT_FILE).read_text(encoding="utf-8")
