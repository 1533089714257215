"""``skilleval validate`` warns about an even number of trials, and still exits 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from skilleval.cli import run_cli

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = ROOT / "tests" / "data" / "lint"


@pytest.fixture(autouse=True)
def _in_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def test_even_trials_warn(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["validate", str(DATA / "SE106-even-trials.yaml"), "--no-entry-points"]) == 0
    err = capsys.readouterr().err
    assert "warning: trials: 2 is even, so a test's majority vote can tie" in err


def test_one_trial_does_not_warn(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["validate", str(DATA / "clean.yaml"), "--no-entry-points"]) == 0
    assert "warning" not in capsys.readouterr().err
