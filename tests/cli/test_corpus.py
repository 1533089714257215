"""Every command against a corpus of bad inputs and flags: no traceback, no hang, pinned answers.

The cases are ``tests/data/cli/corpus.txt``: a command line, then its exit code and the first
line of its message. Each runs in a process of its own (``isolated.py``) with a 5 s limit, in
a copy of ``tests/data/cli`` beside a copy of ``tests/data/invalid``.
``SKILLEVAL_UPDATE_GOLDENS=1`` rewrites the expectations from what the commands do.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from isolated import Finished, run_isolated

from skilleval.cli import run_cli

DATA = Path(__file__).resolve().parent.parent / "data"
CORPUS = DATA / "cli" / "corpus.txt"


@dataclass(frozen=True, slots=True)
class Case:
    args: str
    code: int | None
    message: str


def read_corpus() -> list[Case]:
    cases: list[Case] = []
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if line.startswith("$ "):
            expected = lines[i + 1]
            code, _, message = expected.partition(" ")
            cases.append(Case(line[2:], None if code == "?" else int(code), message))
    return cases


def write_corpus(found: dict[str, Finished]) -> None:
    out: list[str] = []
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    skip = False
    for line in lines:
        if skip:
            skip = False
            continue
        out.append(line)
        if line.startswith("$ ") and line[2:] in found:
            result = found[line[2:]]
            out.append(f"{result.code} {result.message}")
            skip = True
    CORPUS.write_text("\n".join(out) + "\n", encoding="utf-8")


CASES = read_corpus()
_FOUND: dict[str, Finished] = {}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the corpus, with the entries git cannot hold and two real runs."""
    root = tmp_path_factory.mktemp("corpus")
    shutil.copytree(DATA / "cli", root / "cli")
    shutil.copytree(DATA / "invalid", root / "invalid")
    work = root / "cli"
    (work / "folder.json").mkdir()
    os.mkfifo(work / "fifo.yaml")
    home = os.environ.get("SKILLEVAL_HOME")
    os.environ["SKILLEVAL_HOME"] = str(root / "home")
    cwd = Path.cwd()
    try:
        os.chdir(work)
        for suite, target in [
            ("suite-ok.yaml", "good.json"),
            ("suite-skill.yaml", "good-skill.json"),
        ]:
            assert run_cli(["run", suite, "-q", "-o", target]) in (0, 1)
    finally:
        os.chdir(cwd)
        if home is None:
            os.environ.pop("SKILLEVAL_HOME", None)
        else:
            os.environ["SKILLEVAL_HOME"] = home
    return work


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.args)
def test_command_answers_bad_input_plainly(case: Case, workdir: Path) -> None:
    result = run_isolated(shlex.split(case.args), workdir)
    if os.environ.get("SKILLEVAL_UPDATE_GOLDENS") == "1":
        _FOUND[case.args] = result
        write_corpus(_FOUND)
    assert not result.problems(), result.problems()
    if "--json" in case.args and result.code in (0, 1, 4):
        json.loads(result.out)  # exactly one document, even when the input is bad
    assert (result.code, result.message) == (case.code, case.message), result.err[-2000:]


def test_every_command_is_in_the_corpus() -> None:
    import click

    from skilleval.cli import cli

    tried = {shlex.split(c.args)[0] for c in CASES if not c.args.startswith("-")}
    listed = set(cli.list_commands(click.Context(cli)))
    assert "run" in listed
    assert listed <= tried
