"""`skilleval router-check`: the command around the router-fitness check."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skilleval.cli import run_cli
from skilleval.runner.arms import NONE
from skilleval.runner.routercheck import load_router_set
from skilleval.util.homefile import unseal

# --- the command ---------------------------------------------------------------------------------


def test_router_check_cli_with_a_constant_router(capsys: pytest.CaptureFixture[str]) -> None:
    """Echo picks the last option, none, every time: exactly the balanced set's chance level."""
    assert run_cli(["router-check", "--router-model", "echo", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    cases = load_router_set().cases
    assert out["cases"] == len(cases)
    assert out["accuracy"] == 0.5
    assert out["interval"][0] < 0.5 < out["interval"][1]
    assert (out["recall"], out["false_triggers"], out["error_rate"]) == (0.0, 0.0, 0.0)
    assert out["constant"] is True
    assert out["router"]["decoding"]["greedy"] is True
    assert {r["chosen"] for r in out["results"]} == {NONE}
    assert out["auroc"]["value"] is None  # echo gives no scores to rank by
    assert out["qualified"] is False
    assert out["chance"] == 0.5


def test_router_check_prints_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["router-check", "--router-model", "echo", "--limit", "4"]) == 0
    err = capsys.readouterr().err
    assert "router: echo echo, greedy, seed 0" in err
    assert "[ 4/4]" in err
    assert "accuracy        0.00 [0.00, 0.49]" in err
    assert "the router gave every case the same label" in err


def test_a_full_check_is_kept_and_a_limited_one_is_not(
    capsys: pytest.CaptureFixture[str],
) -> None:
    kept = Path(os.environ["SKILLEVAL_HOME"]) / "router-fitness"
    assert run_cli(["router-check", "--router-model", "echo", "--limit", "4"]) == 0
    assert not kept.exists()
    assert run_cli(["router-check", "--router-model", "echo"]) == 0
    err = capsys.readouterr().err
    assert "AUROC           n/a  (the router gives no scores to rank by)" in err
    assert "UNQUALIFIED: the accuracy interval [0.38, 0.62] reaches the chance level 0.50" in err
    (verdict,) = kept.iterdir()
    payload = unseal(verdict.read_bytes())  # sealed, like everything kept under the home
    assert payload is not None
    fitness = json.loads(payload)["fitness"]
    assert (fitness["qualified"], fitness["auroc"], fitness["cases"]) == (False, None, 64)


def test_router_check_exits_3_when_the_router_cannot_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "missing.gguf")
    assert run_cli(["router-check", "--router-model", missing]) == 3
    assert "the router could not run:" in capsys.readouterr().err


@pytest.mark.model
def test_router_check_runs_on_the_embedded_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["router-check", "--limit", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["error_rate"] == 0.0
    assert out["router"]["model"]["name"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert all(r["scores"] is not None for r in out["results"])
