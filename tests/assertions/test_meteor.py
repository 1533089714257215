"""meteor gives promptfoo's METEOR verdicts and scores, with WordNet and without it.

``tests/data/promptfoo-cases/meteor/promptfoo-verdicts.json`` is what promptfoo 0.123.1's
own METEOR code decided on the cases of ``promptfooconfig.yaml`` beside it, and
``../wordnet`` holds the WordNet 3.1 lines those cases look up.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skilleval.api import Stats
from skilleval.assertions.builtin._porter import stem
from skilleval.assertions.builtin.meteor import meteor_score
from skilleval.runner.grade import Subject, grade
from skilleval.suite.load import Overrides, load_suite

DATA = Path(__file__).resolve().parent.parent / "data" / "promptfoo-cases"
PINNED: list[dict[str, Any]] = json.loads(
    (DATA / "meteor" / "promptfoo-verdicts.json").read_text(encoding="utf-8")
)["results"]


@pytest.fixture
def wordnet(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WNSEARCHDIR", str(DATA / "wordnet"))
    return DATA / "wordnet"


@pytest.fixture(scope="module")
def cases() -> Any:
    suite, _ = load_suite(DATA / "meteor" / "promptfooconfig.yaml", Overrides(entry_points=False))
    return suite.tests


@pytest.mark.parametrize("index", range(len(PINNED)))
def test_same_verdict_and_score_as_promptfoo(index: int, cases: Any, wordnet: Path) -> None:
    test = cases[index]
    subject = Subject(
        output=test.metadata["output"], prompt="", messages=(), stats=Stats(), arm="", trial=0
    )
    (result,) = grade(test, subject).asserts
    (pinned,) = PINNED[index]["asserts"]
    assert result.status == ("pass" if pinned["pass"] else "fail"), result.reason
    assert result.score == pytest.approx(pinned["score"], abs=1e-12), result.reason
    assert "no WordNet" not in result.reason


def test_synonyms_count_only_with_wordnet(wordnet: Path) -> None:
    with_synonyms = meteor_score("my car is red", "my auto is red", wordnet=wordnet)
    without = meteor_score("my car is red", "my auto is red", wordnet=None)
    assert with_synonyms > without


def test_without_wordnet_the_reason_says_synonyms_were_not_matched(
    cases: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("skilleval.assertions.builtin.meteor.wordnet_dir", lambda: None)
    subject = Subject(
        output="my car is red", prompt="", messages=(), stats=Stats(), arm="", trial=0
    )
    (result,) = grade(cases[3], subject).asserts
    assert "no WordNet" in result.reason
    assert result.status == "fail"  # car and auto no longer match


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("caresses", "caress"),
        ("ponies", "poni"),
        ("agreed", "agre"),
        ("hopping", "hop"),
        ("filing", "file"),
        ("happy", "happi"),
        ("relational", "relat"),
        ("generalization", "gener"),
        ("electrical", "electr"),
        ("adjustment", "adjust"),
        ("controll", "control"),
        ("a", "a"),
    ],
)
def test_porter_stems_as_the_paper_does(word: str, expected: str) -> None:
    assert stem(word) == expected
