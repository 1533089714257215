"""`pip install .[llama]` into a fresh virtualenv gives a tool whose `model: default` runs.

This builds skilleval from the working tree and installs it with its dependencies, as a user
would, then runs the README's first suite on the embedded model. It takes minutes, so it
runs only when ``SKILLEVAL_INSTALL_TEST=1`` is set: ``make test-install``, which also sets
``SKILLEVAL_WHEELHOUSE`` to the folder of the llama-cpp-python wheel ``make setup`` built for
this CPU, so that pip takes that wheel and compiles nothing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("SKILLEVAL_INSTALL_TEST") != "1",
        reason="installs into a fresh virtualenv (minutes); set SKILLEVAL_INSTALL_TEST=1",
    ),
]


def readme_first_suite() -> str:
    """The first YAML block of the README, exactly as a reader would copy it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)
    assert blocks, "the README has no YAML example"
    return str(blocks[0])


def test_pip_install_llama_extra_runs_the_readme_suite(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    wheelhouse = os.environ.get("SKILLEVAL_WHEELHOUSE")
    if wheelhouse:
        # pip prefers a wheel to the sdist of the same version.
        pip += ["--find-links", str(ROOT / wheelhouse)]
    installed = subprocess.run(
        [*pip, f"{ROOT}[llama]"], capture_output=True, text=True, timeout=1800
    )
    assert installed.returncode == 0, installed.stderr[-4000:]

    suite_text = readme_first_suite()
    assert "model: default" in suite_text
    suite = tmp_path / "suite.yaml"
    suite.write_text(suite_text, encoding="utf-8")
    env = {**os.environ, "SKILLEVAL_HOME": str(tmp_path / "home")}
    env.pop("PYTHONPATH", None)  # the installed copy, not the working tree
    ran = subprocess.run(
        [str(venv / "bin" / "skilleval"), "run", str(suite), "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    # 0 or 1: the suite ran and its gate decided; 3 or 4 would mean the model did not load.
    assert ran.returncode in (0, 1), ran.stderr
    doc = json.loads(ran.stdout)
    assert doc["environment"]["model"]["name"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert doc["records"]
    assert all(r["status"] != "error" for r in doc["records"]), ran.stderr
