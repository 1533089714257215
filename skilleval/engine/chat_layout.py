"""Laying out a conversation so that a model's chat template accepts it.

Chat templates disagree about what a conversation may hold. Gemma's published templates
raise "System role not supported"; older Mistral-Instruct templates raise unless the turns
alternate user/assistant; some templates drop a system turn without a word. skilleval's
requests (the ON arm's skill, the router, the judge, the agent loop) all carry a system turn,
and an agent's transcript can hold two turns of one role in a row.

What a template accepts is learned from the template itself, never from the model's name:
:func:`learn_layout` renders a few probe conversations once per loaded model, and
:func:`lay_out` then rewrites every conversation the same way before it is rendered:

* ``fold-system``: the template refuses a system turn or drops its text, so each system
  turn's text goes at the start of the user turn that follows it (or becomes a user turn);
* ``merge-turns``: the template requires alternating roles, so consecutive turns of one role
  are joined into one.

Nothing here imports llama-cpp-python: the template is reached through a render function.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from skilleval.util.frozen import frozen

__all__ = [
    "FOLD_SYSTEM",
    "MERGE_TURNS",
    "Layout",
    "Render",
    "lay_out",
    "learn_layout",
    "turn_end_text",
]

Adjustment = Literal["fold-system", "merge-turns"]
FOLD_SYSTEM: Adjustment = "fold-system"
MERGE_TURNS: Adjustment = "merge-turns"

Render = Callable[[list[dict[str, str]]], str]
"""Renders a conversation (``[{"role", "content"}, …]``) with the template; raises what the
template raises."""

JOIN = "\n\n"
"""Between two texts that are joined into one turn."""

# Distinctive texts, so that finding one in a rendering means the template kept it.
_SYSTEM = "skilleval-layout-probe-system"
_FIRST = "skilleval-layout-probe-first"
_SECOND = "skilleval-layout-probe-second"
_REPLY = "skilleval-layout-probe-reply"


@frozen
class Layout:
    """How conversations are rewritten for one model's chat template."""

    fold_system: bool = False
    merge_turns: bool = False

    @property
    def adjustments(self) -> tuple[Adjustment, ...]:
        """What this layout changes, by name (empty when conversations go as written)."""
        named: list[Adjustment] = []
        if self.fold_system:
            named.append(FOLD_SYSTEM)
        if self.merge_turns:
            named.append(MERGE_TURNS)
        return tuple(named)


def _keeps(render: Render, messages: list[dict[str, str]], *texts: str) -> bool:
    """Whether the template renders ``messages`` and keeps every one of ``texts``."""
    try:
        rendered = render(messages)
    except Exception:
        # A template can raise anything: jinja2's errors, raise_exception's, a TypeError.
        return False
    return all(text in rendered for text in texts)


def learn_layout(render: Render) -> Layout:
    """What the template behind ``render`` needs, from three probe renderings.

    A template that cannot render even one user turn gets the layout that changes nothing:
    the real request then fails with the template's own message.
    """
    if not _keeps(render, [{"role": "user", "content": _FIRST}], _FIRST):
        return Layout()
    fold = not _keeps(
        render,
        [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": _FIRST}],
        _SYSTEM,
        _FIRST,
    )
    merge = not _keeps(
        render,
        [{"role": "user", "content": _FIRST}, {"role": "user", "content": _SECOND}],
        _FIRST,
        _SECOND,
    )
    return Layout(fold_system=fold, merge_turns=merge)


def lay_out(
    messages: Sequence[Mapping[str, str]], layout: Layout
) -> tuple[list[dict[str, str]], tuple[Adjustment, ...]]:
    """``messages`` rewritten for ``layout``, and the adjustments that changed something."""
    out: list[dict[str, str]] = []
    applied: list[Adjustment] = []
    held: list[str] = []
    """System texts waiting for the next user turn (``fold_system``)."""
    for message in messages:
        role, content = message["role"], message["content"]
        if layout.fold_system and role == "system":
            held.append(content)
            if FOLD_SYSTEM not in applied:
                applied.append(FOLD_SYSTEM)
            continue
        if held and role == "user":
            content = JOIN.join([*held, content])
            held = []
        elif held:
            out.append({"role": "user", "content": JOIN.join(held)})
            held = []
        if layout.merge_turns and out and out[-1]["role"] == role:
            out[-1] = {"role": role, "content": out[-1]["content"] + JOIN + content}
            if MERGE_TURNS not in applied:
                applied.append(MERGE_TURNS)
            continue
        out.append({"role": role, "content": content})
    if held:
        text = JOIN.join(held)
        if layout.merge_turns and out and out[-1]["role"] == "user":
            out[-1] = {"role": "user", "content": out[-1]["content"] + JOIN + text}
        else:
            out.append({"role": "user", "content": text})
    return out, tuple(applied)


def turn_end_text(render: Render, layout: Layout) -> str | None:
    """What the template writes right after an assistant turn's text: the model's
    end-of-turn marker and whatever follows it (None when the template does not render the
    probe). A choice is scored as its text followed by this marker's first token, so this is
    learned from the template too: a model's end-of-sequence token is often not the token
    that ends its turns (Gemma's ``<eos>`` against ``<end_of_turn>``)."""
    probe, _ = lay_out(
        [{"role": "user", "content": _FIRST}, {"role": "assistant", "content": _REPLY}], layout
    )
    try:
        rendered = render(probe)
    except Exception:
        return None
    at = rendered.find(_REPLY)
    if at < 0:
        return None
    return rendered[at + len(_REPLY) :]
