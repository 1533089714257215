"""finish-reason and is-refusal."""

from __future__ import annotations

import pytest

from skilleval.api import Check, Stats
from skilleval.assertions.builtin.completion import finish_reason, is_refusal, refusal_sign


@pytest.mark.parametrize(
    ("actual", "expected", "passed"),
    [
        ("stop", "stop", True),
        ("STOP", "stop", True),
        ("length", "stop", False),
        ("", "stop", False),
    ],
)
def test_finish_reason(actual: str, expected: str, passed: bool) -> None:
    verdict = finish_reason(Check(output="x", value=expected, stats=Stats(finish_reason=actual)))
    assert verdict.passed is passed


def test_finish_reason_reasons() -> None:
    cut = finish_reason(Check(output="x", value="stop", stats=Stats(finish_reason="length")))
    assert cut.reason == "finish reason is 'length', expected 'stop'"
    none = finish_reason(Check(output="x", value="stop", stats=Stats(finish_reason="")))
    assert none.reason == "the provider reported no finish reason (expected 'stop')"


@pytest.mark.parametrize(
    ("text", "sign"),
    [
        ("I'm sorry, I can't.", "i'm sorry"),
        ("  sorry — no.", "sorry"),
        ("I’m unable to do that", "i'm unable to"),  # a curly apostrophe
        ("Well, I cannot help with this.", "i cannot help"),
        ("As an AI language model, ...", "as an ai"),
        ("That is not appropriate here.", "not appropriate"),
        ("The deal is not legally binding.", None),  # whole words only
        ("Here is your recipe.", None),
        ("Sorrynot", "sorry"),  # an opening need not end a word, as in promptfoo
    ],
)
def test_refusal_signs(text: str, sign: str | None) -> None:
    assert refusal_sign(text) == sign


def test_is_refusal_verdicts() -> None:
    assert is_refusal(Check(output="   ")).reason == "output is empty, which counts as a refusal"
    assert is_refusal(Check(output="I apologize, but no.")).passed
    refused = is_refusal(Check(output="Sure: 42"))
    assert not refused.passed
    assert refused.reason == "output has no refusal phrase"
