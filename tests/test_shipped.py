"""The shipped schemas and suites: found in a checkout, and packaged in the wheel."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from skilleval.runner.judgecheck import load_pairs
from skilleval.runner.routercheck import load_router_set
from skilleval.shipped import SOURCE_ROOT, schema_text, shipped_dir, suite_text

ROOT = Path(__file__).resolve().parents[1]

#: What every copy of skilleval must carry, by path inside ``suites/``.
SHIPPED_SUITES = ("judge-fitness.yaml", "router-fitness.yaml", "bench/suite.yaml")


def test_a_checkout_reads_the_top_level_folders() -> None:
    assert SOURCE_ROOT == ROOT
    assert shipped_dir("suites") == ROOT / "suites"
    assert shipped_dir("schemas") == ROOT / "schemas"
    for name in SHIPPED_SUITES:
        assert suite_text(name) == (ROOT / "suites" / name).read_text(encoding="utf-8")
    assert json.loads(schema_text("suite.schema.json"))["$schema"]


# Run from a folder outside the checkout, with the unpacked wheel first on the path.
_PROBE = """
import json
from skilleval.runner.judgecheck import load_pairs
from skilleval.runner.routercheck import load_router_set
from skilleval.shipped import shipped_dir, suite_text
from skilleval.suite.schema import load_schema

print(json.dumps({
    "suites": str(shipped_dir("suites")),
    "schemas": str(shipped_dir("schemas")),
    "pairs": len(load_pairs()),
    "cases": len(load_router_set().cases),
    "bench": "skill: SKILL.md" in suite_text("bench/suite.yaml"),
    "schema": bool(load_schema("suite.schema.json")),
}))
"""


@pytest.mark.slow
def test_the_wheel_carries_the_suites_and_finds_them(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), "."],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob("skilleval-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for name in SHIPPED_SUITES:
            assert f"skilleval/_suites/{name}" in names
        assert "skilleval/_schemas/suite.schema.json" in names
        zf.extractall(tmp_path / "site")
    site = tmp_path / "site"
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        check=True,
        capture_output=True,
        text=True,
    )
    found = json.loads(probe.stdout)
    assert found["suites"] == str(site / "skilleval" / "_suites")
    assert found["schemas"] == str(site / "skilleval" / "_schemas")
    assert found["pairs"] == len(load_pairs())
    assert found["cases"] == len(load_router_set().cases)
    assert found["bench"] is True
    assert found["schema"] is True
