"""``model.gpu_layers`` and the build's instruction sets: what reaches llama.cpp, what a run
records, and what keys the response cache and the prefix store.

No GPU exists where these run: GPU offload is tested by what reaches llama.cpp (the loaded
model's ``n_gpu_layers``) and by the warning a CPU-only build gives.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakellama import skilleval_cmd

from skilleval.engine import llama_build, llama_canary
from skilleval.engine.base import Message, Request
from skilleval.engine.llama import LlamaConfig, LlamaProvider
from skilleval.engine.llama_build import crash_cause, features, rebuild_command
from skilleval.engine.llama_canary import Canary, canary_key
from skilleval.exitcodes import ExitCode

GPU_FLAGS = ("-DGGML_CUDA=on", "-DGGML_METAL=on", "-DGGML_VULKAN=on", "-DGGML_HIP=on")

SUITE = """\
version: 1
model: {{path: default, n_ctx: 512{extra}}}
prompts: ["{{{{q}}}}"]
decoding: {{max_tokens: 4}}
tests:
  - vars: {{q: "Say hi."}}
    assert: [{{type: max-length, value: 1000}}]
"""


@pytest.fixture(autouse=True)
def _warn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU warning is said once per process; each test starts unwarned."""
    monkeypatch.setattr(llama_build, "_warned_gpu", [])


# -- no model needed -----------------------------------------------------------------------


def test_features_are_what_the_system_info_turns_on_in_its_order() -> None:
    info = "CPU : SSE3 = 1 | AVX = 1 | AVX512 = 0 | AMX_INT8 = 1 | LLAMAFILE = 1 | OPENMP = 1 | "
    assert features(info) == ("SSE3", "AVX", "AMX_INT8", "LLAMAFILE", "OPENMP")
    assert features("") == ()


def test_the_cause_names_amx_or_the_missing_instruction_set() -> None:
    flags = ["avx", "avx2", "amx_tile", "amx_int8"]
    cause, amx = crash_cause(("AVX2", "AMX_INT8"), flags, tiles=False)
    assert amx
    assert cause == (
        "the build has AMX compiled in (AMX_INT8 = 1) and the CPU lists amx_tile but the OS "
        "has not enabled AMX tile state"
    )
    cause, amx = crash_cause(("AVX2", "AVX512"), ["avx", "avx2"], tiles=None)
    assert not amx
    assert cause.startswith("the build uses AVX512, which this CPU does not list")
    assert "-DGGML_NATIVE=OFF" in rebuild_command("0.3.36", amx=False)
    assert "-mno-amx-tile" not in rebuild_command("0.3.36", amx=False)


def test_gpu_layers_is_checked_at_load(tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").write_text(SUITE.format(extra=", gpu_layers: -2"))
    done = subprocess.run(
        skilleval_cmd("validate", "suite.yaml"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == ExitCode.INVALID
    assert "suite.yaml:2:" in done.stderr
    assert "'gpu_layers' must be >= -1, not -2" in done.stderr
    assert "Traceback" not in done.stderr


def test_config_keeps_gpu_layers_out_of_its_json_unless_set() -> None:
    assert "gpu_layers" not in LlamaConfig().to_json()
    assert LlamaConfig().n_gpu_layers == 0
    assert LlamaConfig(gpu_layers=-1).to_json()["gpu_layers"] == -1
    assert LlamaConfig(gpu_layers=-1).n_gpu_layers == -1


@pytest.mark.skipif(llama_build.llama_package_dir() is None, reason="llama-cpp-python missing")
def test_the_cache_salt_changes_with_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + bytes(60))
    provider = LlamaProvider(LlamaConfig(path=str(gguf)), tmp_path)
    request = Request(messages=(Message("user", "hi"),))

    def salt_on(system_info: str) -> str:
        monkeypatch.setitem(
            llama_canary._known, canary_key(), Canary("ok", system_info=system_info)
        )
        return provider.cache_salt(request)

    avx2 = salt_on("CPU : AVX2 = 1 | OPENMP = 1 | ")
    avx512 = salt_on("CPU : AVX2 = 1 | AVX512 = 1 | OPENMP = 1 | ")
    assert "build=AVX2,OPENMP;" in avx2
    assert "build=AVX2,AVX512,OPENMP;" in avx512
    assert salt_on("CPU : AVX2 = 1 | OPENMP = 1 | ") == avx2


# -- the real model --------------------------------------------------------------------------


@pytest.fixture
def loaded(tmp_path: Path) -> Iterator[LlamaProvider]:
    provider = LlamaProvider(LlamaConfig(n_ctx=512, gpu_layers=3), tmp_path)
    yield provider
    provider.close()


@pytest.mark.model
def test_gpu_layers_reach_llama_cpp_for_generation_and_embeddings_with_one_warning(
    loaded: LlamaProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    import llama_cpp

    llm = loaded._load()
    assert llm.model_params.n_gpu_layers == 3
    loaded.embed(["a short text"])
    assert loaded._embedder is not None
    assert loaded._embedder._llm.model_params.n_gpu_layers == 3
    assert loaded.engine_info()["gpu_layers"] == 3

    err = capsys.readouterr().err
    if llama_cpp.llama_supports_gpu_offload():
        assert "gpu_layers" not in err
    else:
        assert err.count("warning: model.gpu_layers is 3") == 1  # once, not once per load
        assert "built without a GPU backend, so the model runs on the CPU" in err
        assert all(flag in err for flag in GPU_FLAGS)


@pytest.mark.model
def test_without_gpu_layers_nothing_is_offloaded_and_nothing_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    provider = LlamaProvider(LlamaConfig(n_ctx=512), tmp_path)
    try:
        assert provider._load().model_params.n_gpu_layers == 0
        assert "gpu_layers" not in provider.engine_info()
    finally:
        provider.close()
    assert "warning" not in capsys.readouterr().err


@pytest.mark.model
def test_a_run_records_gpu_layers_and_the_build_and_warns_on_a_cpu_build(tmp_path: Path) -> None:
    import llama_cpp

    (tmp_path / "suite.yaml").write_text(SUITE.format(extra=", gpu_layers: -1"))
    env = {**os.environ, "SKILLEVAL_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        skilleval_cmd("run", "suite.yaml", "--json"),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == ExitCode.OK, done.stderr
    environment = json.loads(done.stdout)["environment"]
    assert environment["model_spec"]["gpu_layers"] == -1
    assert environment["gpu_layers"] == -1
    assert environment["instruction_sets"] == list(
        features(llama_cpp.llama_print_system_info().decode())
    )
    if not llama_cpp.llama_supports_gpu_offload():
        assert "warning: model.gpu_layers is -1" in done.stderr
        assert "-DGGML_CUDA=on" in done.stderr


@pytest.mark.model
def test_the_prefix_store_folder_changes_with_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def folder() -> Path:
        provider = LlamaProvider(LlamaConfig(n_ctx=512), tmp_path)
        try:
            return provider._prefixes().folder
        finally:
            provider.close()

    real = folder()
    assert folder() == real
    monkeypatch.setitem(
        llama_canary._known, canary_key(), Canary("ok", system_info="CPU : AVX2 = 1 | ")
    )
    assert folder() != real
