"""The GitHub Actions recipe in docs/scaling.md: its YAML is a matrix of shards and a merge
job that fit together, and its commands, run here with each shard in a home of its own and
the artifacts copied by hand, merge into the run the suite gives whole."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from tests.cli.test_shard_merge import assert_same_run, make_suite, scripted_suite

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "scaling.md"


def recipe() -> dict[str, Any]:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"<!-- ci-recipe -->\n```yaml\n(.*?)\n```", text, re.DOTALL)
    assert found is not None, "docs/scaling.md lost its CI recipe"
    loaded: dict[str, Any] = YAML(typ="safe").load(found.group(1))
    return loaded


def step(job: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in job["steps"] if s.get("name") == name)


def test_the_recipe_is_a_matrix_of_shards_and_a_merge_job_that_fit_together() -> None:
    jobs = recipe()["jobs"]
    shard, merge = jobs["shard"], jobs["merge"]
    shards = shard["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1))
    assert shard["strategy"]["fail-fast"] is False
    assert f"--shard ${{{{ matrix.shard }}}}/{len(shards)}" in step(shard, "Run one shard")["run"]
    upload = next(s for s in shard["steps"] if s.get("uses", "").startswith("actions/upload"))
    download = next(s for s in merge["steps"] if s.get("uses", "").startswith("actions/download"))
    prefix = upload["with"]["name"].split("$")[0]
    assert download["with"]["pattern"] == f"{prefix}*"
    assert f"{download['with']['path']}/{prefix}*" in step(merge, "Merge and gate")["run"]
    assert merge["needs"] == "shard"
    assert merge["if"] == "always()"
    installs = [
        s["run"]
        for job in (shard, merge)
        for s in job["steps"]
        if "pip install" in s.get("run", "")
    ]
    assert len(set(installs)) == 1  # one pinned version in both jobs


def bash(command: str, cwd: Path, env: dict[str, str]) -> int:
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, check=False, timeout=300
    ).returncode


def test_the_recipe_commands_run_here_merge_into_the_whole_run(tmp_path: Path) -> None:
    jobs = recipe()["jobs"]
    shard, merge = jobs["shard"], jobs["merge"]
    bindir = str(Path(sys.executable).parent)
    base = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    source = tmp_path / "repo"
    make_suite(source / "evals", scripted_suite(24))
    whole_home = tmp_path / "whole-home"
    bash("skilleval run evals/suite.yaml -q", source, {**base, "SKILLEVAL_HOME": str(whole_home)})
    whole = (whole_home / "runs" / "latest").resolve()

    def checkout(name: str) -> Path:
        # Each CI job checks the repository out afresh, at another path here.
        return Path(shutil.copytree(source, tmp_path / name / "work"))

    parts = tmp_path / "merge-job" / "work" / "parts"
    for k in shard["strategy"]["matrix"]["shard"]:
        work = checkout(f"shard-job-{k}")
        env = {**base, **shard["env"]}
        for name in ("Run one shard", "Keep the run directory"):
            command = step(shard, name)["run"].replace("${{ matrix.shard }}", str(k))
            assert bash(command, work, env) == 0, command
        # upload-artifact, then download-artifact into parts/<name>/
        shutil.copytree(work / f"part-{k}", parts / f"part-{k}")
    work = parts.parent
    shutil.copytree(source / "evals", work / "evals")
    summary = tmp_path / "step-summary.md"
    env = {
        **base,
        "SKILLEVAL_HOME": str(tmp_path / "merge-home"),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    whole_code = json.loads((whole / "results.json").read_text())["gate"]["exit_code"]
    assert bash(step(merge, "Merge and gate")["run"], work, env) == whole_code
    assert bash(step(merge, "Summary")["run"], work, env) == 0
    assert summary.read_text().strip()
    assert_same_run(whole, work / "merged")
