"""skilleval's agent and tool-call checks reach promptfoo's verdicts on the same cases.

``tests/data/promptfoo-cases/agent-types/promptfooconfig.yaml`` holds each case: an assertion, and
in the test's metadata the reply's text, the agent's steps and the skills the router chose.
``promptfoo-verdicts.json`` beside it is what promptfoo 0.123.1's own ``runAssertion``
decided on them (``tools/promptfoo_assertion_cases.py``). Here the config is loaded as any
promptfoo config is, each case graded with skilleval on the same reply, steps and skills, and
each verdict must be promptfoo's; for ``tool-call-f1`` and ``perplexity-score`` the score too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skilleval.api import Stats
from skilleval.runner.grade import Subject, grade
from skilleval.suite.load import Overrides, load_suite
from skilleval.trajectory import Step

FOLDER = Path(__file__).resolve().parent.parent / "data" / "promptfoo-cases" / "agent-types"
PINNED: list[dict[str, Any]] = json.loads(
    (FOLDER / "promptfoo-verdicts.json").read_text(encoding="utf-8")
)["results"]


@pytest.fixture(scope="module")
def cases() -> Any:
    suite, _ = load_suite(FOLDER / "promptfooconfig.yaml", Overrides(entry_points=False))
    return suite.tests


def steps_of(written: list[dict[str, Any]] | None) -> tuple[Step, ...] | None:
    """The metadata's steps as the agent loop records them."""
    if written is None:
        return None
    out = []
    for i, step in enumerate(written):
        if "tool" in step:
            out.append(
                Step(
                    index=i,
                    turn=0,
                    kind="tool",
                    tool=step["tool"],
                    arguments=step.get("args"),
                    ran=not step.get("rejected", False),
                    error="invalid arguments" if step.get("rejected") else None,
                )
            )
        elif "answer" in step:
            out.append(Step(index=i, turn=0, kind="final", answer=step["answer"]))
        else:
            out.append(Step(index=i, turn=0, kind="invalid", reply="???"))
    return tuple(out)


def test_the_cases_are_pinned() -> None:
    types = {a["type"].removeprefix("not-") for row in PINNED for a in row["asserts"]}
    assert {
        "trajectory:tool-used",
        "trajectory:step-count",
        "trajectory:tool-sequence",
        "trajectory:tool-args-match",
        "skill-used",
        "tool-call-f1",
        "is-valid-openai-tools-call",
        "is-valid-openai-function-call",
        "is-valid-function-call",
        "perplexity",
        "perplexity-score",
    } <= types
    assert all("error" not in a for row in PINNED for a in row["asserts"])


@pytest.mark.parametrize("index", range(len(PINNED)), ids=[r["description"] for r in PINNED])
def test_same_verdict_as_promptfoo(index: int, cases: Any) -> None:
    row = PINNED[index]
    test = cases[index]
    meta = test.metadata
    skills = meta.get("skills")
    subject = Subject(
        output=meta.get("output", ""),
        prompt="",
        messages=(),
        stats=Stats(),
        arm="default",
        trial=0,
        trajectory=steps_of(meta.get("steps")),
        skills=None if skills is None else tuple(skills),
        logprobs=tuple(meta["logprobs"]) if "logprobs" in meta else None,
    )
    graded = grade(test, subject)
    ours = [(r.type, r.status) for r in graded.asserts]
    theirs = [(a["type"], "pass" if a["pass"] else "fail") for a in row["asserts"]]
    reasons = "\n".join(f"  {r.type}: {r.status}: {r.reason}" for r in graded.asserts)
    assert ours == theirs, f"{row['description']}\n{reasons}"
    for result, pinned in zip(graded.asserts, row["asserts"], strict=True):
        if result.type in ("tool-call-f1", "perplexity-score"):
            assert result.score == pytest.approx(pinned["score"]), reasons


def test_a_test_without_steps_is_an_error_as_without_a_trace(cases: Any) -> None:
    test = next(t for t in cases if t.asserts[0].type == "trajectory:tool-used")
    subject = Subject(output="", prompt="", messages=(), stats=Stats(), arm="on", trial=0)
    (result,) = grade(test, subject).asserts
    assert result.status == "error"
    assert "no trajectory" in result.reason


def test_a_test_that_was_not_routed_is_an_error_for_skill_used(cases: Any) -> None:
    test = next(t for t in cases if t.asserts[0].type == "skill-used")
    subject = Subject(output="", prompt="", messages=(), stats=Stats(), arm="on", trial=0)
    (result,) = grade(test, subject).asserts
    assert result.status == "error"
    assert "not routed" in result.reason
