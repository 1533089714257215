"""perplexity in a run: the provider's token log-probabilities reach the check, a provider
without them makes it an error, and the in-process model records them (``-m model``)."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest

from skilleval.cli import run_cli

SCRIPTED = """
version: 1
model:
  provider: scripted
  responses:
    - {id: sure, output: Paris, logprobs: [-0.1, -0.2]}
    - {id: unsure, output: Lyon, logprobs: [-2.0, -3.0]}
tests:
  - id: sure
    prompt: Capital of France?
    assert: [{type: perplexity, threshold: 1.5}, {type: perplexity-score, threshold: 0.4}]
  - id: unsure
    prompt: Capital of France?
    assert: [{type: perplexity, threshold: 1.5}, {type: perplexity-score, threshold: 0.4}]
"""


def _records(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str], *extra: str) -> list:
    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    run_cli(["run", str(suite), "--json", *extra])
    return list(json.loads(capsys.readouterr().out)["records"])


def test_the_providers_log_probabilities_reach_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = {r["test_id"]: r for r in _records(tmp_path, SCRIPTED, capsys, "--no-cache")}
    assert [a["status"] for a in records["sure"]["asserts"]] == ["pass", "pass"]
    assert [a["status"] for a in records["unsure"]["asserts"]] == ["fail", "fail"]
    score = records["unsure"]["asserts"][1]["score"]
    assert score == pytest.approx(1 / (1 + math.exp(2.5)), abs=1e-6)  # results round to 6 places


def test_a_cached_reply_keeps_its_log_probabilities(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _records(tmp_path, SCRIPTED, capsys)
    again = _records(tmp_path, SCRIPTED, capsys)
    assert all(r["stats"]["cached"] for r in again)
    assert [[a["score"] for a in r["asserts"]] for r in again] == [
        [a["score"] for a in r["asserts"]] for r in first
    ]


def test_a_provider_without_them_makes_it_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = """
    version: 1
    model: {provider: echo}
    tests:
      - prompt: hello
        assert: [{type: perplexity-score}]
    """
    (record,) = _records(tmp_path, text, capsys)
    (result,) = record["asserts"]
    assert result["status"] == "error"
    assert "log-probabilities" in result["reason"]


@pytest.mark.model
def test_the_in_process_model_records_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = """
    version: 1
    model: default
    decoding: {max_tokens: 12, seed: 3}
    tests:
      - id: free
        prompt: "Name one colour."
        assert: [{type: perplexity-score}, {type: perplexity}, {type: contains, value: ""}]
      - id: schema
        prompt: "Give a JSON object with a colour."
        assert: [{type: perplexity-score}]
      - id: plain
        prompt: "Name one colour."
        assert: [{type: contains, value: ""}]
    """
    records = {r["test_id"]: r for r in _records(tmp_path, text, capsys, "--no-cache")}
    # Recording the log-probabilities changes no token of the reply.
    assert records["free"]["output"] == records["plain"]["output"]
    for name in ("free", "schema"):
        result = records[name]["asserts"][0]
        assert result["status"] == "pass", result
        # A probability-like score strictly between 0 and 1 (the mean log-probability of a
        # real reply is below 0 and finite).
        assert 0 < result["score"] < 0.5
    # perplexity and perplexity-score come from the same mean: exp(-L) and 1/(1+exp(-L)).
    score = records["free"]["asserts"][0]["score"]
    reason = records["free"]["asserts"][1]["reason"]
    perplexity = float(reason.split()[1])
    assert 1 / (1 + perplexity) == pytest.approx(score, abs=0.01)


@pytest.mark.model
def test_they_are_recorded_when_the_model_batches_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = """
    version: 1
    model: default
    decoding: {max_tokens: 8}
    tests:
      - id: a
        prompt: "Name one colour."
        assert: [{type: perplexity-score}]
      - id: b
        prompt: "Name one fruit."
        assert: [{type: perplexity-score}]
    """
    records = _records(tmp_path, text, capsys, "--no-cache", "--jobs", "2")
    assert [r["asserts"][0]["status"] for r in records] == ["pass", "pass"], records
