"""Batched decoding on the embedded model: deterministic, per-request budgets, and the same
replies as one request at a time (docs/engine.md, "Batched decoding")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from skilleval.engine.base import Completion, Message, Request
from skilleval.engine.llama import LlamaConfig, LlamaProvider
from skilleval.errors import ProviderError

pytestmark = pytest.mark.model

SYSTEM = "You are a helpful assistant. Answer briefly."
SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
        "why": {"type": "string"},
    },
    "required": ["score", "why"],
    "additionalProperties": False,
}

VERDICT = {
    "type": "object",
    "properties": {"reason": {"type": "string"}, "verdict": {"enum": ["pass", "fail"]}},
    "required": ["reason", "verdict"],
}


def ask(text: str, **kw: object) -> Request:
    return Request(
        messages=(Message("system", SYSTEM), Message("user", text)),
        **kw,  # type: ignore[arg-type]
    )


REQUESTS = [
    ask("Write a haiku about the sea.", max_tokens=40),
    ask("What is 2+2?", max_tokens=3),
    ask("Name a colour.", max_tokens=24),
    ask("Rate the word 'blue' from 1 to 5 as JSON.", max_tokens=48, json_schema=SCHEMA),
    # The model's own first choice is prose, which this grammar refuses at once.
    ask("Write a poem about rain.", max_tokens=32, json_schema=VERDICT),
    ask("Tell me about cats.", max_tokens=20, temperature=0.8, top_p=0.9, seed=11),
    ask("Is the sky blue? Answer yes or no.", choices=("yes", "no")),
    ask("Is grass red? Answer yes or no.", choices=("yes", "no", "not sure")),
    # Options that share their first tokens: the batched path decodes a shared start once.
    ask("Is water wet?", choices=("yes", "yes, mostly", "yes, always", "no")),
]


def key(answer: Completion | ProviderError) -> object:
    if isinstance(answer, ProviderError):
        return str(answer)
    return (answer.text, answer.finish_reason, answer.completion_tokens, answer.choice_scores)


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaProvider]:
    p = LlamaProvider(LlamaConfig(parallel=3), tmp_path_factory.mktemp("memo"))
    yield p
    p.close()


def test_batched_replies_equal_one_at_a_time(wide: LlamaProvider) -> None:
    batched = [key(a) for a in wide.complete_batch(REQUESTS)]
    single = [key(wide.complete(r)) for r in REQUESTS]
    assert batched == single


def test_batched_replies_equal_the_one_at_a_time_path(wide: LlamaProvider, tmp_path: Path) -> None:
    # parallel: 1 decodes through llama-cpp-python's own completion loop and sampler chain,
    # where the batched path samples greedy schema-held replies its own shorter way.
    single = LlamaProvider(LlamaConfig(parallel=1), tmp_path)
    try:
        alone = [key(single.complete(r)) for r in REQUESTS]
    finally:
        single.close()
    assert [key(a) for a in wide.complete_batch(REQUESTS)] == alone


def test_a_batched_run_gives_the_same_bytes_twice_whatever_its_width_and_order(
    wide: LlamaProvider, tmp_path: Path
) -> None:
    first = [key(a) for a in wide.complete_batch(REQUESTS)]
    other = LlamaProvider(LlamaConfig(parallel=2), tmp_path)
    try:
        reverse = other.complete_batch(REQUESTS[::-1])[::-1]
    finally:
        other.close()
    assert [key(a) for a in reverse] == first


CHOICE = {
    "type": "object",
    "properties": {"verdict": {"enum": ["pass", "fail"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}
"""A reply this schema admits is a few tokens long, then only the end of turn is allowed: it
ends by the model's end-of-turn token well within 200 tokens, whatever the model writes."""


def test_each_request_keeps_its_own_budget_and_stop(wide: LlamaProvider) -> None:
    budgets = [1, 2, 200]
    answers = wide.complete_batch(
        [
            ask("Is 'Fix typo' a good commit subject?", max_tokens=n, json_schema=CHOICE)
            for n in budgets
        ]
    )
    assert all(isinstance(a, Completion) for a in answers)
    first, second, free = answers
    assert isinstance(first, Completion)
    assert isinstance(second, Completion)
    assert isinstance(free, Completion)
    assert (first.finish_reason, first.completion_tokens) == ("length", 1)
    assert (second.finish_reason, second.completion_tokens) == ("length", 2)
    # Ended by the model's end-of-turn token, which never appears in the text.
    assert free.finish_reason == "stop"
    assert 2 < free.completion_tokens < 200
    assert "<|im_end|>" not in free.text
    assert json.loads(free.text)["verdict"] in ("pass", "fail")
    assert free.text.startswith(second.text)


def test_a_bad_request_fails_alone(wide: LlamaProvider) -> None:
    answers = wide.complete_batch(
        [ask("Say hi.", max_tokens=0), ask("Say hi.", max_tokens=5), ask("x " * 5000, max_tokens=5)]
    )
    assert isinstance(answers[0], ProviderError)
    assert isinstance(answers[1], Completion)
    assert isinstance(answers[2], ProviderError)
    assert "raise model.n_ctx" in str(answers[2])


RULES = "You review commit messages. " + "A good subject is short, imperative and lower case. " * 6


def rules_asks(system: str) -> list[Request]:
    return [
        Request(messages=(Message("system", system), Message("user", text)), max_tokens=24)
        for text in ("Fix the CSV parser.", "Add retries to the login form.", "Document the CLI.")
    ] + [
        Request(
            messages=(Message("system", system), Message("user", "Is 'fix: typo' good?")),
            max_tokens=40,
            json_schema=VERDICT,
        )
    ]


def evaluated(answers: list[Completion | ProviderError]) -> int:
    return sum(a.tokens_evaluated for a in answers if isinstance(a, Completion))


def run_in(
    home: Path, asks: list[Request], parallel: int = 2
) -> tuple[list[Completion | ProviderError], int]:
    provider = LlamaProvider(LlamaConfig(parallel=parallel), home)
    try:
        answers = provider.complete_batch(asks)
        return answers, provider._prefixes().loaded
    finally:
        provider.close()


@pytest.mark.parametrize("parallel", [1, 2])
def test_prefixes_kept_from_an_earlier_run_give_the_same_replies_for_less_work(
    tmp_path: Path, parallel: int
) -> None:
    first, loaded = run_in(tmp_path / "home", rules_asks(RULES), parallel)
    assert loaded == 0
    again, loaded = run_in(tmp_path / "home", rules_asks(RULES), parallel)
    assert loaded >= 1
    assert [key(a) for a in again] == [key(a) for a in first]
    assert evaluated(again) < evaluated(first) - 40
    # After an edit near its end, the system prompt is restored up to the edit: the replies
    # are those of a run that kept nothing.
    last = RULES.rfind("lower case")
    edited = rules_asks(f"{RULES[:last]}lowercase{RULES[last + len('lower case') :]}Be terse.")
    fresh, _ = run_in(tmp_path / "elsewhere", edited, parallel)
    warm, loaded = run_in(tmp_path / "home", edited, parallel)
    assert loaded >= 1
    assert [key(a) for a in warm] == [key(a) for a in fresh]
    assert evaluated(warm) < evaluated(fresh) - 40


def test_a_prefix_kept_by_one_decoding_path_serves_the_other(tmp_path: Path) -> None:
    # A context's sequence state names its stream count (one a slot and one for the shared
    # prefix when batched, one alone); a state kept at one width is laid out for another.
    batched, _ = run_in(tmp_path / "home", rules_asks(RULES), parallel=2)
    alone_fresh, _ = run_in(tmp_path / "fresh", rules_asks(RULES), parallel=1)
    alone, loaded = run_in(tmp_path / "home", rules_asks(RULES), parallel=1)
    assert loaded >= 1
    assert [key(a) for a in alone] == [key(a) for a in batched]
    assert evaluated(alone) < evaluated(alone_fresh) - 40
    run_in(tmp_path / "home2", rules_asks(RULES), parallel=1)
    batched_again, loaded = run_in(tmp_path / "home2", rules_asks(RULES), parallel=2)
    assert loaded >= 1
    assert [key(a) for a in batched_again] == [key(a) for a in batched]
    assert evaluated(batched_again) < evaluated(batched) - 40
    wider, loaded = run_in(tmp_path / "home2", rules_asks(RULES), parallel=3)
    assert loaded >= 1
    assert [key(a) for a in wider] == [key(a) for a in batched]
    assert evaluated(wider) < evaluated(batched) - 40
