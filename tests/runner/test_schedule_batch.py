"""Generation jobs reach a batching model in chunks of its width, in plan order, and give
the same records as one-at-a-time generation; a judge on a model that joins concurrent calls
grades while generation goes on."""

from __future__ import annotations

import os
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from fakes import FakeProvider, GraderFake

from skilleval.engine.base import Completion, Request
from skilleval.errors import ProviderError
from skilleval.results.records import Record
from skilleval.runner import schedule
from skilleval.runner.options import RunOptions
from skilleval.runner.run import run_suite
from skilleval.suite.load import Overrides, load_suite

SUITE = """
version: 1
type: capability
model: {provider: scripted, default: "x"}
prompts: ["say {{n}}"]
tests:
""" + "".join(
    f"""  - id: t{n}
    vars: {{n: "{n}"}}
    assert: [{{type: contains, value: "{n}"}}]
"""
    for n in range(7)
)


class Batching(FakeProvider):
    """Answers "reply to <prompt>"; fails the prompt 'say 3'; records its batches."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.batch_width = width
        self.batches: list[list[str]] = []

    def reply(self, request: Request) -> Completion:
        prompt = request.messages[-1].content
        if prompt == "say 3":
            raise ProviderError("the model refused")
        return Completion(text=f"reply to {prompt}", completion_tokens=3, latency_ms=1.0)

    def complete_batch(self, requests: Sequence[Request]) -> list[Completion | ProviderError]:
        self.batches.append([r.messages[-1].content for r in requests])
        out: list[Completion | ProviderError] = []
        for request in requests:
            try:
                out.append(self.complete(request))
            except ProviderError as exc:
                out.append(exc)
        return out


def run(tmp_path: Path, provider: FakeProvider) -> list[tuple[str, str, str | None]]:
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(SUITE).lstrip(), encoding="utf-8")
    suite, _ = load_suite(path, Overrides())
    home = Path(os.environ["SKILLEVAL_HOME"])
    outcome = run_suite(suite, RunOptions(home=home, provider=provider, use_cache=False))
    return [(r.test_id, r.output or "", r.error) for r in outcome.records]


def test_batches_follow_the_plan_in_chunks_and_match_one_at_a_time(tmp_path: Path) -> None:
    wide = Batching(2)
    batched = run(tmp_path, wide)
    size = 2 * schedule.CHUNK
    prompts = [f"say {n}" for n in range(7)]
    assert wide.batches == [prompts[i : i + size] for i in range(0, 7, size)]
    narrow = Batching(1)
    assert run(tmp_path, narrow) == batched
    assert narrow.batches == []
    assert ("t3", "", "the model refused") in batched


def judged_suite(count: int, skill: str = "") -> str:
    """A suite of ``count`` tests, each graded by the judge (with ``skill``: its line)."""
    head = "version: 1\ntype: capability\n" + (f"skill: {skill}\n" if skill else "")
    head += 'model: {provider: scripted, default: "x"}\nprompts: ["say {{n}}"]\ntests:\n'
    return head + "".join(
        f"""  - id: t{n}
    vars: {{n: "{n}"}}
    assert: [{{type: llm-rubric, value: "Says {n}."}}]
"""
        for n in range(count)
    )


JUDGED = judged_suite(16)


class Joining(GraderFake):
    """A model that grades its own replies and, when ``width`` > 1, decodes calls from
    several threads together, as the in-process model does under batching; it logs the
    purpose of each call as it starts, and each generation takes a little while."""

    def __init__(self, width: int) -> None:
        super().__init__(lambda output: int(output.rsplit(" ", 1)[-1]) % 2 == 0)
        self.batch_width = width
        self.max_concurrency = 2 * width
        self.log: list[str] = []
        self._lock = threading.Lock()

    def reply(self, request: Request) -> Completion:
        with self._lock:
            self.log.append(request.purpose)
        if request.purpose != "generate":
            return super().reply(request)
        time.sleep(0.02)
        said = request.messages[-1].content.removeprefix("say ")
        return Completion(text=f"I say {said}", prompt_tokens=3, completion_tokens=3)

    def complete_batch(self, requests: Sequence[Request]) -> list[Completion | ProviderError]:
        return [self.complete(request) for request in requests]


def run_judged(tmp_path: Path, provider: Joining, text: str) -> list[Record]:
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    suite, _ = load_suite(path, Overrides())
    home = Path(os.environ["SKILLEVAL_HOME"])
    # No judge-fitness check: the log holds the run's own calls only.
    options = RunOptions(home=home, provider=provider, use_cache=False, judge_check=False)
    return list(run_suite(suite, options).records)


def judged(tmp_path: Path, provider: Joining) -> list[tuple[str, str, str]]:
    records = run_judged(tmp_path, provider, JUDGED)
    return sorted((r.test_id, r.output, str(r.status)) for r in records)


def test_a_judge_on_a_joining_model_grades_while_generation_goes_on(tmp_path: Path) -> None:
    joining = Joining(2)
    overlapped = judged(tmp_path, joining)
    last_generation = max(i for i, p in enumerate(joining.log) if p == "generate")
    assert joining.log.index("judge") < last_generation
    # One call at a time, grading waits for the last generation (so judge calls that share
    # a rubric run back to back), and the verdicts are the same.
    single = Joining(1)
    assert judged(tmp_path, single) == overlapped
    assert single.log == ["generate"] * 16 + ["judge"] * 16
    assert [status for _, _, status in overlapped] == ["pass", "fail"] * 8


SKILLED = judged_suite(8, skill="skill/SKILL.md")


class Arms(Joining):
    """Logs each generation call's test and arm as it starts."""

    def __init__(self, width: int) -> None:
        super().__init__(width)
        self.asked: list[tuple[str, str]] = []

    def reply(self, request: Request) -> Completion:
        if request.purpose == "generate":
            with self._lock:
                self.asked.append((request.test_id or "", request.arm or ""))
        return super().reply(request)


def skilled(tmp_path: Path, provider: Arms) -> list[tuple[str, str, str]]:
    skill = tmp_path / "skill" / "SKILL.md"
    skill.parent.mkdir(exist_ok=True)
    skill.write_text("---\nname: sayer\ndescription: Says numbers.\n---\nSay it.\n", "utf-8")
    records = run_judged(tmp_path, provider, SKILLED)
    return sorted((f"{r.test_id}/{r.arm}", r.output, str(r.status)) for r in records)


def test_a_joining_model_is_asked_each_tests_arms_together(tmp_path: Path) -> None:
    # One call at a time, arm by arm: each arm's shared prefix stays in the one KV state.
    single = Arms(1)
    one_at_a_time = skilled(tmp_path, single)
    arms = sorted({arm for _, arm in single.asked})
    assert len(arms) == 2
    assert [arm for _, arm in single.asked] == [single.asked[0][1]] * 8 + [single.asked[8][1]] * 8
    # A joining model holds several prompts at once: a test's arms are asked together, so
    # the judge calls grading them come close together too. Threads start the calls, so
    # neighbours may swap, but never by as much as an arm's length.
    joining = Arms(2)
    assert skilled(tmp_path, joining) == one_at_a_time
    assert sorted(joining.asked) == sorted(single.asked)
    where = {call: index for index, call in enumerate(joining.asked)}
    for n in range(8):
        assert abs(where[(f"t{n}", arms[0])] - where[(f"t{n}", arms[1])]) < joining.max_concurrency
