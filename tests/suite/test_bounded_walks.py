"""Walks and references always end: globs ignore symlink loops and are bounded
(util/walk.py), `$ref` has cycle detection and an expansion budget (suite/refs.py)."""

from __future__ import annotations

import glob
import os
import textwrap
from pathlib import Path

import pytest

from skilleval.util.walk import GlobTooLarge, bounded_glob
from tests.cli.isolated import run_isolated


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def test_a_glob_through_symlinks_to_its_own_folder_ends(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("hello")
    (data / "l1").symlink_to(".")
    (data / "l2").symlink_to(".")
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        model: {provider: echo}
        prompts: ["{{t}}"]
        tests:
          - vars: {t: "file://data/l1/l2/**/*.txt"}
            assert: [{type: contains, value: hello}]
        """,
    )
    done = run_isolated(["validate", str(suite)], tmp_path, time_limit=10)
    assert not done.problems(), done.err
    assert done.code == 0, done.err
    run = run_isolated(["run", str(suite), "-q"], tmp_path, time_limit=20)
    assert run.code == 0, run.err


def test_a_glob_over_the_whole_disk_is_refused(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        model: {provider: echo}
        prompts: ["{{t}}"]
        tests:
          - vars: {t: "file:///**"}
        """,
    )
    for command in ("validate", "lint"):
        done = run_isolated([command, str(suite)], tmp_path, time_limit=10)
        assert not done.problems(), done.err
    done = run_isolated(["validate", str(suite)], tmp_path, time_limit=10)
    assert done.code == 4
    assert done.message.startswith("suite.yaml:5:15: error: file:///** is too wide a glob: it ")


def test_bounded_glob_matches_what_glob_matches_without_loops(tmp_path: Path) -> None:
    for rel in ("a.txt", "b.md", "x/c.txt", "x/y/d.txt", "x/.hidden.txt", ".h/e.txt", "z/f.csv"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)
    for pattern in ("*.txt", "**/*.txt", "x/**/*.txt", "x/*/*.txt", "*/c.txt", "[ab].*", "**"):
        full = str(tmp_path / pattern)
        assert sorted(bounded_glob(full)) == sorted(
            p.rstrip(os.sep) for p in glob.glob(full, recursive=True)
        ), pattern
    (tmp_path / "x" / "loop").symlink_to("..")
    assert len(bounded_glob(str(tmp_path / "**" / "*.txt"))) == 3


def test_bounded_glob_stops_at_its_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("skilleval.util.walk.MAX_SCANNED", 50)
    for i in range(60):
        (tmp_path / f"f{i}.log").write_text("")
    with pytest.raises(GlobTooLarge, match="more than 50 files and folders"):
        bounded_glob(str(tmp_path / "*.txt"))


SELF = """
version: 1
model: {provider: echo}
prompts: ["hi"]
assertionTemplates:
  t:
    type: contains
    value: {$ref: "#/assertionTemplates/t"}
tests:
  - assert:
      - $ref: "#/assertionTemplates/t"
"""


def tree(levels: int) -> str:
    lines = ["version: 1", "model: {provider: echo}", "prompts: ['hi']", "assertionTemplates:"]
    for i in range(levels - 1):
        lines += [f"  t{i}:", "    type: assert-set", "    assert:"]
        lines += [f"      - $ref: '#/assertionTemplates/t{i + 1}'"] * 2
    lines += [f"  t{levels - 1}:", "    type: contains", "    value: x"]
    lines += ["tests:", "  - assert:", "      - $ref: '#/assertionTemplates/t0'"]
    return "\n".join(lines) + "\n"


def test_a_template_used_inside_itself_is_an_error(tmp_path: Path) -> None:
    suite = write(tmp_path / "suite.yaml", SELF)
    done = run_isolated(["validate", str(suite)], tmp_path, time_limit=10)
    assert not done.problems(), done.err
    assert done.code == 4
    assert "suite.yaml:7:19: error: $ref '#/assertionTemplates/t' is used inside itself" in done.err


def test_templates_that_double_at_every_level_stop_at_the_budget(tmp_path: Path) -> None:
    suite = write(tmp_path / "suite.yaml", tree(39))
    done = run_isolated(["validate", str(suite)], tmp_path, time_limit=15)
    assert not done.problems(), done.err
    assert done.code == 4
    assert "the copies `$ref` makes pass 250,000 nodes" in done.message
    assert done.seconds < 10


def test_import_promptfoo_of_a_self_using_template_ends(tmp_path: Path) -> None:
    config = write(tmp_path / "promptfooconfig.yaml", SELF.replace("version: 1\n", ""))
    done = run_isolated(["import", "promptfoo", str(config)], tmp_path, time_limit=15)
    assert not done.problems(), done.err
    assert done.code != 0
