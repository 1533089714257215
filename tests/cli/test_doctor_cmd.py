"""``skilleval doctor``, from outside: the command line in, the exit code and output out.

The library it reports on is a stand-in ``llama_cpp`` (``tests/fakellama.py``) that decodes or
crashes on purpose, the real one (model tests), or none at all: an interpreter started with
``-S`` whose only site folder is a copy of this one's, links to every installed package but
llama-cpp-python, so it truly cannot import it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from fakellama import VERSION, make_fake_llama

from skilleval.engine.llama_build import cpu_flags
from skilleval.exitcodes import ExitCode
from skilleval.version import __version__

ROOT = Path(__file__).resolve().parents[2]
INFO = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AMX_INT8 = 1 | OPENMP = 1 | "


def _doctor(env: dict[str, str], cwd: Path, *args: str, python: list[str] | None = None) -> Any:
    cmd = [*(python or [sys.executable]), "-m", "skilleval", "doctor", *args]
    return subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(done.stdout)  # exactly one document, nothing else
    return report


def test_json_reports_the_build_the_cpu_and_the_canary_and_remembers_the_verdict(
    tmp_path: Path,
) -> None:
    fake = make_fake_llama(tmp_path / "fake", "ok", INFO)
    env = fake.env(tmp_path / "home")

    done = _doctor(env, tmp_path, "--json")

    assert done.returncode == ExitCode.OK, done.stderr
    report = _json(done)
    assert report["skilleval"] == __version__
    assert report["python"]["executable"] == sys.executable
    llama = report["llama_cpp_python"]
    assert llama["installed"] is True
    assert llama["version"] == VERSION
    assert llama["path"] == str((tmp_path / "fake" / "llama_cpp").resolve())
    assert llama["system_info"] == INFO.strip()
    assert llama["instruction_sets"] == ["SSE3", "AVX", "AVX2", "AMX_INT8", "OPENMP"]
    assert llama["gpu_offload"] is False
    assert report["cpu"]["flags"] == list(cpu_flags())
    assert report["threads"]["default"] >= 1
    assert report["wait_policy"]["policy"] in ("default", "PASSIVE", "ACTIVE")
    assert report["wait_policy"]["reason"]
    assert report["canary"]["verdict"] == "ok"
    assert report["canary"]["remembered"] is False
    assert report["canary"]["memo"] == str(tmp_path / "home" / "llama-canary.json")
    assert report["home"]["path"] == str(tmp_path / "home")
    assert report["home"]["exists"] is True
    assert report["cache"] == {
        "path": str(tmp_path / "home" / "cache.db"),
        "exists": False,
        "size_bytes": 0,
    }
    assert report["prefixes"]["entries"] == 0
    assert "llama" in report["extras"]
    model = report["embedded_model"]
    if model["installed"]:
        data = Path(model["path"]).read_bytes()
        assert model["sha256"] == hashlib.sha256(data).hexdigest()
        assert model["size"] == len(data)
        assert model["kernels"] is None  # no run has loaded it in this home
    assert fake.imports() == 1

    again = _json(_doctor(env, tmp_path, "--json"))
    assert again["canary"]["remembered"] is True
    assert again["canary"]["checked_at"] == report["canary"]["checked_at"]
    assert fake.imports() == 1  # no second child


def test_a_crashing_library_is_diagnosed_and_doctor_exits_6(tmp_path: Path) -> None:
    fake = make_fake_llama(tmp_path / "fake", "segv", INFO)
    env = fake.env(tmp_path / "home")

    text = _doctor(env, tmp_path)

    assert text.returncode == ExitCode.CONFIG
    assert "Traceback" not in text.stderr
    assert "canary             CRASHED with SIGSEGV at decode" in text.stdout
    assert "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" in text.stdout
    assert f"'llama-cpp-python=={VERSION}'" in text.stdout

    report = _json(_doctor(env, tmp_path, "--json"))
    assert report["canary"]["verdict"] == "crashed"
    assert report["canary"]["signal"] == "SIGSEGV"
    assert report["canary"]["remembered"] is True
    assert "AMX_INT8 = 1" in report["canary"]["diagnosis"]
    assert fake.imports() == 1


def _site_without_llama(where: Path) -> Path:
    """A site folder that links every installed package of this one but llama-cpp-python."""
    site = where / "site"
    site.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if entry.name.lower().startswith(("llama_cpp", "llama-cpp")):
            continue
        (site / entry.name).symlink_to(entry)
    return site


def test_without_llama_cpp_python_doctor_still_reports_and_says_so(tmp_path: Path) -> None:
    site = _site_without_llama(tmp_path)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(site)]),
        "SKILLEVAL_HOME": str(tmp_path / "home"),
    }
    python = [sys.executable, "-S"]
    probe = subprocess.run(
        [*python, "-c", "import importlib.util as u; print(u.find_spec('llama_cpp'))"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip() == "None"  # truly absent, not hidden

    done = _doctor(env, tmp_path, "--json", python=python)

    assert done.returncode == ExitCode.OK, done.stderr
    report = _json(done)
    assert report["llama_cpp_python"]["installed"] is False
    assert report["llama_cpp_python"]["version"] is None
    assert report["llama_cpp_python"]["instruction_sets"] == []
    assert report["canary"]["verdict"] == "not run"
    assert report["canary"]["detail"] == "llama-cpp-python is not installed"
    assert report["extras"]["llama"]["installed"] is False
    assert "llama-cpp-python" in report["extras"]["llama"]["missing"]

    text = _doctor(env, tmp_path, python=python)
    assert text.returncode == ExitCode.OK
    assert "llama-cpp-python   not installed (pip install 'skilleval[llama]')" in text.stdout
    assert "Traceback" not in text.stderr


@pytest.mark.model
def test_doctor_on_the_real_library(tmp_path: Path) -> None:
    import llama_cpp

    env = {**os.environ, "SKILLEVAL_HOME": str(tmp_path / "home")}
    done = _doctor(env, tmp_path, "--json")
    assert done.returncode == ExitCode.OK, done.stderr
    report = _json(done)
    assert report["canary"]["verdict"] == "ok"
    assert report["llama_cpp_python"]["version"] == llama_cpp.__version__
    assert (
        report["llama_cpp_python"]["system_info"]
        == llama_cpp.llama_print_system_info().decode().strip()
    )
    assert report["llama_cpp_python"]["gpu_offload"] == llama_cpp.llama_supports_gpu_offload()
    assert report["embedded_model"]["installed"] is True
    assert report["embedded_model"]["kernels"] is None
    text = _doctor(env, tmp_path).stdout
    assert "kernels          not probed on this build yet" in text

    # A batching run probes the model's kernels; doctor then shows what the run keeps.
    from skilleval.engine.llama import LlamaProvider
    from skilleval.engine.llama_config import LlamaConfig, default_threads

    provider = LlamaProvider(LlamaConfig(parallel=2), tmp_path / "home")
    try:
        provider.check()
    finally:
        provider.close()
    report = _json(_doctor(env, tmp_path, "--json"))
    kernels = report["embedded_model"]["kernels"]
    assert kernels is not None
    assert kernels["splits"] is True  # the embedded Q4_1 model (docs/engine.md)
    assert kernels["probe_ms"] > 0
    text = _doctor(env, tmp_path).stdout
    assert "kernels          not probed" not in text
    # The lane probe's verdict, for the threads a run would get now (measured for them and
    # a lane a core by the provider above, asked to batch, if it got as many threads).
    lanes = report["embedded_model"]["lanes"]
    if report["threads"]["now"] == provider.threads and default_threads() > 1:
        assert lanes is not None
        assert lanes["used"] is (
            lanes["same_bits"]
            and lanes["lanes_ms"] <= 0.85 * min(lanes["one_ms"], lanes["batched_ms"])
        )
        assert "lanes            not probed" not in text
        assert ("one-thread lanes by default" in text) is lanes["used"]
    elif default_threads() == 1:
        assert "lanes            none with one core" in text
