"""The kernel probe on real files: the embedded model requantised to Q4_K_M and Q4_0 on the
machine (engine/kernel_probe.py, engine/kernel_policy.py). What a Q4_K_M file's kernels do
depends on the build; the tests assert what the probe measured, and skip with the reason when
this build gives the same bits everywhere."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from skilleval.engine.base import Completion, Message, Request
from skilleval.engine.embedded import default_model_path
from skilleval.engine.kernel_policy import PROMPT_GRID
from skilleval.engine.kernel_probe import MEMO_FILE
from skilleval.engine.llama import LlamaConfig, LlamaProvider
from skilleval.errors import ProviderError
from tests.cli.fresh import run_json

pytestmark = pytest.mark.model


@pytest.fixture(scope="session")
def quants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The embedded model (Q4_1) and its requantised Q4_K_M and Q4_0 copies."""
    import llama_cpp

    folder = tmp_path_factory.mktemp("quants")
    source = default_model_path()
    out = {"Q4_1": source}
    for name, ftype in (
        ("Q4_K_M", llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M),
        ("Q4_0", llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0),
    ):
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = ftype
        params.allow_requantize = True
        target = folder / f"smollm-{name}.gguf"
        code = llama_cpp.llama_model_quantize(str(source).encode(), str(target).encode(), params)
        assert code == 0, f"quantizing to {name} failed"
        out[name] = target
    return out


def _kernels(path: Path, home: Path, parallel: int = 1) -> tuple[dict, LlamaProvider]:
    provider = LlamaProvider(LlamaConfig(path=str(path), parallel=parallel), home)
    provider.check()
    return provider.engine_info(), provider


@pytest.fixture(scope="session")
def k_quant(quants: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Q4_K_M file, skipping the test when this build's splits agree for it."""
    info, provider = _kernels(quants["Q4_K_M"], tmp_path_factory.mktemp("probe"))
    provider.close()
    if info["kernels"]["splits"]:
        pytest.skip("this llama.cpp build evaluates Q4_K_M prompts with the same bits in any split")
    return quants["Q4_K_M"]


def test_the_probe_tells_the_quantisations_apart(quants: dict[str, Path], tmp_path: Path) -> None:
    for name in ("Q4_1", "Q4_0"):
        info, provider = _kernels(quants[name], tmp_path / name)
        provider.close()
        assert info["kernels"] == {"splits": True, "batches": True}, name
    info, provider = _kernels(quants["Q4_K_M"], tmp_path / "k")
    provider.close()
    if info["kernels"]["splits"]:
        pytest.skip("this llama.cpp build evaluates Q4_K_M prompts with the same bits in any split")
    # Measured with llama-cpp-python 0.3.36 and weight repacking: splits differ.
    assert info["kernels"]["prompt_grid"] == PROMPT_GRID


def test_the_verdict_is_remembered_sealed_and_measured_again_when_damaged(
    quants: dict[str, Path], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    first, provider = _kernels(quants["Q4_K_M"], tmp_path)
    provider.close()
    memo = tmp_path / MEMO_FILE
    stored = json.loads(memo.read_text())
    (entry,) = stored["entries"].values()
    assert entry["splits"] is first["kernels"]["splits"]
    again, provider = _kernels(quants["Q4_K_M"], tmp_path)
    assert provider._llm is None  # read back: the model was not loaded to know
    provider.close()
    assert again["kernels"] == first["kernels"]
    # An edited verdict (its digest no longer matches) is never used: measured again.
    for entry in stored["entries"].values():
        entry["splits"] = not entry["splits"]
    memo.write_text(json.dumps(stored))
    capfd.readouterr()
    third, provider = _kernels(quants["Q4_K_M"], tmp_path)
    assert provider._llm is not None  # measured again
    provider.close()
    assert third["kernels"] == first["kernels"]
    assert "kernel-probe.json is damaged and was not used" in capfd.readouterr().err


RULES = "You review commit messages. " + "A good subject is short, imperative and lower case. " * 9


def _ask(text: str, **extra: object) -> Request:
    return Request(
        messages=(Message("system", RULES), Message("user", text)), max_tokens=24, **extra
    )


ASKS = [
    _ask("Fix the CSV parser."),
    _ask("Is 'fix: typo' a good subject?", choices=("yes", "no", "maybe")),
    # Each token's log-probability, unrounded: the finest view of the logits there is.
    _ask("Fix the CSV parser.", logprobs=True),
]
WARM = _ask("Say whether 'Add retries' is imperative, please, in one word.")


def _key(answer: Completion | ProviderError) -> object:
    if isinstance(answer, ProviderError):
        return str(answer)
    return (answer.text, answer.completion_tokens, answer.choice_scores, answer.token_logprobs)


def test_k_quant_replies_do_not_depend_on_what_was_evaluated_or_stored_before(
    k_quant: Path, tmp_path: Path
) -> None:
    fresh = []
    for i, ask in enumerate(ASKS):  # each evaluated whole, in a provider and home of its own
        cold = LlamaProvider(LlamaConfig(path=str(k_quant)), tmp_path / f"cold{i}")
        try:
            fresh.append(_key(cold.complete(ask)))
            tokens = cold.template().tokens
            asked, warm = tokens(ask.messages), tokens(WARM.messages)
        finally:
            cold.close()
    shared = next(i for i, (a, b) in enumerate(zip(asked, warm, strict=False)) if a != b)
    assert shared % PROMPT_GRID
    assert shared > PROMPT_GRID

    home = tmp_path / "warm"
    warmed = LlamaProvider(LlamaConfig(path=str(k_quant)), home)
    try:
        warmed.complete(WARM)  # the KV state now holds the shared prefix and more
        assert [_key(warmed.complete(ask)) for ask in ASKS] == fresh
        assert [_key(warmed.complete(ask)) for ask in ASKS] == fresh  # the whole prompt cached
    finally:
        warmed.close()
    assert list(home.glob("kv/*/*.kv")), "a shared prefix was stored"
    restored = LlamaProvider(LlamaConfig(path=str(k_quant)), home)
    try:
        assert [_key(restored.complete(ask)) for ask in ASKS] == fresh
        assert restored._prefixes().loaded >= 1
    finally:
        restored.close()


SUITE = """
version: 1
model: {{provider: gguf, path: {path}}}
decoding: {{max_tokens: 20, seed: 3}}
prompts: ["You answer in one short sentence. {{{{q}}}}"]
tests:
  - id: capital
    vars: {{q: "What is the capital of France?"}}
  - id: colour
    vars: {{q: "What colour is the sky on a clear day?"}}
  - id: count
    vars: {{q: "Count from one to five."}}
  - id: verb
    vars: {{q: "Give one verb that means to run fast."}}
"""


def _run(folder: Path, model: Path, jobs: int) -> tuple[dict, str]:
    folder.mkdir()
    suite = folder / "suite.yaml"
    suite.write_text(textwrap.dedent(SUITE.format(path=model)), encoding="utf-8")
    return run_json(["run", str(suite), "--no-cache", "--jobs", str(jobs)], folder / "home")


def _outputs(run: dict) -> dict[object, str]:
    return {(r["test_id"], r["arm"], r["trial"]): r["output"] for r in run["records"]}


def test_jobs_on_a_k_quant_warn_and_decode_one_at_a_time(k_quant: Path, tmp_path: Path) -> None:
    single, _ = _run(tmp_path / "one", k_quant, 1)
    wide, err = _run(tmp_path / "four", k_quant, 4)
    assert _outputs(wide) == _outputs(single)
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, err
    assert k_quant.name in warnings[0]
    assert "decoded one at a time instead of 4" in warnings[0]
    environment = wide["environment"]
    assert environment["batch_width"] == 1
    assert environment["batch_width_reason"].startswith("4 asked")
    assert environment["kernels"]["splits"] is False
    assert environment["kernels"]["prompt_grid"] == PROMPT_GRID
    assert "batch_width_reason" not in single["environment"]


def test_the_embedded_model_keeps_batching(quants: dict[str, Path], tmp_path: Path) -> None:
    info, provider = _kernels(quants["Q4_1"], tmp_path, parallel=3)
    provider.close()
    assert info["batch_width"] == 3
    assert "batch_width_reason" not in info
    assert "prompt_grid" not in info["kernels"]
