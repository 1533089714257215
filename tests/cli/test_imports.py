"""Commands import what they use: ``--version`` and a cached run leave the heavy libraries
(jinja2, httpx, rich, jsonschema, llama_cpp) unloaded when they do not need them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

HEAVY = ("jinja2", "httpx", "rich", "jsonschema", "llama_cpp", "ruamel")

PROBE = """
import json, sys
from skilleval.cli import run_cli
code = run_cli(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _imported(*argv: str, env: dict[str, str] | None = None) -> tuple[int, set[str]]:
    """The exit code of ``skilleval ARGV`` in a fresh interpreter, and the top-level packages
    it imported."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )
    last = done.stdout.strip().splitlines()[-1]
    found = json.loads(last)
    return found["code"], {name.split(".")[0] for name in found["modules"]}


def test_version_imports_no_command_and_no_heavy_library() -> None:
    code, modules = _imported("--version")
    assert code == 0
    assert modules.isdisjoint(HEAVY), sorted(modules & set(HEAVY))
    done = subprocess.run(
        [sys.executable, "-c", PROBE.replace("run_cli(sys.argv[1:])", "0"), "--version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    loaded = set(json.loads(done.stdout)["modules"])
    assert "skilleval.runner" not in loaded
    assert "skilleval.plugins" not in loaded


def test_a_cached_run_leaves_unused_libraries_unloaded(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        textwrap.dedent(
            """
            version: 1
            model: echo
            prompts: ["Say {{word}}"]
            tests:
              - vars: {word: hello}
                assert:
                  - type: contains
                    value: hello
                  - type: regex
                    value: "^Say"
            """
        ),
        encoding="utf-8",
    )
    # A home the first run creates: what it learns while loading is kept for the next run.
    home = {"SKILLEVAL_HOME": str(tmp_path / "new-home")}
    assert _imported("run", str(suite), "-q", env=home)[0] in (0, 1)
    assert "importlib.metadata" not in _imported_modules("run", str(suite), "-q", env=home)
    code, modules = _imported("run", str(suite), "-q", env=home)
    assert code in (0, 1)
    # The HTML report uses jinja2 and the loader ruamel's parser; nothing else is needed.
    assert modules.isdisjoint({"httpx", "rich", "llama_cpp"}), modules
    assert "jinja2" in modules
    assert "jsonschema" not in modules
    # Nothing in this suite compiles an expression, measures edit distance or draws a
    # table (-q prints the headline alone).
    assert modules.isdisjoint({"lark", "rapidfuzz", "tabulate"}), modules


def _imported_modules(*argv: str, env: dict[str, str] | None = None) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1])["modules"])
