"""What is read back from the skilleval home is verified before use (util/homefile.py).

Each test damages one kind of stored file the way a disk or a hostile user would, then runs
the CLI in a process of its own: the run must finish as a clean run does, with one warning
naming the file, never a traceback, a crash or a different verdict.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import textwrap
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
      output: "Rome is the capital of Italy."
prompts: ["Capital of {{country}}?"]
tests:
  - id: paris
    vars: {country: France}
    assert:
      - type: icontains
        value: paris
  - id: rome
    vars: {country: Italy}
    assert:
      - type: icontains
        value: rome
"""


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(SUITE).lstrip(), encoding="utf-8")
    return path


def home() -> Path:
    return Path(os.environ["SKILLEVAL_HOME"])


def run(suite: Path) -> tuple[Finished, dict[str, str], int]:
    """Run the suite; its outcome, each test's status and the cache hits."""
    done = run_fresh(["run", str(suite), "--json"], suite.parent, time_limit=30)
    assert not done.problems(), done.err
    doc = json.loads(done.out)
    statuses = {r["test_id"]: r["status"] for r in doc["records"]}
    return done, statuses, int(doc["calls"]["cache_hits"])


def warnings_in(done: Finished) -> list[str]:
    return [line for line in done.err.splitlines() if line.startswith("warning:")]


@pytest.mark.parametrize("seed", range(6))
def test_a_damaged_compiled_template_is_compiled_again_with_one_warning(
    suite: Path, seed: int
) -> None:
    clean, statuses, _ = run(suite)
    assert clean.code == 0
    (compiled,) = (home() / "templates").glob("*.bin")
    data = bytearray(compiled.read_bytes())
    rng = random.Random(seed)
    for _ in range(rng.choice((1, 3, 16))):
        at = rng.randrange(len(data) // 4, len(data))
        data[at] ^= 1 << rng.randrange(8)
    compiled.write_bytes(bytes(data))
    damaged, again, _ = run(suite)
    assert (damaged.code, again) == (0, statuses)
    assert [w for w in warnings_in(damaged)] == [
        f"warning: a compiled template in {compiled} is damaged and was not used; "
        "it is computed again"
    ]
    assert (home() / "runs" / "latest" / "report.html").is_file()
    healed, _, _ = run(suite)
    assert warnings_in(healed) == []


def test_a_truncated_compiled_template_is_a_warning_too(suite: Path) -> None:
    run(suite)
    (compiled,) = (home() / "templates").glob("*.bin")
    compiled.write_bytes(compiled.read_bytes()[:100])
    damaged, _, _ = run(suite)
    assert damaged.code == 0
    assert len(warnings_in(damaged)) == 1


def _edit_bodies(edit: str) -> None:
    with sqlite3.connect(home() / "cache.db") as db:
        db.execute(edit)


def test_a_flipped_bit_in_a_cached_reply_is_a_miss_with_one_warning(suite: Path) -> None:
    clean, statuses, _ = run(suite)
    assert clean.code == 0
    # One bit: 'a' (0x61) becomes 'e' (0x65), in both replies; the JSON stays valid.
    _edit_bodies("UPDATE responses SET body = replace(body, 'capital', 'cepital')")
    damaged, again, hits = run(suite)
    assert (damaged.code, again, hits) == (0, statuses, 0)
    assert warnings_in(damaged) == [
        f"warning: a response cache entry in {home() / 'cache.db'} is damaged and was not "
        "used; the reply is computed again"
    ]
    healed, _, hits = run(suite)
    assert (warnings_in(healed), hits) == ([], 2)


def test_a_reply_moved_under_another_key_is_a_miss(suite: Path) -> None:
    run(suite)
    with sqlite3.connect(home() / "cache.db") as db:
        (a, body_a), (b, body_b) = db.execute("SELECT key, body FROM responses").fetchall()
        db.execute("UPDATE responses SET body = ? WHERE key = ?", (body_b, a))
        db.execute("UPDATE responses SET body = ? WHERE key = ?", (body_a, b))
    swapped, statuses, hits = run(suite)
    assert (swapped.code, statuses, hits) == (0, {"paris": "pass", "rome": "pass"}, 0)
    assert len(warnings_in(swapped)) == 1


DEEP = "[" * 50_000 + "]" * 50_000


@pytest.mark.parametrize("memo", ["platform.json", "installed.json"])
@pytest.mark.parametrize(
    "damage",
    [DEEP, '{"a": ' * 50_000 + "1" + "}" * 50_000, '{"sha256": "x", "entries": {"k": NaN}}'],
    ids=["deep list", "deep object", "NaN"],
)
def test_a_damaged_memo_is_absent_with_one_warning(suite: Path, memo: str, damage: str) -> None:
    clean, statuses, _ = run(suite)
    (home() / memo).write_text(damage, encoding="utf-8")
    damaged, again, _ = run(suite)
    assert (damaged.code, again) == (clean.code, statuses)
    assert warnings_in(damaged) == [
        f"warning: a memo in {home() / memo} is damaged and was not used; it is measured again"
    ]
    healed, _, _ = run(suite)
    assert warnings_in(healed) == []


def test_a_flipped_byte_in_a_memo_is_absent_with_one_warning(suite: Path) -> None:
    run(suite)
    memo = home() / "platform.json"
    memo.write_text(memo.read_text().replace("Linux", "Linuy"), encoding="utf-8")
    damaged, _, _ = run(suite)
    assert len(warnings_in(damaged)) == 1
    doc = json.loads((home() / "runs" / "latest" / "results.json").read_text())
    assert "Linuy" not in json.dumps(doc)


@pytest.mark.parametrize(
    "manifest",
    [DEEP, "{not json", '{"suite": NaN}', "[1]", '{"suite": 3}', ""],
    ids=["deep", "not json", "NaN", "list", "no suite", "empty"],
)
def test_a_damaged_run_manifest_refuses_resume_with_one_line(suite: Path, manifest: str) -> None:
    run(suite)
    run_dir = (home() / "runs" / "latest").resolve()
    (run_dir / "run.json").write_text(manifest, encoding="utf-8")
    for argv in (["run", "--resume", str(run_dir)], ["run", str(suite), "--resume", str(run_dir)]):
        done = run_fresh(argv, suite.parent, time_limit=30)
        assert not done.problems(), done.err
        assert done.code == 2, done.err
        lines = [
            line
            for line in done.err.splitlines()
            if line.strip() and not line.startswith(("Usage:", "Try '"))
        ]
        assert len(lines) == 1, done.err
        assert "run.json" in lines[0]
        assert "cannot be resumed" in lines[0] or "not a skilleval run" in lines[0]
