"""BLEU, GLEU and ROUGE-N: promptfoo's numbers, their properties, and the verdicts built on them."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skilleval.api import Check
from skilleval.assertions.builtin.textmetrics import (
    bleu,
    bleu_score,
    gleu,
    gleu_score,
    gleu_words,
    rouge_n,
    rouge_n_score,
    treebank_words,
    words,
)

# Scores promptfoo 0.123.1 computes for the same inputs (its calculateBleuScore,
# calculateGleuScore and ROUGE-N on lower-cased text), pinned from a run of its code.
PROMPTFOO_SCORES = [
    (
        "The cat sat on the mat.",
        ["The cat is sitting on the mat.", "A cat sat on a mat."],
        (0.010573712634405643, 0.4090909090909091, 0.8),
    ),
    (
        "I don't think it's \"right\", do you?",
        ["Do you think it is right? I don't."],
        (0.000003944243648327546, 0.19230769230769232, 0.7500000000000001),
    ),
    ("the the the the", ["the cat"], (0.000003976353643835251, 0.1, 0.3333333333333333)),
    (
        "Paris is the capital and largest city of France.",
        ["The capital of France is Paris."],
        (0.00015352597838656334, 0.26666666666666666, 0.8235294117647058),
    ),
]


@pytest.mark.parametrize(("candidate", "references", "expected"), PROMPTFOO_SCORES)
def test_scores_equal_promptfoos(
    candidate: str, references: list[str], expected: tuple[float, float, float]
) -> None:
    ours = (
        bleu(candidate, references),
        gleu(candidate, references),
        rouge_n(candidate, references[0]),
    )
    for got, want in zip(ours, expected, strict=True):
        assert math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-15)


def test_rouge_keeps_promptfoos_rounding_at_the_threshold() -> None:
    # 0.7500000000000001 in promptfoo: a pass at the default threshold of 0.75.
    check = Check(
        output="I don't think it's \"right\", do you?", value="Do you think it is right? I don't."
    )
    assert rouge_n_score(check).passed


def test_tokenisation() -> None:
    assert words("  The  Cat\tsat ") == ["the", "cat", "sat"]
    assert words("") == [""]
    assert gleu_words("End. of it...") == ["end", "of", "it"]
    assert gleu_words(" ... ") == []
    assert treebank_words("I can't go, can you?") == [
        "I",
        "ca",
        "n't",
        "go",
        ",",
        "can",
        "you",
        "?",
    ]
    assert treebank_words('He said "no".') == ["He", "said", "``", "no", "''", "."]
    assert treebank_words("   ") == []


def test_edge_cases_score_zero() -> None:
    assert bleu("   ", ["anything"]) == 0.0
    assert gleu("...", ["anything"]) == 0.0
    assert gleu("text", [""]) == 0.0
    assert rouge_n("", "reference") == 0.0
    assert rouge_n("apple", "pear") == 0.0


def test_brevity_penalty_uses_the_closest_reference_length() -> None:
    # Two words against references of one and three words: both are one word away and the
    # shorter one counts, so there is no penalty; against the long one alone there is.
    assert bleu("a b", ["a", "a b c"]) == 1.0
    assert bleu("a b", ["a b c"]) == pytest.approx(math.exp(1 - 3 / 2))


_TEXT = st.text(alphabet=st.sampled_from(list("abc .,'\"?!-\n")), max_size=40)
_WORDY = _TEXT.filter(lambda t: any(c.isalpha() for c in t))


@given(_TEXT, st.lists(_TEXT, min_size=1, max_size=3))
def test_scores_are_between_0_and_1(candidate: str, references: list[str]) -> None:
    for score in (
        bleu(candidate, references),
        gleu(candidate, references),
        rouge_n(candidate, references[0]),
    ):
        assert 0.0 <= score <= 1.0


@given(_WORDY)
def test_a_text_matches_itself_perfectly(text: str) -> None:
    assert bleu(text, [text]) == pytest.approx(1.0)
    assert gleu(text, [text]) == 1.0
    assert rouge_n(text, text) == pytest.approx(1.0)


@given(_TEXT, _TEXT)
def test_rouge_is_symmetric(a: str, b: str) -> None:
    assert rouge_n(a, b) == pytest.approx(rouge_n(b, a))


@given(_TEXT, st.lists(_TEXT, min_size=1, max_size=3), _TEXT)
def test_another_reference_never_lowers_gleu(
    candidate: str, references: list[str], extra: str
) -> None:
    assert gleu(candidate, [*references, extra]) >= gleu(candidate, references)


def test_verdicts_use_promptfoos_default_thresholds() -> None:
    out = "The fast brown fox leaps over the lazy dog."
    ref = "The quick brown fox jumps over the lazy dog."
    low = bleu_score(Check(output=out, value=ref))
    assert not low.passed
    assert low.score == pytest.approx(bleu(out, [ref]))
    assert low.reason.startswith(f"BLEU {bleu(out, [ref]):.4f} < threshold 0.5")
    assert bleu_score(Check(output=out, value=ref, threshold=0.2)).passed
    assert "best of 2 references" in bleu_score(Check(output=out, value=[ref, out])).reason
    assert gleu_score(Check(output=out, value=out)).reason.startswith("GLEU 1.0000 ≥ threshold 0.5")
    verdict = rouge_n_score(Check(output=out, value=ref))
    assert verdict.passed  # 8 of 10 tokens shared ('the' twice): F1 0.8 ≥ 0.75
    assert "10 output tokens against 10 reference tokens" in verdict.reason
