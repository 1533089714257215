"""A run judged by the embedded model says "unqualified judge" in every report format.

Measuring the embedded judge on the whole judge-fitness set takes 146 judge calls: about
7 minutes on an idle 2-core machine, far more when it is busy. This test measures it for
real, on the first 3 pairs only, and puts that measurement in the memo under the judge's
real identity, as a first run would. The run then reads it back, so the path a user's
second run takes is the one tested, and the subset is said in the reason ("on 3 pairs").
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
from skilleval.engine.cache import CachingProvider
from skilleval.engine.factory import create_provider
from skilleval.engine.llama import gguf_spec
from skilleval.judge import JudgeClient
from skilleval.judge.choice import scores_verdicts
from skilleval.runner import judgefit
from skilleval.runner.judgecheck import load_pairs

pytestmark = pytest.mark.model

SUITE = """
version: 1
type: capability
model: default
decoding: {max_tokens: 12}
prompts: ["Answer briefly. {{q}}"]
tests:
  - id: capital
    vars: {q: "What is the capital of France?"}
    assert:
      - {type: llm-rubric, value: The answer names Paris.}
"""


def _embedded_judge(home: Path) -> JudgeClient:
    """The embedded judge as a run builds it: it reads rubric verdicts from choice scores."""
    spec = gguf_spec()
    provider = CachingProvider(create_provider(spec, home=home), None)
    return JudgeClient(provider, seed=0, scores=scores_verdicts(spec.provider.capabilities))


REASON = re.compile(r"unqualified judge: fitness \d\.\d\d \[\d\.\d\d, \d\.\d\d\] .* on 3 pairs")


def test_the_embedded_judge_is_unqualified_in_every_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = Path(os.environ["SKILLEVAL_HOME"])
    monkeypatch.chdir(tmp_path)
    judge = _embedded_judge(home)
    try:
        measured = judgefit.judge_fitness(judge, home, seed=0, pairs=load_pairs()[:3])
        key = judgefit.memo_key(judge, 0)
    finally:
        judge.close()
    assert measured.status == "unqualified"  # 3 pairs can never exclude chance
    assert measured.error_rate is not None
    assert measured.outputs == 6
    assert key is not None
    assert key.startswith("gguf:")  # the model file's SHA-256
    judgefit.remember(home, key, measured)

    Path("suite.yaml").write_text(textwrap.dedent(SUITE).lstrip(), encoding="utf-8")
    args = ["run", "suite.yaml", "-o", "r.md", "-o", "r.html", "-o", "r.xml", "--json"]
    code = run_cli(args)
    captured = capsys.readouterr()
    err = captured.err
    # The judge's one grade may be refused on some machine (a small judge can copy the
    # prompt's worked example); the run then reports an error and exits 3, else it passes.
    (record,) = json.loads(captured.out)["records"]
    errored = any(a["status"] == "error" for a in record["asserts"])
    assert code == (3 if errored else 0), err
    assert "judge fitness (measured before): unqualified judge" in err
    assert "[unqualified judge]" in err
    warning = next(x for x in err.splitlines() if x.startswith("warning: unqualified judge"))
    assert REASON.search(warning)
    markdown = Path("r.md").read_text(encoding="utf-8")
    assert "(unqualified judge)" in markdown
    assert REASON.search(markdown.replace("\\", ""))
    html = Path("r.html").read_text(encoding="utf-8")
    assert '<div class="meter unqualified">' in html
    assert REASON.search(html)
    props = {
        p.get("name"): p.get("value")
        for p in ET.fromstring(Path("r.xml").read_text(encoding="utf-8")).iter("property")
    }
    assert REASON.search(props["judge_fitness"] or "")


def test_the_embedded_judge_s_whole_set_measurement_ships_with_skilleval(tmp_path: Path) -> None:
    """The first run on the embedded model reads the shipped measurement (146 calls saved).

    If this fails, the fitness set or a judge prompt changed: measure again with
    `skilleval judge-check` on the whole set and copy its entry from the home's
    judge-fitness.json into suites/judge-fitness.measured.json.
    """
    judge = _embedded_judge(tmp_path)
    try:
        key = judgefit.memo_key(judge, 0)
    finally:
        judge.close()
    assert key is not None
    shipped = judgefit.recall(tmp_path / "empty-home", key)
    assert shipped is not None
    assert shipped.status == "unqualified"
    assert shipped.pairs == 73
