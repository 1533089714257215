"""``skilleval power``: the suite's test count, the tie rate's source, and the plan."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skilleval import stats
from skilleval.cli import run_cli

ROOT = Path(__file__).resolve().parent.parent.parent
SUITE = ROOT / "tests" / "data" / "lint" / "clean.yaml"
"""Five tests meant to trigger (the ones compared ON vs OFF) and two negative controls."""


@pytest.fixture(autouse=True)
def _in_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def _power(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert run_cli(["power", "--json", str(SUITE), *args]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def _write_run(name: str, suite_path: str, a: int, b: int, c: int, d: int) -> Path:
    run = Path(os.environ["SKILLEVAL_HOME"]) / "runs" / name
    run.mkdir(parents=True)
    doc = {
        "suite": {"path": suite_path},
        "lift": {"n": a + b + c + d, "a": a, "b": b, "c": c, "d": d},
    }
    (run / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    return run


def test_assumes_a_tie_rate_without_a_run(capsys: pytest.CaptureFixture[str]) -> None:
    out = _power(capsys)
    plan = stats.plan_power(5, win_rate=0.8, tie_rate=0.5)
    assert out["n_tests"] == 5
    assert out["tie_rate_source"] == "assumed"
    assert out["power"] == pytest.approx(plan.power, rel=1e-5)
    assert out["tests_needed"] == plan.tests_needed
    assert out["tests_to_add"] == plan.tests_needed - 5  # type: ignore[operator]


def test_observes_the_tie_rate_in_the_suites_last_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["power", "--json", str(SUITE), "--tie-rate", "0.5"]) == 0
    display = json.loads(capsys.readouterr().out)["suite"]
    _write_run("other-suite", "elsewhere.yaml", 0, 1, 1, 0)
    _write_run("this-suite", display, 6, 3, 1, 0)
    out = _power(capsys, "--win-rate", "0.9")
    assert out["tie_rate_source"] == "observed"
    assert out["tie_rate"] == 0.6
    assert out["run"].endswith("this-suite/results.json")  # type: ignore[union-attr]
    expected = stats.plan_power(5, win_rate=0.9, tie_rate=0.6)
    assert out["tests_needed"] == expected.tests_needed


def test_given_tie_rate_and_run_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert _power(capsys, "--tie-rate", "0")["tie_rate_source"] == "given"
    run = _write_run("explicit", "whatever.yaml", 1, 4, 0, 0)
    out = _power(capsys, "--run", str(run))
    assert out["tie_rate"] == 0.2
    empty = _write_run("no-lift", "whatever.yaml", 0, 0, 0, 0)
    assert run_cli(["power", str(SUITE), "--run", str(empty)]) == 2
    assert "no ON/OFF comparison" in capsys.readouterr().err


def test_text_output_says_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["power", str(SUITE), "--tie-rate", "0.5"]) == 0
    err = capsys.readouterr().err
    assert "5 distinct tests compared between ON and OFF (two-sided, α = 0.05)" in err
    assert "tie rate 0.50 (given)" in err
    plan = stats.plan_power(5, win_rate=0.8, tie_rate=0.5)
    assert f"add {plan.tests_to_add} distinct tests" in err


def test_rates_outside_zero_one_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["power", str(SUITE), "--win-rate", "1.5"]) == 2
    assert "between 0 and 1" in capsys.readouterr().err


def test_a_suite_without_a_skill_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "plain.yaml"
    suite.write_text(
        "version: 1\nmodel: echo\ntests:\n  - prompt: hi\n    assert: [{type: contains, value: hi}]\n",
        encoding="utf-8",
    )
    assert run_cli(["power", str(suite)]) == 2
    assert "no ON/OFF comparison" in capsys.readouterr().err
