"""A provider's declared ``scores`` and ``logprobs`` capabilities decide what the run asks
of it and says.

A third-party provider that declares ``Capabilities(scores=True)`` is asked for content-free
calibration and for token log-probabilities, as the built-in model is; one that declares only
``logprobs`` (as an OpenAI-compatible server does) is asked for token log-probabilities only;
one that declares neither is asked for neither, and the run says why its figures are missing.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli

RANKER = '''
import json
from skilleval import Capabilities, provider
from skilleval.engine.base import Completion, ModelIdentity

LOG = LOG_PATH
SCORES = "scores" in "DECLARED"
LOGPROBS = bool("DECLARED")


class Ranker:
    max_concurrency = 1

    def identity(self):
        return ModelIdentity(kind="ranker", name="ranker")

    def complete(self, request):
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(json.dumps([request.test_id, request.logprobs]) + "\\n")
        if request.choices:
            skill = "parser" in request.messages[-1].content
            chosen = request.choices[0] if skill else request.choices[-1]
            ranked = {c: (-0.1 if c == chosen else -2.0) for c in request.choices}
            return Completion(text=chosen, choice_scores=ranked if SCORES else None)
        logprobs = (-0.1, -0.2) if LOGPROBS and request.logprobs else None
        return Completion(text="Fix the parser", token_logprobs=logprobs)

    def cache_salt(self, request):
        return ""

    def close(self):
        pass


@provider("ranker", capabilities=Capabilities(DECLARED))
def ranker(config, context):
    """A router that ranks its options, when it declares that it can."""
    return Ranker()
'''

SUITE = """\
version: 1
type: capability
plugins: [plugins]
skill: skill/SKILL.md
model: ranker
arms: [on]
trigger: {calibrate: true}
tests:
  - id: fix
    prompt: Commit message for the parser fix
    should_trigger: true
    assert: [{type: perplexity}]
  - {id: colour, prompt: Name a colour, should_trigger: false}
"""


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], declared: str) -> dict[str, Any]:
    folder = tmp_path / "s"
    (folder / "plugins").mkdir(parents=True)
    (folder / "skill").mkdir()
    (folder / "skill" / "SKILL.md").write_text(
        "---\nname: commit-message\ndescription: Write a commit message.\n---\n\nOne line.\n",
        encoding="utf-8",
    )
    source = RANKER.replace("LOG_PATH", repr(str(tmp_path / "requests.jsonl")))
    source = source.replace("DECLARED", declared)
    (folder / "plugins" / "ranker.py").write_text(source, encoding="utf-8")
    (folder / "suite.yaml").write_text(textwrap.dedent(SUITE), encoding="utf-8")
    args = ["run", str(folder / "suite.yaml"), "--no-entry-points", "--no-cache", "--json"]
    run_cli(args)
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def _requests(tmp_path: Path) -> list[tuple[str, bool]]:
    lines = (tmp_path / "requests.jsonl").read_text(encoding="utf-8").splitlines()
    return [(str(t), bool(lp)) for t, lp in map(json.loads, lines)]


def test_a_plugin_provider_that_declares_scores_is_calibrated_and_asked_for_logprobs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _run(tmp_path, capsys, "scores=True")
    asked = _requests(tmp_path)
    assert sum(test_id == "(content-free)" for test_id, _ in asked) == 3
    assert ("fix", True) in asked
    trigger = doc["trigger"]
    assert trigger["auroc"]["value"] == 1.0
    assert trigger["calibrated"]["reason"] is None
    assert trigger["calibrated"]["auroc"]["value"] == 1.0
    [fix] = [r for r in doc["records"] if r["test_id"] == "fix"]
    assert fix["asserts"][0]["status"] == "pass"


def test_a_plugin_provider_without_scores_is_asked_for_neither(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _run(tmp_path, capsys, "")
    asked = _requests(tmp_path)
    assert not any(test_id == "(content-free)" for test_id, _ in asked)
    assert not any(logprobs for _, logprobs in asked)
    trigger = doc["trigger"]
    assert trigger["auroc"]["reason"] == (
        "the router gave no scores (its provider exposes no log-probabilities)"
    )
    assert trigger["calibrated"]["reason"] == "the router gives no score for each option"
    [fix] = [r for r in doc["records"] if r["test_id"] == "fix"]
    assert fix["asserts"][0]["status"] == "error"
    assert "log-probabilities" in fix["asserts"][0]["reason"]


def test_a_plugin_provider_with_token_logprobs_only_is_asked_for_them_and_not_calibrated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _run(tmp_path, capsys, "logprobs=True")
    asked = _requests(tmp_path)
    assert not any(test_id == "(content-free)" for test_id, _ in asked)
    assert ("fix", True) in asked
    assert doc["trigger"]["calibrated"]["reason"] == "the router gives no score for each option"
    [fix] = [r for r in doc["records"] if r["test_id"] == "fix"]
    assert fix["asserts"][0]["status"] == "pass"
