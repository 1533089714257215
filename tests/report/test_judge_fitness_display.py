"""Every report says when the model-graded tier rests on an unqualified or unchecked judge.

Each run is a real ``skilleval run`` of a scripted suite graded by ``echo``, a judge that
fails every rubric output and cannot fill a statement list: measured on the judge-fitness
set it is below chance, so it is unqualified. The reports are read from the files written.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from skilleval.cli import run_cli
from skilleval.report import terminal
from skilleval.results.load import load_run

SUITE = """
version: 1
type: capability
model: {provider: scripted, default: "Paris is the capital."}
judge: echo
prompts: ["{{q}}"]
tests:
  - id: paris
    vars: {q: "Capital of France?"}
    assert:
      - {type: contains, value: Paris}
      - {type: llm-rubric, value: Names Paris.}
"""

UNQUALIFIED = re.compile(
    r"unqualified judge: fitness 0\.\d\d \[0\.\d\d, 0\.\d\d\] is below chance 0\.5 on 73 pairs"
)
NOT_CHECKED = "judge not checked: the fitness check was skipped (--no-judge-check)"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("suite.yaml").write_text(textwrap.dedent(SUITE).lstrip(), encoding="utf-8")


def run(*extra: str, capsys: pytest.CaptureFixture[str]) -> tuple[str, dict[str, str]]:
    outputs = {"md": "r.md", "html": "r.html", "xml": "r.xml"}
    args = ["run", "suite.yaml", *extra]
    for path in outputs.values():
        args += ["-o", path]
    assert run_cli(args) == 0
    err = capsys.readouterr().err
    return err, {kind: Path(path).read_text(encoding="utf-8") for kind, path in outputs.items()}


def test_an_unqualified_judge_is_named_in_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    err, reports = run(capsys=capsys)
    assert "judge fitness: grading 73 known-good and known-bad pairs with echo" in err
    # terminal: the tier is marked in words, and the reason is spelled out
    assert "· model tier 0% (0/1) [unqualified judge]" in err
    (line,) = [x for x in err.splitlines() if x.startswith("warning: unqualified judge:")]
    assert UNQUALIFIED.search(line)
    assert line.endswith("; the model-graded tier is unqualified")
    # Markdown: the model tier's cell in italics with the tag, and the reason as a note
    assert (
        "| default | 0% (0/1) | 100% (1/1) | _0% (0/1)_ (unqualified judge) | 0 |"
        in (reports["md"])
    )
    note = next(x for x in reports["md"].splitlines() if x.startswith("**Judge fitness**"))
    assert UNQUALIFIED.search(note.replace("\\", ""))
    # HTML: the model meter greyed by its class, the reason above the tiers
    html = reports["html"]
    assert '<div class="meter unqualified">' in html
    assert html.count('<div class="meter">') == 1  # the deterministic tier stays in colour
    assert ".meter.unqualified .big" in html
    reason = re.search(r'<p class="warnline" id="judge-fitness">([^<]*)</p>', html)
    assert reason is not None
    assert UNQUALIFIED.search(reason.group(1))
    # JUnit: a property of every testsuite
    root = ET.fromstring(reports["xml"])
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert UNQUALIFIED.search(props["judge_fitness"] or "")


def test_the_second_run_reads_the_measurement_back(capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys=capsys)
    err, _ = run(capsys=capsys)
    assert "judge fitness: grading" not in err
    assert "judge fitness (measured before): unqualified judge" in err
    latest = load_run(_home())
    assert latest.judge is not None
    assert latest.judge.fitness is not None
    assert latest.judge.fitness.cached


def _home() -> Path:
    return Path(os.environ["SKILLEVAL_HOME"]) / "runs" / "latest"


def test_a_skipped_check_says_judge_not_checked_in_every_format(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err, reports = run("--no-judge-check", capsys=capsys)
    assert "judge fitness: grading" not in err
    assert NOT_CHECKED in err.splitlines()
    assert "[unqualified judge]" not in err
    note = next(x for x in reports["md"].splitlines() if x.startswith("**Judge fitness**"))
    assert "judge not checked" in note
    assert 'id="judge-fitness-fact">' + NOT_CHECKED in reports["html"]
    assert "meter unqualified" not in reports["html"]
    assert f'name="judge_fitness" value="{NOT_CHECKED}"' in reports["xml"]


def test_the_terminal_greys_the_model_tier_only_when_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run(capsys=capsys)
    results = load_run(_home())
    plain = terminal.render_terminal(results)
    assert terminal.DIM not in plain
    coloured = terminal.render_terminal(results, color=True)
    assert f"{terminal.DIM}model tier 0% (0/1) [unqualified judge]{terminal.UNDIM}" in coloured
    assert coloured.count(terminal.DIM) == 1


def test_json_output_carries_the_fitness(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["run", "suite.yaml", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    fitness = out["judge"]["fitness"]
    assert fitness["status"] == "unqualified"
    assert fitness["pairs"] == 73
    assert fitness["chance"] == 0.5
    assert len(fitness["ci95"]) == 2
