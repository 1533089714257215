"""Fakes shared by the tests: one provider base, and the SKILL.md text several tests use.

Import them as ``from fakes import FakeProvider, COMMIT_SKILL`` (``tests/`` is on the path).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from skilleval.engine.base import Completion, ModelIdentity, Request

COMMIT_SKILL = """
---
name: commit-message
description: Write a Conventional Commits message for a described code change.
---

Reply with one line: type(scope): summary.
"""
"""A small real skill: the one the commit-message example is built around."""


class FakeProvider:
    """A provider that answers from a queue of canned replies and records every request.

    Each reply is a :class:`Completion`, an exception to raise, a raw string, a
    ``(text, finish_reason)`` pair, or any other JSON-able value (sent as JSON). When the
    queue is empty, ``default`` is the reply. Subclasses override :meth:`reply` instead.
    """

    max_concurrency = 1
    name = "fake"
    completion_tokens: int | None = None
    """Tokens counted for each reply; None counts one per four characters."""

    def __init__(self, replies: Iterable[Any] = (), *, default: Any = None) -> None:
        self.replies = list(replies)
        self.default = default
        self.requests: list[Request] = []

    def identity(self) -> ModelIdentity:
        return ModelIdentity(kind="fake", name=self.name)

    def complete(self, request: Request) -> Completion:
        self.requests.append(request)
        return self.reply(request)

    def reply(self, request: Request) -> Completion:
        if not self.replies and self.default is None:
            raise AssertionError(f"the fake provider has no reply left for {request.test_id!r}")
        reply = self.replies.pop(0) if self.replies else self.default
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, Completion):
            return reply
        text, finish = reply if isinstance(reply, tuple) else (reply, "stop")
        if not isinstance(text, str):
            text = json.dumps(text)
        return Completion(
            text=text,
            finish_reason=finish,
            prompt_tokens=10,
            completion_tokens=self.completion_tokens
            if self.completion_tokens is not None
            else len(text) // 4,
            latency_ms=1.0,
        )

    def cache_salt(self, request: Request) -> str:
        return ""

    def close(self) -> None:
        pass


class GraderFake(FakeProvider):
    """A judge model that grades by a rule on the output, in whatever reply shape is asked.

    ``verdict(output)`` says whether an output passes: True gives score 5, pass and TRUE
    verdicts; False gives score 1, fail and FALSE. Used to measure judge fitness without a
    model: an oracle (``output in good_outputs``) is qualified, a constant one is not.
    """

    name = "grader-fake"

    def __init__(self, verdict: Any, *, name: str | None = None) -> None:
        super().__init__()
        self.verdict = verdict
        if name is not None:
            self.name = name

    def reply(self, request: Request) -> Completion:
        output = request.messages[-1].content.rsplit("OUTPUT:\n", 1)[-1]
        good = bool(self.verdict(output))
        props = (request.json_schema or {}).get("properties", {})
        reply: dict[str, Any]
        if "verdicts" in props:
            n = len(props["verdicts"]["prefixItems"])
            truth = "TRUE" if good else "FALSE"
            reply = {
                "verdicts": [
                    {"id": i, "reason": "checked", "verdict": truth} for i in range(1, n + 1)
                ]
            }
        else:
            reply = {"reason": "checked", "score": 5 if good else 1, "pass": good}
            if "checks" in props:
                n = len(props["checks"]["prefixItems"])
                reply["checks"] = [
                    {"id": i, "pass": good, "notes": "checked"} for i in range(1, n + 1)
                ]
        text = json.dumps(reply)
        return Completion(text=text, prompt_tokens=10, completion_tokens=len(text) // 4)


def routed(scores: Mapping[str, float]) -> Completion:
    """A router's reply to a constrained choice: the best-scoring option, with every score.

    The llama provider scores each option by log-probability; this is its shape, so the
    skill margin, the AUROC and calibration can be scripted.
    """
    return Completion(
        text=max(scores, key=lambda k: scores[k]), choice_scores=dict(scores), prompt_tokens=10
    )


class ScoringRouter(FakeProvider):
    """Answers routing requests from per-request scores: ``scores[test_id]``, else ``fallback``;
    anything else with ``ok``.

    ``pick`` overrides the chosen label for a test id, for a router whose choice disagrees
    with its own ranking (as one sampling from the scores may).
    """

    name = "scoring-router"

    def __init__(
        self,
        scores: Mapping[str, Mapping[str, float]],
        fallback: Mapping[str, float] | None = None,
        pick: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(default="ok")
        self.scores = scores
        self.fallback = fallback
        self.pick = pick or {}

    def reply(self, request: Request) -> Completion:
        if not request.choices:
            return super().reply(request)
        given = self.scores.get(request.test_id, self.fallback)
        if given is None:
            raise AssertionError(f"no scores for {request.test_id!r}")
        reply = routed({c: given[c] for c in request.choices})
        if request.test_id in self.pick:
            return Completion(self.pick[request.test_id], choice_scores=reply.choice_scores)
        return reply
