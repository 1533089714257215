"""``similar`` and ``factuality`` end to end on the real embedded model, through the CLI: the
judge is the generator's GGUF, embeddings come from the same file, and a second run is served
entirely from the cache."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from skilleval.cli import run_cli

pytestmark = pytest.mark.model

SUITE = """
version: 1
model: default
decoding: {max_tokens: 24, seed: 7}
prompts: ["Answer in one sentence. {{q}}"]
tests:
  - id: capital
    vars: {q: "What is the capital of France?"}
    assert:
      - type: similar
        value: The capital of France is Paris.
        threshold: 0.5
      - type: not-similar
        value: Bananas are a yellow fruit that grows in bunches.
        threshold: 0.99
      - type: factuality
        value: Paris is the capital of France.
"""


def test_similar_and_factuality_grade_on_the_embedded_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(SUITE).lstrip(), encoding="utf-8")
    run_cli(["run", str(suite), "--json"])
    first = json.loads(capsys.readouterr().out)
    (record,) = first["records"]
    similar, not_similar, factuality = record["asserts"]
    # Each verdict follows from this machine's similarity and the threshold; no value is
    # expected, since vectors and replies differ in their last bits across CPUs.
    (close,) = similar["details"]["values"]
    assert -1.0 <= close <= 1.0
    assert similar["status"] == ("pass" if close >= 0.5 else "fail"), similar
    (far,) = not_similar["details"]["values"]
    assert -1.0 <= far <= 1.0
    assert not_similar["status"] == ("pass" if far < 0.99 else "fail"), not_similar
    assert factuality["status"] in ("pass", "fail"), factuality
    assert factuality["details"]["category"] in ("A", "B", "C", "D", "E")
    assert first["calls"]["judge_calls"] >= 1

    run_cli(["run", str(suite), "--json"])
    second = json.loads(capsys.readouterr().out)
    assert second["calls"]["model_calls"] == 0
    assert second["records"][0]["asserts"] == record["asserts"]
