"""How a conversation becomes the tokens a loaded GGUF model sees.

A model is prompted through its own chat template (the file's ``tokenizer.chat_template``,
ChatML when it has none), rendered by llama-cpp-python's formatter, which the library's chat
handler uses too, so the tokens counted and scored are the ones generated from. What the
template accepts and which token ends the model's turn are learned from the template when the
model loads (``engine/chat_layout.py``); a template that asks for today's date gets a fixed one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from skilleval.engine.base import Message
from skilleval.engine.chat_layout import Adjustment, lay_out, learn_layout, turn_end_text
from skilleval.engine.llama_adapter import is_control
from skilleval.engine.llama_checks import one_line, token_text
from skilleval.errors import ProviderError

__all__ = ["CHATML_TEMPLATE", "TEMPLATE_DATE", "ModelTemplate"]

# Used when a GGUF carries no chat template of its own.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

TEMPLATE_DATE = dt.datetime(2024, 7, 26)
"""The date a chat template sees when it asks for today's (Llama 3.x's templates print it in
every system turn): fixed, so that a prompt does not change from one day to the next. It is
the date Llama 3.1's template falls back to when it is given none."""


def _template_strftime(fmt: str) -> str:
    return TEMPLATE_DATE.strftime(fmt)


class ModelTemplate:
    """A loaded model's chat template, with what was learned of it.

    Attributes:
        layout: How conversations are rewritten for this template.
        turn_end: The token that ends the model's turn, which choice scoring appends to every
            option: the first token the template writes after an assistant turn's text when
            it is a control token, else end-of-sequence.
    """

    def __init__(self, llm: Any) -> None:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # lazy: start-up time

        self._llm = llm
        eos = int(llm.token_eos())
        formatter: Any = Jinja2ChatFormatter(
            template=llm.metadata.get("tokenizer.chat_template") or CHATML_TEMPLATE,
            eos_token=token_text(llm, eos),
            bos_token=token_text(llm, int(llm.token_bos())),
            stop_token_ids=[eos],
        )
        formatter.strftime_now = _template_strftime
        # The same formatter renders prompts for counting and scoring and for generation.
        llm.chat_handler = formatter.to_chat_handler()
        self._formatter = formatter
        self.layout = learn_layout(self._render)
        self.turn_end = self._end_of_turn(turn_end_text(self._render, self.layout), eos)
        self._applied: set[Adjustment] = set()

    def _render(self, messages: list[dict[str, str]]) -> str:
        return str(self._formatter(messages=messages).prompt)

    def _end_of_turn(self, after_reply: str | None, eos: int) -> int:
        if not after_reply or not after_reply.strip():
            return eos
        text = after_reply.lstrip().encode("utf-8")
        tokens = self._llm.tokenize(text, add_bos=False, special=True)
        return int(tokens[0]) if tokens and is_control(self._llm, int(tokens[0])) else eos

    def conversation(self, messages: Sequence[Message]) -> list[dict[str, str]]:
        """``messages`` laid out so that the template accepts them."""
        laid, applied = lay_out([m.to_json() for m in messages], self.layout)
        self._applied.update(applied)
        return laid

    def laid_out(self) -> list[Adjustment]:
        """What the layout changed in some conversation so far, in the layout's order."""
        return [name for name in self.layout.adjustments if name in self._applied]

    def tokens(self, messages: Sequence[Message]) -> list[int]:
        """The prompt the model sees for ``messages``, up to the assistant's turn.

        Raises:
            ProviderError: The template rejected the messages even laid out.
        """
        try:
            rendered = self._formatter(messages=self.conversation(messages))
        except Exception as exc:
            # Templates can raise anything (jinja2 errors, raise_exception's ValueError).
            raise ProviderError(
                f"the model's chat template rejected the messages: {one_line(exc)}"
            ) from None
        tokens = self._llm.tokenize(
            rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True
        )
        return [int(t) for t in tokens]

    def stops(self) -> list[str]:
        """The stop strings llama-cpp-python's chat handler adds: the template's end token."""
        eos = str(getattr(self._formatter, "eos_token", "") or "")
        return [eos] if eos else []
