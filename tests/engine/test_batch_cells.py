"""KV memory sized to the work: the batched context holds as many cells per sequence as the
requests need, and is made larger only when one needs more (docs/engine.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skilleval.engine.base import Completion, Message, Request
from skilleval.engine.llama_batched import CELL_STEP, MIN_CELLS, cells_for
from skilleval.errors import ProviderError


def test_the_first_context_holds_the_least_that_fits() -> None:
    assert cells_for(0, 0, 4096) == MIN_CELLS
    assert cells_for(300, 0, 4096) == MIN_CELLS
    assert cells_for(700, 0, 4096) == 768


def test_a_context_that_fits_is_kept() -> None:
    assert cells_for(500, 1024, 4096) == 1024
    assert cells_for(1024, 1024, 4096) == 1024


def test_a_larger_need_at_least_doubles_the_cells_up_to_n_ctx() -> None:
    assert cells_for(600, 512, 4096) == 1024
    assert cells_for(3000, 1024, 4096) == 3072
    assert cells_for(3000, 2048, 4096) == 4096
    assert cells_for(9000, 512, 4096) == 4096
    assert all(cells_for(n, 512, 4096) % CELL_STEP == 0 for n in range(0, 5000, 37))


def ask(text: str, max_tokens: int) -> Request:
    return Request(
        messages=(Message("system", "Answer briefly."), Message("user", text)),
        max_tokens=max_tokens,
    )


def key(answer: Completion | ProviderError) -> object:
    if isinstance(answer, ProviderError):
        return str(answer)
    return (answer.text, answer.finish_reason, answer.completion_tokens)


@pytest.mark.model
def test_a_request_that_needs_more_cells_grows_the_context_and_replies_as_one_at_a_time(
    tmp_path: Path,
) -> None:
    from skilleval.engine.llama import LlamaConfig, LlamaProvider

    short = [ask("Name a colour.", 8), ask("What is 2+2?", 4)]
    # Its prompt and budget need more than the first context's cells.
    long = [ask("Describe the sea. " * 120, 16), ask("Name a fruit.", 8)]
    wide = LlamaProvider(LlamaConfig(parallel=2), tmp_path / "wide")
    one = LlamaProvider(LlamaConfig(parallel=1), tmp_path / "one")
    try:
        first = wide.complete_batch(short)
        assert wide._lanes.cells == MIN_CELLS
        second = wide.complete_batch(long)
        assert wide._lanes.cells > MIN_CELLS
        expected = [one.complete(r) for r in [*short, *long]]
        assert [key(a) for a in [*first, *second]] == [key(a) for a in expected]
    finally:
        wide.close()
        one.close()
