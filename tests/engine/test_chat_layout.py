"""Laying out conversations for a chat template (engine/chat_layout.py): what is learned from
a template's own behaviour, and how conversations are rewritten."""

from __future__ import annotations

from typing import Any

import jinja2
import pytest

from skilleval.engine.chat_layout import (
    FOLD_SYSTEM,
    MERGE_TURNS,
    Layout,
    Render,
    lay_out,
    learn_layout,
    turn_end_text,
)


def _raise(message: str) -> Any:
    raise ValueError(message)


def _render(source: str) -> Render:
    """A template rendered as llama-cpp-python's formatter does (``raise_exception`` bound)."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.globals["raise_exception"] = _raise
    template = env.from_string(source)
    return lambda messages: template.render(messages=messages, add_generation_prompt=True)


PERMISSIVE = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}<|assistant|>"
)
# Shaped like Gemma-2's published template: no system role, strict alternation from a user turn.
NO_SYSTEM_ALTERNATING = (
    "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
    "{% endif %}{% for m in messages %}"
    "{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}<start_of_turn>{{ m.role }}\n{{ m.content }}<end_of_turn>\n{% endfor %}"
)
# Takes a system turn but demands alternation afterwards (older Mistral-Instruct).
ALTERNATING = (
    "{% set loop_messages = messages[1:] if messages[0]['role'] == 'system' else messages %}"
    "{% for m in loop_messages %}{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('roles must alternate') }}{% endif %}"
    "{% if m['role'] == 'user' %}[INST] {% if loop.first and messages[0]['role'] == 'system' %}"
    "{{ messages[0]['content'] }}\n\n{% endif %}{{ m.content }} [/INST]"
    "{% else %}{{ m.content }}</s>{% endif %}{% endfor %}"
)
# Renders without complaint but leaves a system turn out.
DROPS_SYSTEM = (
    "{% for m in messages %}{% if m.role != 'system' %}<|{{ m.role }}|>{{ m.content }}<|end|>"
    "{% endif %}{% endfor %}"
)
BROKEN = "{{ messages[0].missing.deeper }}"


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        (PERMISSIVE, Layout()),
        (NO_SYSTEM_ALTERNATING, Layout(fold_system=True, merge_turns=True)),
        (ALTERNATING, Layout(merge_turns=True)),
        (DROPS_SYSTEM, Layout(fold_system=True)),
        (BROKEN, Layout()),
    ],
    ids=["permissive", "gemma-like", "alternating", "drops-system", "broken"],
)
def test_the_layout_is_learned_from_what_the_template_does(template: str, expected: Layout) -> None:
    assert learn_layout(_render(template)) == expected


def _agent_transcript() -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You are a careful agent. Tools: ls."},
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": '{"action": {"tool": "ls"}}'},
        {"role": "user", "content": "observation: a.txt"},
        {"role": "user", "content": "Your reply was not JSON; answer again."},
    ]


@pytest.mark.parametrize("template", [NO_SYSTEM_ALTERNATING, ALTERNATING, DROPS_SYSTEM, PERMISSIVE])
def test_every_text_reaches_the_model_once_in_an_order_the_template_accepts(
    template: str,
) -> None:
    render = _render(template)
    messages = _agent_transcript()
    laid, _ = lay_out(messages, learn_layout(render))
    rendered = render(laid)
    positions = [rendered.find(m["content"]) for m in messages]
    assert all(p >= 0 for p in positions), rendered
    assert positions == sorted(positions)
    assert all(rendered.count(m["content"]) == 1 for m in messages)


def test_as_written_a_strict_template_refuses_the_transcript() -> None:
    # The cases above would be vacuous if the templates took the transcript as it is.
    with pytest.raises(ValueError, match="System role not supported"):
        _render(NO_SYSTEM_ALTERNATING)(_agent_transcript())
    with pytest.raises(ValueError, match="alternate"):
        _render(ALTERNATING)(_agent_transcript())


def test_folding_puts_the_system_text_before_the_first_user_turn() -> None:
    laid, applied = lay_out(
        [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
        Layout(fold_system=True),
    )
    assert laid == [{"role": "user", "content": "S\n\nU"}]
    assert applied == (FOLD_SYSTEM,)


def test_a_lone_system_turn_becomes_a_user_turn_and_nothing_changes_when_none_is_needed() -> None:
    laid, applied = lay_out([{"role": "system", "content": "S"}], Layout(fold_system=True))
    assert laid == [{"role": "user", "content": "S"}]
    assert applied == (FOLD_SYSTEM,)
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    assert lay_out(messages, Layout()) == (messages, ())
    assert lay_out(messages, Layout(merge_turns=True)) == (messages, ())


def test_merging_joins_consecutive_turns_of_one_role_and_says_so() -> None:
    laid, applied = lay_out(
        [
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b"},
            {"role": "assistant", "content": "c"},
            {"role": "assistant", "content": "d"},
        ],
        Layout(merge_turns=True),
    )
    assert laid == [
        {"role": "user", "content": "a\n\nb"},
        {"role": "assistant", "content": "c\n\nd"},
    ]
    assert applied == (MERGE_TURNS,)


def test_a_system_turn_before_an_assistant_turn_becomes_a_user_turn_of_its_own() -> None:
    laid, _ = lay_out(
        [{"role": "system", "content": "S"}, {"role": "assistant", "content": "A"}],
        Layout(fold_system=True, merge_turns=True),
    )
    assert laid == [{"role": "user", "content": "S"}, {"role": "assistant", "content": "A"}]


@pytest.mark.parametrize(
    ("template", "starts"),
    [
        (PERMISSIVE, "<|end|>"),
        (NO_SYSTEM_ALTERNATING, "<end_of_turn>\n"),
        (ALTERNATING, "</s>"),
    ],
    ids=["permissive", "gemma-like", "alternating"],
)
def test_the_end_of_turn_marker_is_what_the_template_writes_after_a_reply(
    template: str, starts: str
) -> None:
    render = _render(template)
    after = turn_end_text(render, learn_layout(render))
    assert after is not None
    assert after.startswith(starts)


def test_no_end_of_turn_marker_is_claimed_where_the_template_gives_none() -> None:
    assert turn_end_text(_render(BROKEN), Layout()) is None
    assert turn_end_text(_render("{{ messages[0].content }}"), Layout()) is None
