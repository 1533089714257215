"""Expansion is counted before it is built, refused past its limit with the count, the limit
and the position, and costs time in proportion to what it makes (suite/vars.py, sources.py)."""

from __future__ import annotations

import time
from pathlib import Path

from skilleval.suite.load import load_suite
from skilleval.suite.vars import MAX_EXPANDED
from tests.cli.isolated import run_isolated


def scenarios(path: Path, configs: int, tests: int) -> Path:
    lines = ["version: 1", "model: {provider: echo}", "prompts: ['Say {{a}} {{b}}']"]
    lines += ["scenarios:", "  - config:"]
    lines += [f"      - vars: {{a: 'c{i}'}}" for i in range(configs)]
    lines.append("    tests:")
    for j in range(tests):
        lines.append(f"      - vars: {{b: 't{j}'}}")
        lines.append("        assert: [{type: contains, value: x}]")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def list_vars(path: Path, sizes: list[int], prompts: int = 1) -> Path:
    names = "abcdefgh"[: len(sizes)]
    lines = ["version: 1", "model: {provider: echo}", "prompts:"]
    lines += [f"  - '{i}: " + "".join(f"{{{{{n}}}}}" for n in names) + "'" for i in range(prompts)]
    lines += ["tests:", "  - vars:"]
    for name, size in zip(names, sizes, strict=True):
        lines.append(f"      {name}: [" + ", ".join(f"'{name}{i}'" for i in range(size)) + "]")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_list_vars_past_the_limit_are_refused_before_they_are_built(tmp_path: Path) -> None:
    suite = list_vars(tmp_path / "suite.yaml", [1000, 1000, 1000])
    done = run_isolated(["validate", str(suite)], tmp_path, time_limit=10)
    assert not done.problems(), done.err
    assert done.code == 4
    assert done.message == (
        f"{suite.name}:7:7: error: these vars expand to 1,000,000,000 combinations × 1 prompt(s): "
        f"1,000,000,000 tests, more than the limit of {MAX_EXPANDED:,}; "
        "split the suite or list fewer values"
    )


def test_prompts_count_toward_the_limit(tmp_path: Path) -> None:
    suite = list_vars(tmp_path / "suite.yaml", [100, 60], prompts=2)
    done = run_isolated(["validate", str(suite)], tmp_path, time_limit=10)
    assert done.code == 4
    assert "6,000 combinations × 2 prompt(s): 12,000 tests" in done.message
    assert list_vars(tmp_path / "ok.yaml", [100, 60])  # 6,000 tests: within the limit
    ok = run_isolated(["validate", str(tmp_path / "ok.yaml")], tmp_path, time_limit=20)
    assert ok.code == 0, ok.err


def test_scenarios_past_the_limit_are_refused_before_they_are_built(tmp_path: Path) -> None:
    suite = scenarios(tmp_path / "suite.yaml", 1000, 1000)
    done = run_isolated(["validate", str(suite)], tmp_path, time_limit=10)
    assert not done.problems(), done.err
    assert done.code == 4
    assert done.message == (
        f"{suite.name}:5:5: error: the scenarios cross 1,000 configs with 1,000 tests here: "
        f"1,000,000 tests, more than the limit of {MAX_EXPANDED:,}; "
        "split the suite or list fewer values"
    )


def _load_seconds(path: Path) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        load_suite(path)
        best = min(best, time.perf_counter() - started)
    return best


def test_scenario_expansion_is_linear(tmp_path: Path) -> None:
    small = _load_seconds(scenarios(tmp_path / "small.yaml", 10, 50))
    large = _load_seconds(scenarios(tmp_path / "large.yaml", 10, 400))
    # Eight times the tests; a cost that grew with the square would take 64 times as long
    # (it did: 10 configs × 800 tests took 36 s, now 0.7 s).
    assert large < small * 20, (small, large)
