"""Mutated example suites and damaged results files: no traceback and no hang, ever.

A seeded generator mutates the shipped example suites (lines dropped, duplicated, swapped or
re-indented, YAML punctuation and hostile values put in) and a real ``results.json`` (bytes
flipped, cut short, values swapped for others of the wrong type). Every mutant goes through
``validate``; each one that is still valid also through ``run`` on the echo model and then
``report``; every damaged results file through ``report``. Each command must end with an exit
code the README's table gives it, within the time limit, and never with an exception.

``SKILLEVAL_FUZZ_CASES`` sets how many suite mutants each example gets (default 30);
``SKILLEVAL_FUZZ_SEED`` moves the seed to try other mutants.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from skilleval.cli import run_cli

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLES = ["quickstart", "commit-message", "contact-extractor", "plugins", "overfitted"]
CASES = int(os.environ.get("SKILLEVAL_FUZZ_CASES", "30"))
SEED = int(os.environ.get("SKILLEVAL_FUZZ_SEED", "0"))
TIME_LIMIT_S = 5.0

HOSTILE = [
    ":",
    ": x",
    "- ",
    "{",
    "}",
    "[",
    "*anchor",
    "&a",
    "<<: *a",
    "!tag",
    "!!binary",
    "\t",
    "'",
    '"',
    "#",
    "|",
    ">",
    "%YAML 1.1",
    "---",
    "...",
    "? ",
    "null",
    "~",
    "-1",
    "0",
    "1e309",
    "99999999999999999999999999999",
    "[]",
    "{}",
    "''",
    '"\\ud800"',
    '"\\x00"',
    "{{ x }}",
    "{{ x | load }}",
    "{% for i in range(9) %}{% endfor %}",
    "{% include 'x' %}",
    "(a+)+$",
    "file://nope.txt",
    "file:///dev/zero",
    "file://" + "x" * 300,
    "skill/SKILL.md",
    "é",
    "\u202e",
    "type: expr",
    "type: contains",
    "value: 1",
    "assert: []",
    "tests: []",
    "vars: 3",
]


def mutate_text(text: str, rng: random.Random) -> str:
    """One to three random edits of a YAML file's text."""
    lines = text.splitlines()
    for _ in range(rng.randint(1, 3)):
        if not lines:
            lines = [rng.choice(HOSTILE)]
        i = rng.randrange(len(lines))
        op = rng.randrange(8)
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[i])
        elif op == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 3:
            lines[i] = " " * rng.choice([1, 2, 3, 4, 6]) + lines[i]
        elif op == 4:
            lines[i] = lines[i].lstrip()
        elif op == 5:
            at = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:at] + rng.choice(HOSTILE) + lines[i][at:]
        elif op == 6:
            key, sep, _ = lines[i].partition(": ")
            lines[i] = f"{key}{sep or ': '}{rng.choice(HOSTILE)}"
        else:
            lines = lines[: rng.randrange(len(lines) + 1)]
    return "\n".join(lines) + "\n"


def mutate_json(data: Any, rng: random.Random) -> Any:
    """``data`` with one value somewhere replaced, removed, or given the wrong type."""
    if isinstance(data, dict) and data and rng.random() < 0.8:
        key = rng.choice(list(data))
        out = dict(data)
        if rng.random() < 0.2:
            del out[key]
        else:
            out[key] = mutate_json(out[key], rng)
        return out
    if isinstance(data, list) and data and rng.random() < 0.8:
        out_list = list(data)
        i = rng.randrange(len(out_list))
        out_list[i] = mutate_json(out_list[i], rng)
        return out_list
    return rng.choice([None, -1, 0, 1.5, 10**30, "", "x", [], {}, True, float("nan"), [None]])


def mutate_bytes(raw: bytes, rng: random.Random) -> bytes:
    """``raw`` cut short, or with a few bytes changed."""
    if rng.random() < 0.3:
        return raw[: rng.randrange(len(raw))]
    data = bytearray(raw)
    for _ in range(rng.randint(1, 4)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


class Hang(BaseException):
    """Raised in the command when it runs past the time limit."""


def _alarm(_signum: int, _frame: FrameType | None) -> None:
    raise Hang


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def command(args: list[str], what: str) -> tuple[int, str, str]:
    """Run ``skilleval ARGS`` in-process: its exit code, stdout and stderr.

    Fails the test on an exception (a traceback, for a user), or past the time limit.
    """
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    try:
        with (
            time_limit(TIME_LIMIT_S),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            code = run_cli(args)
    except Hang:
        pytest.fail(f"skilleval {' '.join(args)} ran past {TIME_LIMIT_S:g} s on {what}")
    except BaseException as exc:
        raise AssertionError(f"skilleval {' '.join(args)} raised on {what}") from exc
    seconds = time.monotonic() - started
    assert seconds < TIME_LIMIT_S, (args, what, seconds)
    assert "Traceback" not in out.getvalue() + err.getvalue(), (what, err.getvalue())
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("example", EXAMPLES)
def test_mutated_suites_validate_run_and_report_without_a_traceback(
    example: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / example
    shutil.copytree(ROOT / "examples" / example, folder)
    monkeypatch.chdir(folder)
    original = (folder / "suite.yaml").read_text(encoding="utf-8")
    rng = random.Random(f"{SEED}:{example}")
    ran = 0
    for i in range(CASES):
        text = mutate_text(original, rng)
        (folder / "suite.yaml").write_text(text, encoding="utf-8")
        what = f"mutant {i} of examples/{example}/suite.yaml:\n{text}"
        code, _, _ = command(["validate", "suite.yaml", "--no-entry-points"], what)
        assert code in (0, 4), what
        if code != 0 or ran >= 3:
            continue
        # Each example's still-valid mutants are run, a few of them: running costs the most.
        ran += 1
        code, out, _ = command(
            ["run", "suite.yaml", "--model", "echo", "--no-entry-points", "--json", "-q"], what
        )
        assert code in (0, 1, 3, 4, 5), what
        if code in (4, 5):
            continue
        run_id = json.loads(out)["run_id"]
        run_dir = Path(os.environ["SKILLEVAL_HOME"]) / "runs" / run_id
        code, _, _ = command(["report", str(run_dir), "-o", "r.md", "-o", "r.csv"], what)
        assert code == 0, what


def test_damaged_results_files_are_refused_plainly(tmp_path: Path) -> None:
    suite = ROOT / "tests" / "data" / "cli" / "suite-skill.yaml"
    assert run_cli(["run", str(suite), "-q", "-o", str(tmp_path / "good.json")]) in (0, 1)
    raw = (tmp_path / "good.json").read_bytes()
    good = json.loads(raw)
    rng = random.Random(f"{SEED}:results")
    for i in range(CASES * 4):
        target = tmp_path / f"damaged-{i}" / "results.json"
        target.parent.mkdir()
        if i % 2:
            damaged = mutate_bytes(raw, rng)
        else:
            damaged = json.dumps(mutate_json(good, rng)).encode()
        target.write_bytes(damaged)
        what = f"damaged results file {i}: {damaged[:2000]!r}"
        code, _, err = command(["report", str(target), "-o", str(target.parent / "r.html")], what)
        assert code in (0, 4), (what, err)
        code, _, err = command(["compare", str(tmp_path / "good.json"), str(target)], what)
        assert code in (0, 1, 4), (what, err)
