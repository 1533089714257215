"""skill-creator's trigger rule (`trigger: {runs: N, rate: R}`): each routed test is asked N
times, sampled, and triggers when at least R of the runs pick the skill. Driven from the
command line with a scripted router whose answer changes from run to run."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from suite.formats_support import TRIGGERS_LIST, skill_folder, write_json

from skilleval.cli import run_cli
from skilleval.suite.load import load_suite

SKILL = """\
---
name: tidy
description: Tidy a messy list. Use when the user asks to tidy, sort or clean a list.
---
Answer with TIDY and the list sorted.
"""

# Run i of a test is answered by outputs[i]: the router's pick changes from run to run.
SUITE = """\
version: 1
type: capability
skill: skill/SKILL.md
decoding: {{mode: {mode}, seed: 5}}
{trigger}
model:
  provider: scripted
  default: TIDY
  responses:
    - {{id: twice, arm: router, outputs: [tidy, none, tidy]}}
    - {{id: once, arm: router, outputs: [none, tidy, none]}}
    - {{id: never, arm: router, outputs: [none, none, none]}}
    - {{id: always, arm: router, outputs: [tidy, tidy, tidy]}}
tests:
  - {{id: twice, prompt: "Tidy: b, a", should_trigger: true}}
  - {{id: once, prompt: "Sort these: c, a", should_trigger: true}}
  - {{id: never, prompt: "Name a colour", should_trigger: false}}
  - {{id: always, prompt: "Tell me a joke", should_trigger: false}}
"""


def write(root: Path, *, mode: str = "distribution", trigger: str = "") -> Path:
    (root / "skill").mkdir(parents=True, exist_ok=True)
    (root / "skill" / "SKILL.md").write_text(SKILL, encoding="utf-8")
    path = root / "suite.yaml"
    path.write_text(SUITE.format(mode=mode, trigger=trigger), encoding="utf-8")
    return path


def run(
    path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, *, quiet: bool = True
) -> tuple[int, dict]:
    monkeypatch.setenv("SKILLEVAL_HOME", str(home))
    out = home / "out.json"
    code = run_cli(["run", str(path), *(["-q"] if quiet else []), "--no-cache", "-o", str(out)])
    return code, json.loads(out.read_text(encoding="utf-8"))


def test_skill_creator_rule_counts_sampled_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, trigger="trigger: {runs: 3, rate: 0.5}")
    code, doc = run(path, tmp_path / "home", monkeypatch, quiet=False)
    assert code == 0
    assert "trigger rule: sampled 3 runs, rate >= 0.5" in capsys.readouterr().err
    block = doc["trigger"]
    assert block["rule"] == "sampled 3 runs, rate >= 0.5"
    tests = {t["test_id"]: t for t in block["tests"]}
    assert tests["twice"]["runs"] == ["tidy", "none", "tidy"]
    assert tests["twice"]["rate"] == pytest.approx(2 / 3, abs=1e-6)
    assert tests["twice"]["triggered"] is True
    assert tests["once"]["rate"] == pytest.approx(1 / 3, abs=1e-6)
    assert (tests["once"]["triggered"], tests["once"]["chosen"]) == (False, "none")
    assert tests["never"]["triggered"] is False
    assert tests["always"]["triggered"] is True
    assert (block["tp"], block["fn"], block["tn"], block["fp"]) == (1, 1, 1, 1)
    assert sorted(block["misrouted"]) == ["always", "once"]


def test_rate_decides_where_the_runs_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At rate 0.3 one run in three is enough; the same answers now trigger `once`."""
    path = write(tmp_path, trigger="trigger: {runs: 3, rate: 0.3}")
    _, doc = run(path, tmp_path / "home", monkeypatch)
    tests = {t["test_id"]: t for t in doc["trigger"]["tests"]}
    assert tests["once"]["triggered"] is True
    assert doc["trigger"]["rule"] == "sampled 3 runs, rate >= 0.3"


def test_one_run_is_the_greedy_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without `runs` one call decides (the first output), and nothing about runs is written."""
    path = write(tmp_path)
    _, doc = run(path, tmp_path / "home", monkeypatch)
    assert doc["trigger"]["rule"] == "greedy"
    tests = {t["test_id"]: t for t in doc["trigger"]["tests"]}
    assert tests["once"]["triggered"] is False
    assert "runs" not in tests["once"]
    assert "rate" not in tests["once"]


@pytest.mark.parametrize(
    ("mode", "trigger", "line", "words"),
    [
        (
            "deterministic",
            "trigger: {runs: 3}",
            5,
            "trigger.runs: 3 needs `decoding: {mode: distribution}`",
        ),
        ("distribution", "trigger: {rate: 0.5}", 5, "`trigger.rate` counts sampled routing runs"),
    ],
)
def test_rule_settings_that_cannot_apply_are_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    mode: str,
    trigger: str,
    line: int,
    words: str,
) -> None:
    path = write(tmp_path, mode=mode, trigger=trigger)
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    assert run_cli(["validate", str(path)]) == 4
    err = capsys.readouterr().err
    assert f"suite.yaml:{line}:" in err
    assert words in err
    assert "Traceback" not in err


def test_a_trigger_set_beside_a_sampled_spec_uses_skill_creators_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In a skill folder whose Vally spec samples (`runs:`), the trigger set's queries are
    decided as skill-creator decides them: 3 sampled runs, a rate of at least 0.5."""
    root = skill_folder(tmp_path / "csv-summary")
    write_json(root / "evals" / "triggers.json", TRIGGERS_LIST)
    (root / "eval.yaml").write_text(
        textwrap.dedent(
            """\
            name: csv-summary
            defaults: {runs: 2}
            stimuli:
              - name: Count rows
                prompt: How many rows?
                graders: [{type: output-contains, config: {substring: rows}}]
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    out = tmp_path / "out.json"
    code = run_cli(["run", str(root), "--model", "echo", "-q", "-o", str(out)])
    assert code in (0, 1)
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["trigger"]["rule"] == "sampled 3 runs, rate >= 0.5"
    assert all(len(t["runs"]) == 3 for t in doc["trigger"]["tests"])
    suite, _ = load_suite(root)
    said = [n for n in suite.notes if "triggers.json:1:1:" in n]
    assert any("note: each query is routed 3 times, sampled" in n for n in said), said


def test_a_trigger_set_read_greedily_says_how_to_get_skill_creators_rule(tmp_path: Path) -> None:
    root = skill_folder(tmp_path / "csv-summary")
    path = write_json(root / "evals" / "triggers.json", TRIGGERS_LIST)
    suite, _ = load_suite(path)
    assert suite.trigger.runs == 1
    (said,) = [n for n in suite.notes if "skill-creator routes each query 3 times" in n]
    assert ": warning: " in said
    assert "`trigger: {runs: 3, rate: 0.5}`" in said
