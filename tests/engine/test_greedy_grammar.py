"""Greedy decoding under a grammar, the short way (engine/greedy_grammar.py), gives the tokens
llama-cpp-python's own grammar stage gives, on the embedded model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skilleval.engine.base import Message, Request
from skilleval.engine.llama import LlamaConfig, LlamaProvider

pytestmark = pytest.mark.model

RATING = {
    "type": "object",
    "properties": {
        "reason": {"type": "string"},
        "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
    },
    "required": ["reason", "score"],
}
VERDICT = {
    "type": "object",
    "properties": {"verdict": {"enum": ["pass", "fail"]}},
    "required": ["verdict"],
}
CASES = [
    ("Rate the colour of the sky from 1 to 5 as JSON.", RATING, 48),
    # The model's own first choice is prose, which the grammar refuses at once.
    ("Write a poem about rain.", VERDICT, 24),
    ("Is 'The sky is green' true? Grade it.", RATING, 64),
]


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaProvider]:
    p = LlamaProvider(LlamaConfig(parallel=1), tmp_path_factory.mktemp("memo"))
    yield p
    p.close()


def library_reply(provider: LlamaProvider, text: str, schema: Any, max_tokens: int) -> str:
    """The same request through llama-cpp-python's completion loop with its grammar stage."""
    llm = provider._load()
    out: Any = llm.create_chat_completion(
        messages=[{"role": "user", "content": text}],
        temperature=0.0,
        top_p=1.0,
        top_k=0,
        min_p=0.0,
        typical_p=1.0,
        repeat_penalty=1.0,
        max_tokens=max_tokens,
        grammar=provider._grammar(schema),
    )
    # The KV state now holds what the library decoded its own way; start afresh.
    provider._canonical = 0
    llm.n_tokens = 0
    return str(out["choices"][0]["message"]["content"]).strip()


@pytest.mark.parametrize(("text", "schema", "max_tokens"), CASES)
def test_the_short_road_gives_the_grammar_stages_tokens(
    provider: LlamaProvider, text: str, schema: Any, max_tokens: int, tmp_path: Path
) -> None:
    request = Request(messages=(Message("user", text),), max_tokens=max_tokens, json_schema=schema)
    ours = provider.complete(request).text
    assert ours == library_reply(provider, text, schema, max_tokens)
    batched = LlamaProvider(LlamaConfig(parallel=2), tmp_path)
    try:
        assert batched.complete(request).text == ours
    finally:
        batched.close()
