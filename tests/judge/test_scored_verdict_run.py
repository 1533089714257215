"""A run whose judge scores choices reads its ``llm-rubric`` verdicts from the score scale.

The judge is a plugin provider that declares ``Capabilities(scores=True, measured=True)``, as
the built-in model does. It scores the digits 1..5 by whether the output names Paris, and
logs every request it is sent. From the outside: the suite file in, the results document and
the request log out. A failing verdict gets a reason written after it; a passing one does
not; a provider that declares ``scores`` without being ``measured`` (as the scripted model
does) keeps the written ``{reason, score, pass}`` reply.
"""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli
from skilleval.results.load import validate_document

GRADER = '''
import json
import math
from skilleval import Capabilities, provider
from skilleval.engine.base import Completion, ModelIdentity

LOG = LOG_PATH
# Paris: mostly 5, some 4. Anything else: mostly 1, some 2.
GOOD = {"1": 0.01, "2": 0.01, "3": 0.03, "4": 0.15, "5": 0.80}
BAD = {"1": 0.70, "2": 0.20, "3": 0.05, "4": 0.03, "5": 0.02}


class Grader:
    max_concurrency = 1

    def identity(self):
        return ModelIdentity(kind="grader", name="grader")

    def complete(self, request):
        schema = request.json_schema or {}
        kind = "choice" if request.choices else ",".join(schema.get("properties", {}))
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(json.dumps([kind, [m.role for m in request.messages]]) + "\\n")
        output = request.messages[1].content.rsplit("OUTPUT:\\n", 1)[-1] if len(
            request.messages) > 1 else ""
        good = "Paris" in output
        if request.choices:
            table = GOOD if good else BAD
            scores = {c: math.log(table[c]) for c in request.choices} if DECLARED_SCORES else None
            return Completion(text=max(request.choices, key=table.get), choice_scores=scores)
        props = schema.get("properties", {})
        if "score" in props:
            reply = {"reason": "written verdict", "score": 5 if good else 1, "pass": good}
        else:
            reply = {"reason": "It names another city."}
        return Completion(text=json.dumps(reply), completion_tokens=9)

    def cache_salt(self, request):
        return ""

    def close(self):
        pass


@provider("grader", capabilities=Capabilities(DECLARED))
def grader(config, context):
    """A judge that scores the score scale's digits by whether the output names Paris."""
    return Grader()
'''

SUITE = """\
version: 1
type: capability
plugins: [plugins]
model:
  provider: scripted
  responses:
    - {id: right, output: "The capital is Paris."}
    - {id: wrong, output: "The capital is Lyon."}
judge: grader
tests:
  - id: right
    prompt: Capital of France?
    assert: [{type: llm-rubric, value: The answer names Paris.}]
  - id: wrong
    prompt: Capital of France?
    assert: [{type: llm-rubric, value: The answer names Paris.}]
"""


def _run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], declared: str
) -> tuple[dict[str, Any], list[list[Any]]]:
    folder = tmp_path / "s"
    (folder / "plugins").mkdir(parents=True)
    source = GRADER.replace("LOG_PATH", repr(str(tmp_path / "requests.jsonl")))
    source = source.replace("DECLARED_SCORES", str("scores=True" in declared))
    source = source.replace("DECLARED", declared)
    (folder / "plugins" / "grader.py").write_text(source, encoding="utf-8")
    (folder / "suite.yaml").write_text(textwrap.dedent(SUITE), encoding="utf-8")
    args = [
        "run",
        str(folder / "suite.yaml"),
        "--no-entry-points",
        "--no-cache",
        "--no-judge-check",
        "--json",
    ]
    run_cli(args)
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    lines = (tmp_path / "requests.jsonl").read_text(encoding="utf-8").splitlines()
    return doc, [json.loads(line) for line in lines]


def _assert_of(doc: dict[str, Any], test_id: str) -> dict[str, Any]:
    [record] = [r for r in doc["records"] if r["test_id"] == test_id]
    [verdict] = record["asserts"]
    return dict(verdict)


def test_a_judge_that_scores_choices_reads_the_verdict_and_writes_a_reason_only_on_a_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc, requests = _run(tmp_path, capsys, "scores=True, measured=True")
    assert validate_document(doc) == []
    assert doc["judge"]["rubric_verdict"] == "scored-expectation"

    right, wrong = _assert_of(doc, "right"), _assert_of(doc, "wrong")
    good = 0.01 * 1 + 0.01 * 2 + 0.03 * 3 + 0.15 * 4 + 0.80 * 5
    bad = 0.70 * 1 + 0.20 * 2 + 0.05 * 3 + 0.03 * 4 + 0.02 * 5
    assert right["status"] == "pass"
    assert math.isclose(right["score"], (good - 1) / 4, abs_tol=1e-6)
    assert right["details"]["judge_score"] == 5  # the likeliest digit
    assert "reason" not in right["details"]["judge_reply"]
    assert wrong["status"] == "fail"
    assert math.isclose(wrong["score"], (bad - 1) / 4, abs_tol=1e-6)
    assert wrong["details"]["judge_reply"]["reason"] == "It names another city."
    assert wrong["reason"].endswith(": It names another city.")
    assert set(wrong["details"]["judge_probabilities"]) == {"1", "2", "3", "4", "5"}

    # One choice request per verdict, and one reason request, after the failing verdict,
    # that carries the verdict's conversation with the likeliest digit as the judge's reply.
    kinds = [kind for kind, _ in requests]
    assert sorted(kinds) == ["choice", "choice", "reason"]
    [roles] = [roles for kind, roles in requests if kind == "reason"]
    assert roles == ["system", "user", "assistant", "user"]


def test_a_judge_that_declares_scores_but_is_not_a_model_keeps_the_written_reply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc, requests = _run(tmp_path, capsys, "scores=True")
    assert validate_document(doc) == []
    assert doc["judge"]["rubric_verdict"] == "written"
    assert [kind for kind, _ in requests] == ["reason,score,pass"] * 2
    assert _assert_of(doc, "right")["status"] == "pass"
    wrong = _assert_of(doc, "wrong")
    assert wrong["status"] == "fail"
    assert wrong["details"]["judge_reply"]["reason"] == "written verdict"
