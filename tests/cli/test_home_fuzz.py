"""The home folder, fuzzed: every kind of stored file a re-run reads is damaged at random
(flipped bytes, a cut, nesting 50,000 deep, junk), then the suite runs again.

The re-run must give the clean run's verdicts, or stop with one line; never a traceback, a
crash, a hang or a different verdict (docs/architecture.md, "Everything read back from the
home is verified before use"). Bounded: a fixed number of seeded cases, each run in a
fresh interpreter with a time limit.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import sqlite3
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.fresh import run_fresh
from tests.cli.isolated import Finished

SUITE = """
version: 1
model:
  provider: scripted
  responses:
    - id: paris
      output: "Paris is the capital of France."
    - id: rome
      output: "Rome is the capital of Italy, I think."
prompts: ["Capital of {{country}}?"]
tests:
  - id: paris
    vars: {country: France}
    assert:
      - type: icontains
        value: paris
      - type: javascript
        value: "output.length > 5"
  - id: rome
    vars: {country: Italy}
    assert:
      - type: icontains
        value: rome
      - type: not-icontains
        value: "i think"
"""

CASES = 40


def _flip(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.choice((1, 2, 8, 64))):
        if out:
            at = rng.randrange(len(out))
            out[at] ^= 1 << rng.randrange(8)
    return bytes(out)


def _cut(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data))] if data else data


def _deep(data: bytes, rng: random.Random) -> bytes:
    return (b"[" * 50_000 + b"]" * 50_000) if rng.random() < 0.5 else b'{"a":' * 50_000


def _junk(data: bytes, rng: random.Random) -> bytes:
    return rng.randbytes(rng.choice((0, 1, 64, 4096)))


def _edit(data: bytes, rng: random.Random) -> bytes:
    """One bit that keeps the file well-formed and changes what it says: a stored reply that
    would flip a verdict, a memo's value; else a flip."""
    for old, new in ((b"Paris", b"Pasis"), (b"think", b"thinc"), (b"true", b"trte")):
        if old in data:
            return data.replace(old, new, 1)
    return _flip(data, rng)


DAMAGE: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "edit": _edit,
    "flip": _flip,
    "cut": _cut,
    "deep": _deep,
    "junk": _junk,
}


def _stored_files(home: Path) -> list[Path]:
    """Every file a re-run may read back: not the runs, which a re-run only writes."""
    return sorted(
        p for p in home.rglob("*") if p.is_file() and "runs" not in p.relative_to(home).parts
    )


def _outcome(done: Finished) -> tuple[int | None, dict[str, str]]:
    doc = json.loads(done.out)
    return done.code, {r["test_id"]: r["status"] for r in doc["records"]}


def _clean_home(root: Path, text: str, args: list[str]) -> tuple[Path, Path, tuple[object, ...]]:
    """A suite, a home holding what two clean runs stored, and their (equal) outcome."""
    suite = root / "suite.yaml"
    suite.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    home = root / "home"
    os.environ["SKILLEVAL_HOME"] = str(home)
    try:
        first = run_fresh(["run", str(suite), "--json", *args], root, time_limit=120)
        again = run_fresh(["run", str(suite), "--json", *args], root, time_limit=120)
    finally:
        del os.environ["SKILLEVAL_HOME"]
    assert not first.problems(), first.err
    assert not again.problems(), again.err
    assert _outcome(first) == _outcome(again)
    # Fold the cache's write-ahead log into its file (a killed run leaves it there; SQLite
    # checks the log's frames itself), so that the damage lands in the pages that are read.
    with contextlib.closing(sqlite3.connect(home / "cache.db")) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return suite, home, _outcome(first)


def _damaged_run(
    clean: tuple[Path, Path, tuple[object, ...]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
    args: list[str],
) -> None:
    """Damage one stored file (chosen by ``seed``, as is the damage), run again, and check
    the outcome against the clean one."""
    suite, stored, expected = clean
    home = tmp_path / "home"
    shutil.copytree(stored, home, symlinks=True)
    monkeypatch.setenv("SKILLEVAL_HOME", str(home))
    rng = random.Random(seed)
    files = _stored_files(home)
    assert files
    target = files[seed % len(files)]
    how = list(DAMAGE)[(seed // len(files)) % len(DAMAGE)]
    target.write_bytes(DAMAGE[how](target.read_bytes(), rng))
    done = run_fresh(["run", str(suite), "--json", *args], suite.parent, time_limit=120)
    assert not done.problems(), f"{how} {target.name}: {done.err}"
    assert done.code is not None
    assert done.code >= 0, f"{how} {target.name}: crashed"
    messages = [line for line in done.err.splitlines() if line.startswith(("warning:", "error:"))]
    if done.code in (0, 1, 3) and done.out:
        assert _outcome(done) == expected, f"{how} {target.name}: {done.err}"
        assert len(messages) <= 1, f"{how} {target.name}: {done.err}"
    else:
        # Stopped: one line, saying what to do (a damaged cache file is deleted by its user).
        lines = [line for line in done.err.splitlines() if line.strip()]
        assert len(lines) == 1, f"{how} {target.name}: {done.err}"
        assert lines[0].startswith("error: "), lines[0]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, tuple[object, ...]]:
    return _clean_home(tmp_path_factory.mktemp("fuzz"), SUITE, [])


@pytest.mark.parametrize("seed", range(CASES))
def test_a_damaged_home_gives_the_same_verdicts_or_one_line(
    clean: tuple[Path, Path, tuple[object, ...]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
) -> None:
    _damaged_run(clean, tmp_path, monkeypatch, seed, [])


# On the embedded model, without the response cache: the model's hash memo and the prompt
# prefixes kept under <home>/kv are read back too. Verdicts are compared with the clean run
# on this machine, never with fixed text.
MODEL_SUITE = """
version: 1
model: {path: default, n_ctx: 512}
decoding: {max_tokens: 4}
prompts:
  - >-
    You are a careful assistant who answers questions about the capitals of countries in
    one word. Keep every answer short, plain and exact, with no punctuation and no extra
    words. Question: what is the capital of {{country}}?
tests:
  - vars: {country: France}
    assert: [{type: icontains, value: "a"}]
  - vars: {country: Italy}
    assert: [{type: icontains, value: "o"}]
  - vars: {country: Spain}
    assert: [{type: icontains, value: "e"}]
"""
MODEL_CASES = 12


@pytest.fixture(scope="module")
def clean_model(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, Path, tuple[object, ...]]:
    made = _clean_home(tmp_path_factory.mktemp("fuzz-model"), MODEL_SUITE, ["--no-cache"])
    assert list(made[1].glob("kv/*/*.kv")), "no prompt prefix was kept"
    assert (made[1] / "model-hashes.json").is_file()
    return made


@pytest.mark.model
@pytest.mark.parametrize("seed", range(MODEL_CASES))
def test_a_damaged_model_home_gives_the_same_verdicts_or_one_line(
    clean_model: tuple[Path, Path, tuple[object, ...]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
) -> None:
    _damaged_run(clean_model, tmp_path, monkeypatch, seed, ["--no-cache"])
