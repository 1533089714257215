"""Generation jobs reach a batching model in chunks of its width, in plan order, and give
the same records as one-at-a-time generation."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence
from pathlib import Path

from fakes import FakeProvider

from skilleval.engine.base import Completion, Request
from skilleval.errors import ProviderError
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
