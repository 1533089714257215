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


def _paired_suite(folder: Path, a: int, b: int, c: int, d: int) -> Path:
    """A suite whose real run compares a+b+c+d tests: a pass ON and OFF, b only ON, c only
    OFF, d neither (the scripted model answers ``yes`` where a test is to pass)."""
    folder.mkdir(parents=True, exist_ok=True)
    skill = folder / "skill" / "SKILL.md"
    skill.parent.mkdir(exist_ok=True)
    skill.write_text((SUITE.parent / "skill" / "SKILL.md").read_text(encoding="utf-8"))
    ids = [f"{kind}{i}" for kind, n in zip("abcd", (a, b, c, d), strict=True) for i in range(n)]
    passes = {"on": [t for t in ids if t[0] in "ab"], "off": [t for t in ids if t[0] in "ac"]}
    rules = [
        f"    - {{arm: {arm}, id: {test}, output: 'yes'}}"
        for arm, tests in passes.items()
        for test in tests
    ]
    tests = [
        f"  - {{id: {t}, should_trigger: true, prompt: 'case {t}', "
        "assert: [{type: equals, value: 'yes'}]}"
        for t in ids
    ]
    suite = folder / "suite.yaml"
    suite.write_text(
        "version: 1\ntype: capability\nskill: skill/SKILL.md\n"
        "model:\n  provider: scripted\n  default: 'no'\n  responses:\n"
        + "\n".join(rules)
        + "\ntests:\n"
        + "\n".join(tests)
        + "\n",
        encoding="utf-8",
    )
    return suite


def _write_run(suite: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """Run ``suite`` for real on its scripted model; return its run directory."""
    run_cli(["run", str(suite), "--json", "-q"])
    run = json.loads(capsys.readouterr().out)["run_id"]
    return Path(os.environ["SKILLEVAL_HOME"]) / "runs" / run


def test_assumes_a_tie_rate_without_a_run(capsys: pytest.CaptureFixture[str]) -> None:
    out = _power(capsys)
    plan = stats.plan_power(5, win_rate=0.8, tie_rate=0.5)
    assert out["n_tests"] == 5
    assert out["tie_rate_source"] == "assumed"
    assert out["power"] == pytest.approx(plan.power, rel=1e-5)
    assert out["tests_needed"] == plan.tests_needed
    assert out["tests_to_add"] == plan.tests_needed - 5  # type: ignore[operator]


def test_observes_the_tie_rate_in_the_suites_last_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = _paired_suite(tmp_path / "other", 0, 1, 1, 0)
    this = _paired_suite(tmp_path / "this", 4, 3, 1, 2)
    _write_run(other, capsys)
    this_run = _write_run(this, capsys)
    assert run_cli(["power", "--json", str(this), "--win-rate", "0.9"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tie_rate_source"] == "observed"
    assert out["tie_rate"] == 0.6
    assert out["run"] == str(this_run / "results.json")
    expected = stats.plan_power(10, win_rate=0.9, tie_rate=0.6)
    assert out["tests_needed"] == expected.tests_needed


def test_given_tie_rate_and_run_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _power(capsys, "--tie-rate", "0")["tie_rate_source"] == "given"
    run = _write_run(_paired_suite(tmp_path / "explicit", 1, 4, 0, 0), capsys)
    out = _power(capsys, "--run", str(run))
    assert out["tie_rate"] == 0.2
    plain = tmp_path / "plain.yaml"
    plain.write_text(
        "version: 1\nmodel: echo\ntests:\n  - prompt: hi\n    assert: [{type: contains, value: hi}]\n",
        encoding="utf-8",
    )
    no_lift = _write_run(plain, capsys)
    assert run_cli(["power", str(SUITE), "--run", str(no_lift)]) == 2
    assert "no ON/OFF comparison" in capsys.readouterr().err


def test_a_damaged_run_is_refused_and_a_damaged_last_run_passed_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _paired_suite(tmp_path / "s", 1, 1, 0, 0)
    run = _write_run(suite, capsys)
    (run / "results.json").write_text('{"version": 1, "records": [', encoding="utf-8")
    (run / "results.jsonl").unlink()
    assert run_cli(["power", str(suite), "--run", str(run)]) == 4
    assert "is not valid JSON" in capsys.readouterr().err
    assert _power_of(suite, capsys)["tie_rate_source"] == "assumed"


def _power_of(suite: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert run_cli(["power", "--json", str(suite)]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


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
