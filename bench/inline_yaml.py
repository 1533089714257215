"""The inline-YAML scale case: N echo tests written inline in one YAML file.

skilleval runs them (``skilleval run -q``, a fresh home) and checks them (``skilleval
validate``); promptfoo, when given, evaluates the same tests with its ``echo`` provider, the
same prompt and the same four deterministic asserts (``javascript`` standing in for
``max-length``). Both are cold processes timed from spawn to exit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from common import check, load_average, median, run_child, table

SKILLEVAL = [sys.executable, "-m", "skilleval"]

HEADER = """\
version: 1
description: {n} echo tests written inline
model: echo
prompts:
  - "Repeat after me: {{{{request}}}}"
defaultTest:
  assert:
    - type: contains
      value: "{{{{word}}}}"
    - type: not-icontains
      value: as an ai
    - type: regex
      value: "\\\\w+"
    - type: max-length
      value: 400
tests:
"""

PROMPTFOO_HEADER = """\
description: {n} echo tests written inline
prompts:
  - "Repeat after me: {{{{request}}}}"
providers:
  - echo
defaultTest:
  assert:
    - type: contains
      value: "{{{{word}}}}"
    - type: not-icontains
      value: as an ai
    - type: regex
      value: "\\\\w+"
    - type: javascript
      value: output.length <= 400
tests:
"""


def _tests(n: int) -> str:
    rows = []
    for i in range(n):
        rows.append(
            f"  - vars:\n"
            f'      request: "Write a commit message: I fixed crash number {i}."\n'
            f'      word: "#{i}"\n'
        )
    return "".join(rows)


def write_suites(folder: Path, n: int) -> tuple[Path, Path]:
    """The skilleval suite and the promptfoo config, both with ``n`` inline tests."""
    folder.mkdir(parents=True, exist_ok=True)
    tests = _tests(n)
    suite = folder / "suite.yaml"
    suite.write_text(HEADER.format(n=n) + tests, encoding="utf-8")
    config = folder / "promptfooconfig.yaml"
    config.write_text(PROMPTFOO_HEADER.format(n=n) + tests, encoding="utf-8")
    return suite, config


def one_round(
    folder: Path, n: int, promptfoo: str | None, promptfoo_env: dict[str, str]
) -> dict[str, Any]:
    suite, config = write_suites(folder, n)
    out: dict[str, Any] = {"load": load_average()}
    home = {"SKILLEVAL_HOME": str(folder / "home")}
    validate = run_child([*SKILLEVAL, "validate", str(suite)], home, folder / "validate.json")
    check(validate, "skilleval validate of the inline suite", ok=(0,))
    run = run_child([*SKILLEVAL, "run", str(suite), "-q"], home, folder / "run.json")
    check(run, "skilleval run of the inline suite")
    document = json.loads((folder / "home/runs/latest/results.json").read_text())
    out["validate"] = validate
    out["run"] = run
    out["model_calls"] = document["calls"]["model_calls"]
    if promptfoo:
        argv = [
            promptfoo,
            "eval",
            "-c",
            str(config),
            "--no-cache",
            "--no-progress-bar",
            "--no-table",
            "-o",
            str(folder / "promptfoo-results.json"),
        ]
        child = run_child(argv, promptfoo_env, folder / "promptfoo.json")
        check(child, "promptfoo eval of the inline suite", ok=(0, 100))
        out["promptfoo"] = child
    return out


def measure(
    work: Path, n: int, repeat: int, promptfoo: str | None, promptfoo_env: dict[str, str]
) -> str:
    rounds = []
    for r in range(repeat):
        rounds.append(one_round(work / f"inline-{n}-{r + 1}", n, promptfoo, promptfoo_env))
        print(f"  inline YAML, {n} tests, round {r + 1}/{repeat} done", flush=True)
    rows = []
    for key, label in (
        ("validate", "skilleval validate"),
        ("run", "skilleval run"),
        ("promptfoo", "promptfoo eval"),
    ):
        if key not in rounds[0]:
            continue
        walls = [r[key].wall_s for r in rounds]
        rows.append(
            [
                label,
                f"{median(walls):.2f}",
                " ".join(f"{w:.2f}" for w in walls),
                f"{median([r[key].cpu_s for r in rounds]):.2f}",
                f"{median([r[key].max_rss_mb for r in rounds]):.0f}",
            ]
        )
    lines = [
        f"inline YAML: {n} echo tests, 4 deterministic asserts each (medians of {repeat})",
        table(["case", "wall s", "per round", "CPU s", "peak RSS MB"], rows),
    ]
    if "promptfoo" in rounds[0]:
        ratios = [r["run"].wall_s / r["promptfoo"].wall_s for r in rounds]
        lines.append(
            f"skilleval run / promptfoo eval: {median(ratios):.3f} "
            f"(rounds {' '.join(f'{x:.3f}' for x in ratios)}; target ≤ 0.15)"
        )
    lines.append("load average per round: " + "; ".join(r["load"] for r in rounds))
    return "\n".join(lines)
