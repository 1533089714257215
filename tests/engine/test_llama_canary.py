"""The canary, from outside: ``skilleval run`` against a llama.cpp that crashes on purpose.

A stand-in ``llama_cpp`` package (``tests/fakellama.py``) is put first on PYTHONPATH; its
``Llama`` kills the process that decodes with it by a real signal. The run must stop with one
line naming the signal, the likely cause and the rebuild command, exit 6, print no traceback,
and remember the verdict so the next run answers without starting a child. The healthy path
runs the real library.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from fakellama import VERSION, FakeLlama, make_fake_llama, skilleval_cmd

from skilleval.engine import llama_canary
from skilleval.engine.llama_build import _NEEDS, cpu_flags, features
from skilleval.exitcodes import ExitCode
from skilleval.util.memo import read_memo, remember

SUITE = """\
version: 1
model: {path: m.gguf, n_ctx: 256}
prompts: ["{{q}}"]
tests:
  - vars: {q: "hello"}
    assert: [{type: max-length, value: 1000}]
"""

AMX_INFO = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | OPENMP = 1 | "
AMX_FLAGS = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "suite.yaml").write_text(SUITE)
    # A GGUF by its magic only: the stand-in llama_cpp never reads it.
    (folder / "m.gguf").write_bytes(b"GGUF" + bytes(60))
    return folder / "suite.yaml"


def _run(fake: FakeLlama, home: Path, suite: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        skilleval_cmd("run", str(suite)),
        cwd=suite.parent,
        env=fake.env(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _memo(home: Path) -> dict[str, dict[str, object]]:
    """The canary's entries, read as every memo is (util/memo.py checks the file's seal)."""
    memo: dict[str, dict[str, object]] = read_memo(home / llama_canary.MEMO_FILE)
    assert memo, "the canary kept no verdict"
    return memo


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr
    assert "Fatal Python error" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert done.stdout == ""
    return lines[0]


def test_a_library_that_segfaults_in_the_canary_stops_the_run_with_one_line_and_exit_6(
    tmp_path: Path, suite: Path
) -> None:
    fake = make_fake_llama(tmp_path / "fake", "segv", AMX_INFO)
    home = tmp_path / "home"

    first = _run(fake, home, suite)

    assert first.returncode == ExitCode.CONFIG == 6
    line = _one_line(first)
    assert line.startswith("error: llama.cpp crashed with SIGSEGV ")
    assert "while decoding a test prompt" in line
    assert "AMX_INT8 = 1" in line
    assert (
        f"CMAKE_ARGS=\"-DCMAKE_C_FLAGS='{AMX_FLAGS}' -DCMAKE_CXX_FLAGS='{AMX_FLAGS}'\" "
        "pip install --no-cache-dir --force-reinstall --no-binary llama-cpp-python "
        f"'llama-cpp-python=={VERSION}'"
    ) in line
    assert fake.imports() == 1  # the child imported it; the run itself never did
    assert not (home / "runs").exists()  # nothing ran
    (entry,) = _memo(home).values()
    assert entry["verdict"] == "crashed"
    assert entry["signal"] == "SIGSEGV"

    second = _run(fake, home, suite)

    assert second.returncode == ExitCode.CONFIG
    assert _one_line(second) == line
    assert fake.imports() == 1  # answered from the memo: no child this time


def test_a_suite_of_several_models_stops_as_a_whole_not_as_error_columns(
    tmp_path: Path, suite: Path
) -> None:
    fake = make_fake_llama(tmp_path / "fake", "segv", AMX_INFO)
    (suite.parent / "m2.gguf").write_bytes(b"GGUF" + bytes(60))
    suite.write_text(
        SUITE.replace("model: {path: m.gguf, n_ctx: 256}", "models: [m.gguf, m2.gguf]")
    )

    done = _run(fake, tmp_path / "home", suite)

    assert done.returncode == ExitCode.CONFIG
    assert "Traceback" not in done.stderr
    # The first column's heading, then the one line; no column runs.
    assert done.stderr.splitlines()[0] == "model 1/2: m.gguf"
    assert done.stderr.splitlines()[1].startswith("error: llama.cpp crashed with SIGSEGV")
    assert len(done.stderr.splitlines()) == 2
    assert not (tmp_path / "home" / "runs").exists()


def test_a_damaged_or_tampered_verdict_is_not_trusted_and_the_canary_runs_again(
    tmp_path: Path, suite: Path
) -> None:
    fake = make_fake_llama(tmp_path / "fake", "segv", AMX_INFO)
    home = tmp_path / "home"
    assert _run(fake, home, suite).returncode == ExitCode.CONFIG
    memo = home / llama_canary.MEMO_FILE
    ((key, entry),) = _memo(home).items()

    # Flipped to "ok" without its digest, in a memo file whose own seal is valid: the
    # verdict's digest still fails, so the child runs again and crashes again.
    memo.unlink()
    remember(memo, key, {**entry, "verdict": "ok", "signal": None})
    again = _run(fake, home, suite)
    assert again.returncode == ExitCode.CONFIG
    assert "SIGSEGV" in _one_line(again)
    assert fake.imports() == 2

    # Not JSON at all: a miss too.
    memo.write_text('{"' + key + '": {"verdict": "ok"')
    assert _run(fake, home, suite).returncode == ExitCode.CONFIG
    assert fake.imports() == 3


def test_a_rebuilt_library_is_checked_again(tmp_path: Path, suite: Path) -> None:
    fake = make_fake_llama(tmp_path / "fake", "segv", AMX_INFO)
    home = tmp_path / "home"
    assert _run(fake, home, suite).returncode == ExitCode.CONFIG
    assert fake.imports() == 1

    fake.library.write_bytes(b"\x7fELF rebuilt, another size")
    assert _run(fake, home, suite).returncode == ExitCode.CONFIG
    assert fake.imports() == 2
    assert len(_memo(home)) == 2  # one verdict per library


def test_an_instruction_set_the_cpu_lacks_gets_the_portable_rebuild(
    tmp_path: Path, suite: Path
) -> None:
    flags = set(cpu_flags())
    lacking = next(
        (
            name
            for name, needs in _NEEDS.items()
            if flags and not flags & set(needs) and not name.startswith("AMX")
        ),
        None,
    )
    if lacking is None:
        pytest.skip("this CPU lists every instruction set the check knows")
    info = f"CPU : {lacking} = 1 | OPENMP = 1 | "
    fake = make_fake_llama(tmp_path / "fake", "ill", info)

    done = _run(fake, tmp_path / "home", suite)

    assert done.returncode == ExitCode.CONFIG
    line = _one_line(done)
    assert "crashed with SIGILL" in line
    assert f"the build uses {lacking}, which this CPU does not list" in line
    assert (
        'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --no-cache-dir --force-reinstall '
        f"--no-binary llama-cpp-python 'llama-cpp-python=={VERSION}'"
    ) in line


def test_a_canary_that_decodes_lets_the_run_go_on_and_is_remembered(
    tmp_path: Path, suite: Path
) -> None:
    fake = make_fake_llama(tmp_path / "fake", "ok", AMX_INFO)
    home = tmp_path / "home"
    # The stand-in lacks most of llama-cpp-python, so only the canary is checked here: the
    # run gets past it, and the next check (engine/llama_adapter.py) refuses the stand-in in
    # one line at the model line, as a mistake in what is installed (exit 4), not a crash.
    done = _run(fake, home, suite)
    assert done.returncode == ExitCode.INVALID, done.stderr
    assert "crashed" not in done.stderr
    assert "llama-cpp-python 0.3.99 lacks" in done.stderr
    assert "Traceback" not in done.stderr
    (entry,) = _memo(home).values()
    assert entry["verdict"] == "ok"
    assert features(str(entry["system_info"])) == (
        "SSE3",
        "AVX",
        "AVX2",
        "AVX512",
        "AMX_INT8",
        "OPENMP",
    )


def test_faulthandler_names_the_python_frame_of_any_other_native_crash(
    tmp_path: Path,
) -> None:
    (tmp_path / "suite.yaml").write_text(
        """\
version: 1
model: echo
prompts: ["{{q}}"]
tests:
  - vars: {q: "hello"}
    assert: [{type: python, value: file://crash.py}]
"""
    )
    (tmp_path / "crash.py").write_text(
        "import ctypes\n\n\ndef get_assert(output, context):\n    return ctypes.string_at(0)\n"
    )
    env = {**os.environ, "SKILLEVAL_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        skilleval_cmd("run", "suite.yaml"),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode < 0  # killed by the signal: faulthandler names it, it does not catch it
    assert "Fatal Python error: Segmentation fault" in done.stderr
    assert "crash.py" in done.stderr
    assert "get_assert" in done.stderr


@pytest.mark.model
def test_the_real_library_passes_its_canary_once_and_the_run_records_its_build(
    tmp_path: Path,
) -> None:
    import llama_cpp

    (tmp_path / "suite.yaml").write_text(SUITE.replace("m.gguf", "default"))
    home = tmp_path / "home"
    env = {**os.environ, "SKILLEVAL_HOME": str(home)}

    def run() -> dict[str, object]:
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
        environment: dict[str, object] = json.loads(done.stdout)["environment"]
        return environment

    environment = run()
    (entry,) = _memo(home).values()
    assert entry["verdict"] == "ok"
    assert entry["stage"] == "decode"
    assert entry["version"] == llama_cpp.__version__
    built = features(llama_cpp.llama_print_system_info().decode())
    assert built  # the CPU backend lists at least one instruction set
    assert environment["instruction_sets"] == list(built)

    run()  # the same library and CPU: the verdict is read back, not measured again
    assert _memo(home) == {next(iter(_memo(home))): entry}
