"""The promptfoo model-graded types in whole runs on the scripted model: negation applied once,
tiers apart, select-best across prompts, assert-set and contextTransform."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli


def run_suite(
    tmp_path: Path, body: str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, Any]]:
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    code = run_cli(["run", str(path), "--json", "--no-cache"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, json.loads(out)


def asserts_of(doc: dict[str, Any], test_id: str) -> list[dict[str, Any]]:
    record = next(r for r in doc["records"] if r["test_id"] == test_id)
    return list(record["asserts"])


JUDGE_RULES = """
    model:
      provider: scripted
      responses:
        - id: paris
          output: Paris is the capital of France.
        - match: "REFERENCE:"
          output: '{"reason": "Same facts.", "category": "C"}'
        - match: "TASK:"
          output: '{"reason": "It does not.", "answer": "N"}'
        - match: "SENTENCES OF THE OUTPUT"
          output: '{"verdicts": [{"id": 1, "reason": "stated", "verdict": "SUPPORTED"}]}'
"""


def test_negation_is_applied_once_and_judge_types_are_in_the_model_tier(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = run_suite(
        tmp_path,
        JUDGE_RULES
        + """
    tests:
      - id: paris
        prompt: What is the capital of France?
        vars: {context: "Paris is the capital of France."}
        assert:
          - type: factuality
            value: Paris is the capital of France.
          - type: not-factuality
            value: Paris is the capital of France.
          - type: model-graded-closedqa
            value: mentions Rome
          - type: not-model-graded-closedqa
            value: mentions Rome
          - type: context-faithfulness
            threshold: 1
          - type: not-similar
            value: Paris is the capital of France.
          - type: contains
            value: Paris
    """,
        capsys,
    )
    results = asserts_of(doc, "paris")
    assert [r["status"] for r in results] == [
        "pass",
        "fail",
        "fail",
        "pass",
        "pass",
        "fail",
        "pass",
    ]
    assert [r["tier"] for r in results] == ["model"] * 6 + ["deterministic"]
    assert results[1]["score"] == 0
    assert results[1]["reason"].startswith("negated: category C")
    record = doc["records"][0]
    assert record["tiers"] == {"deterministic": "pass", "model": "fail"}
    assert code != 0


def test_select_best_compares_the_outputs_of_one_test_across_prompts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, doc = run_suite(
        tmp_path,
        """
        model:
          provider: scripted
          responses:
            - match: "OUTPUT 0:\\nA plain tweet"
              output: '{"reason": "The second one is funnier.", "best": 1}'
            - match: "funny"
              output: A funny tweet about bananas.
            - match: "tweet"
              output: A plain tweet about bananas.
        prompts:
          - "Write a tweet about {{topic}}"
          - "Write a very funny tweet about {{topic}}"
        tests:
          - id: bananas
            vars: {topic: bananas}
            assert:
              - type: select-best
                value: choose the funniest tweet
        """,
        capsys,
    )
    by_id = {r["test_id"]: r for r in doc["records"]}
    assert set(by_id) == {"bananas[p1]", "bananas[p2]"}
    statuses = sorted((r["output"], r["asserts"][0]["status"]) for r in by_id.values())
    assert statuses == [
        ("A funny tweet about bananas.", "pass"),
        ("A plain tweet about bananas.", "fail"),
    ]
    chosen = {r["asserts"][0]["details"]["chosen"] for r in by_id.values()}
    assert chosen == {1}


def test_select_best_with_one_prompt_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, doc = run_suite(
        tmp_path,
        """
        model: echo
        tests:
          - id: one
            prompt: Write a tweet.
            assert:
              - type: select-best
                value: the funniest
        """,
        capsys,
    )
    (result,) = asserts_of(doc, "one")
    assert result["status"] == "error"
    assert "at least two outputs" in result["reason"]


def test_assert_set_passes_on_its_threshold_and_counts_as_one_assertion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, doc = run_suite(
        tmp_path,
        """
        model: echo
        tests:
          - id: half
            prompt: hello world
            assert:
              - type: assert-set
                threshold: 0.5
                metric: greeting
                assert:
                  - type: contains
                    value: hello
                  - type: contains
                    value: goodbye
          - id: all
            prompt: hello world
            assert:
              - type: assert-set
                assert:
                  - type: contains
                    value: hello
                  - type: contains
                    value: goodbye
                    weight: 3
          - id: negated
            prompt: hello world
            assert:
              - type: not-assert-set
                assert:
                  - type: contains
                    value: goodbye
        """,
        capsys,
    )
    (half,) = asserts_of(doc, "half")
    assert half["status"] == "pass"
    assert half["score"] == 0.5
    assert [a["status"] for a in half["details"]["asserts"]] == ["pass", "fail"]
    assert half["tier"] == "deterministic"
    assert doc["records"][0]["metrics"] == {"greeting": 0.5}
    (all_,) = asserts_of(doc, "all")
    assert all_["status"] == "fail"
    assert all_["score"] == 0.25
    (negated,) = asserts_of(doc, "negated")
    assert negated["status"] == "pass"


def test_assert_set_with_a_judged_member_is_in_the_model_tier_and_errs_with_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, doc = run_suite(
        tmp_path,
        """
        model: echo
        tests:
          - id: one
            prompt: hello world
            assert:
              - type: assert-set
                assert:
                  - type: contains
                    value: hello
                  - type: similar
                    value: hello world
          - id: broken
            prompt: hello world
            assert:
              - type: assert-set
                assert:
                  - type: contains
                    value: hello
                  - type: context-relevance
        """,
        capsys,
    )
    (one,) = asserts_of(doc, "one")
    assert one["tier"] == "model"
    assert one["status"] == "pass"
    (broken,) = asserts_of(doc, "broken")
    assert broken["status"] == "error"
    assert "no context" in broken["reason"]


def test_context_transform_reads_the_context_from_the_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, doc = run_suite(
        tmp_path,
        """
        model:
          provider: scripted
          responses:
            - id: rag
              output: '{"answer": "Paris.", "context": "Paris is the capital of France."}'
            - match: "NUMBERED PIECES:\\n1. Paris is the capital of France."
              output: '{"verdicts": [{"id": 1, "reason": "answers it", "verdict": "NEEDED"}]}'
        tests:
          - id: rag
            prompt: What is the capital of France?
            assert:
              - type: context-relevance
                contextTransform: json.context
                threshold: 1
              - type: context-relevance
                contextTransform: json.missing
        """,
        capsys,
    )
    found, missing = asserts_of(doc, "rag")
    assert found["status"] == "pass"
    assert found["score"] == 1
    assert missing["status"] == "error"
    assert "no context" in missing["reason"]


def test_default_test_options_factuality_sets_the_category_scores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, doc = run_suite(
        tmp_path,
        JUDGE_RULES
        + """
    defaultTest:
      options:
        factuality: {agree: 0}
    tests:
      - id: paris
        prompt: What is the capital of France?
        assert:
          - type: factuality
            value: Paris is the capital of France.
          - type: factuality
            value: Paris is the capital of France.
            options: {factuality: {agree: 0.5}}
    """,
        capsys,
    )
    strict, own = asserts_of(doc, "paris")
    assert strict["status"] == "fail"
    assert strict["score"] == 0
    assert own["status"] == "pass"
    assert own["score"] == 0.5
