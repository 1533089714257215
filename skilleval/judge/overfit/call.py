"""The overfitting judge's call: its prompt, the reply schema, the token budget, and reading the reply."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from skilleval.judge.overfit.items import (
    FRAME_TOKENS,
    HOLISTIC_FRAME_TOKENS,
    HOLISTIC_SCORES,
    ITEM_FRAME_TOKENS,
    MAX_PROMPTS,
    PROMPT_CHARS,
    REASONING_CHARS,
    SKILL_CHARS,
    Item,
    Label,
    clip,
)
from skilleval.suite import template
from skilleval.suite.model import Suite

if TYPE_CHECKING:
    import jinja2


def _reasoning() -> dict[str, Any]:
    # No quotes, backslashes or control characters: the grammar never has to handle escapes.
    return {"type": "string", "pattern": f'^[^"\\\\\\x00-\\x1f]{{0,{REASONING_CHARS}}}$'}


def _entry(index: int, labels: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "index": {"type": "integer", "enum": [index]},
            "reasoning": _reasoning(),
            "label": {"type": "string", "enum": list(labels)},
        },
        "required": ["index", "reasoning", "label"],
        "additionalProperties": False,
    }


def reply_schema(items: Sequence[Item], *, holistic: bool = True) -> dict[str, Any]:
    """The JSON Schema of the judge's reply about ``items``.

    Each list pins one entry per item, in order (``prefixItems``), so a grammar-constrained
    model writes them all. There is no ``minItems``: a server that does not enforce the
    schema may stop early, and the items it skipped then get a repair pass instead of
    failing the whole reply.
    """
    properties: dict[str, Any] = {}
    for group in ("criteria", "assertions"):
        members = [i for i in items if i.group == group]
        if members:
            properties[group] = {
                "type": "array",
                "prefixItems": [_entry(i.index, i.labels) for i in members],
                "items": False,
            }
    if holistic:
        properties["holistic_reasoning"] = _reasoning()
        properties["holistic"] = {"enum": list(HOLISTIC_SCORES)}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def budget(items: int, *, holistic: bool = True) -> int:
    """``max_tokens`` for a reply about ``items`` items: it grows with every item."""
    total = FRAME_TOKENS + items * (ITEM_FRAME_TOKENS + REASONING_CHARS)
    if holistic:
        total += HOLISTIC_FRAME_TOKENS + REASONING_CHARS
    return total


@functools.cache
def _env() -> jinja2.Environment:
    import jinja2  # lazy: start-up time

    return jinja2.Environment(
        loader=jinja2.PackageLoader("skilleval.judge", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def messages(suite: Suite, items: Sequence[Item], only: Sequence[int] = ()) -> list[dict[str, str]]:
    """The judge conversation: instructions, then SKILL.md, the test prompts and the items."""
    assert suite.skill is not None
    skill = {"name": suite.skill.name, "text": _clip_keep_lines(suite.skill.text, SKILL_CHARS)}
    tmpl = _env().get_template("overfit.j2")
    context = tmpl.new_context(
        {
            "skill": skill,
            "prompts": _prompts(suite),
            "criteria": [i for i in items if i.group == "criteria"],
            "assertions": [i for i in items if i.group == "assertions"],
            "only": [str(i) for i in only],
        }
    )
    return [
        {"role": role, "content": "".join(tmpl.blocks[role](context)).strip()}
        for role in ("system", "user")
    ]


def _clip_keep_lines(text: str, size: int) -> str:
    return text if len(text) <= size else text[:size] + "\n[… SKILL.md clipped]"


def _prompts(suite: Suite) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for test in suite.tests:
        prompt = test.prompt
        texts = (
            [prompt.text]
            if prompt.text is not None
            else [t for r, t in prompt.messages if r == "user"]
        )
        rendered = []
        for text in texts:
            try:
                rendered.append(template.render(text, test.vars))
            except template.TemplateProblem:
                rendered.append(text)
        shown = clip("\n".join(rendered), PROMPT_CHARS)
        if shown in seen:
            continue
        seen.add(shown)
        out.append({"text": shown, "negative": test.should_trigger is False})
        if len(out) >= MAX_PROMPTS:
            break
    return out


def read_labels(reply: Any, items: Sequence[Item]) -> dict[int, Label]:
    """The usable labels in ``reply``: known index, a label allowed for that item, first wins."""
    by_index = {i.index: i for i in items}
    found: dict[int, Label] = {}
    if not isinstance(reply, Mapping):
        return found
    for group in ("criteria", "assertions"):
        entries = reply.get(group)
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, Mapping):
                continue
            index, label = entry.get("index"), entry.get("label")
            item = by_index.get(index) if isinstance(index, int) else None
            if item is None or item.group != group or label not in item.labels:
                continue
            if index in found:
                continue
            reasoning = entry.get("reasoning")
            found[item.index] = Label(str(label), reasoning if isinstance(reasoning, str) else "")
    return found


def read_holistic(reply: Any) -> tuple[float | None, str]:
    if not isinstance(reply, Mapping):
        return None, ""
    value = reply.get("holistic")
    reasoning = reply.get("holistic_reasoning")
    text = reasoning if isinstance(reasoning, str) else ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, text
    if value not in HOLISTIC_SCORES:
        return None, text
    return float(value), text
