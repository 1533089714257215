"""`skilleval run --resume`: a run killed with SIGKILL finishes without redoing finished work."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from skilleval.cli import run_cli

SLOW_PLUGIN = """
import time
from skilleval import assertion

@assertion("slow-ok")
def slow_ok(check):
    "Passes after a pause, so a run can be killed halfway."
    time.sleep(0.15)
    return True
"""


def make_suite(root: Path, tests: int = 16) -> Path:
    (root / "asserts").mkdir(parents=True, exist_ok=True)
    (root / "asserts" / "slow.py").write_text(textwrap.dedent(SLOW_PLUGIN), encoding="utf-8")
    lines = [
        "version: 1",
        "plugins: [asserts]",
        "model:",
        "  provider: scripted",
        "  responses:",
        "    - match: odd",
        "      output: an odd answer",
        "  default: an even answer",
        "tests:",
    ]
    for i in range(tests):
        word = "odd" if i % 2 else "even"
        lines += [
            f"  - id: t{i:02d}",
            f"    prompt: question {i} is {word}",
            "    assert:",
            "      - type: slow-ok",
            "      - type: contains",
            "        value: even",
        ]
    suite = root / "suite.yaml"
    suite.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return suite


def comparable(doc: dict) -> dict:
    """A results document without what legitimately differs between two processes."""
    out = {k: v for k, v in doc.items() if k not in ("timing", "calls", "run_id", "status")}
    out["records"] = [
        {
            **r,
            "stats": {
                k: v for k, v in r["stats"].items() if k not in ("latency_ms", "tokens_per_s")
            },
        }
        for r in doc["records"]
    ]
    return out


def start_run(suite: Path, home: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "SKILLEVAL_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "skilleval", "run", str(suite), "--no-cache", "-q"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def test_kill_9_then_resume_loses_nothing_and_matches_an_uninterrupted_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = make_suite(tmp_path)
    home = tmp_path / "home"
    proc = start_run(suite, home)
    runs = home / "runs"
    deadline = time.monotonic() + 30
    jsonl: Path | None = None
    while time.monotonic() < deadline:
        found = sorted(runs.glob("*/results.jsonl")) if runs.exists() else []
        if found and len(found[0].read_text().splitlines()) >= 4:
            jsonl = found[0]
            break
        time.sleep(0.05)
    assert jsonl is not None, "the run never got going"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    finished_before = {
        json.loads(x)["test_id"] for x in jsonl.read_text().splitlines() if x.strip()
    }
    assert 4 <= len(finished_before) < 16
    assert not (jsonl.parent / "results.json").exists()

    monkeypatch.setenv("SKILLEVAL_HOME", str(home))
    code = run_cli(["run", "--resume", str(jsonl.parent), "--no-cache", "--json"])
    resumed = json.loads(capsys.readouterr().out)
    assert code == 1  # the odd tests fail `contains: even`
    assert resumed["calls"]["model_calls"] == 16 - len(finished_before)
    assert {r["test_id"] for r in resumed["records"]} >= finished_before

    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "fresh"))
    run_cli(["run", str(suite), "--no-cache", "--json"])
    fresh = json.loads(capsys.readouterr().out)
    assert comparable(resumed) == comparable(fresh)


def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path: Path, capsys, monkeypatch) -> None:
    suite = make_suite(tmp_path, tests=3)
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    assert run_cli(["run", str(suite), "-k", "t00"]) == 0
    run = tmp_path / "home" / "runs" / "latest"
    with (run / "results.jsonl").open("a") as fh:
        fh.write('{"test_id": "t01", "arm": "def')
    capsys.readouterr()
    run_cli(["run", "--resume", str(run.resolve()), "-k", "t00", "--json"])
    err = capsys.readouterr().err
    assert "results.jsonl:2: skipping a corrupt line" in err


def test_resuming_after_the_suite_changed_needs_force(tmp_path: Path, capsys, monkeypatch) -> None:
    suite = make_suite(tmp_path, tests=2)
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    run_cli(["run", str(suite)])
    run = (tmp_path / "home" / "runs" / "latest").resolve()
    suite.write_text(suite.read_text().replace("an odd answer", "an even answer"), encoding="utf-8")
    capsys.readouterr()
    assert run_cli(["run", "--resume", str(run)]) == 2
    assert "changed since" in capsys.readouterr().err
    assert run_cli(["run", "--resume", str(run), "--force"]) == 1  # t01 still fails


def test_resuming_a_directory_that_is_not_a_run_is_a_usage_error(tmp_path: Path, capsys) -> None:
    assert run_cli(["run", "--resume", str(tmp_path)]) == 2
    assert "not a skilleval run directory" in capsys.readouterr().err


def interrupted_run(tmp_path: Path, tests: int = 16, after: int = 2) -> tuple[Path, Path]:
    """A run of ``make_suite`` killed with SIGKILL after ``after`` records: (suite, run dir)."""
    suite = make_suite(tmp_path, tests)
    home = tmp_path / "home"
    proc = start_run(suite, home)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = sorted((home / "runs").glob("*/results.jsonl")) if (home / "runs").exists() else []
        if found and len(found[0].read_text().splitlines()) >= after:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            return suite, found[0].parent
        time.sleep(0.05)
    proc.kill()
    pytest.fail("the run never got going")


def test_two_resumes_at_once_one_is_refused_and_no_test_runs_twice(tmp_path: Path) -> None:
    _, run = interrupted_run(tmp_path, tests=20)
    env = {**os.environ, "SKILLEVAL_HOME": str(tmp_path / "home")}
    command = [sys.executable, "-m", "skilleval", "run", "--resume", str(run), "--no-cache", "-q"]
    procs = [
        subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    (first, _), (second, refused) = sorted(
        (p.returncode, e) for p, e in zip(procs, errs, strict=True)
    )
    assert (first, second) == (1, 2)  # the one that ran: the odd tests fail `contains: even`
    assert f"{run} is being written by another skilleval run (process " in refused
    assert "Traceback" not in refused
    lines = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
    keys = [(r["test_id"], r["arm"], r["trial"]) for r in lines]
    assert len(keys) == len(set(keys)) == 20
    assert len(json.loads((run / "results.json").read_text())["records"]) == 20


def test_a_run_directory_in_use_is_refused_in_the_same_process(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skilleval.runner.rundir import RunDir

    suite = make_suite(tmp_path, tests=2)
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    assert run_cli(["run", str(suite)]) == 1
    run = (tmp_path / "home" / "runs" / "latest").resolve()
    holder = RunDir(run)
    capsys.readouterr()
    assert run_cli(["run", "--resume", str(run)]) == 2
    assert f"being written by another skilleval run (process {os.getpid()})" in (
        capsys.readouterr().err
    )
    holder.close()
    assert run_cli(["run", "--resume", str(run)]) == 1


def test_resuming_with_another_model_says_the_model_changed(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = make_suite(tmp_path, tests=2)
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    run_cli(["run", str(suite)])
    run = (tmp_path / "home" / "runs" / "latest").resolve()
    capsys.readouterr()
    assert run_cli(["run", "--resume", str(run), "--model", "echo"]) == 2
    err = capsys.readouterr().err
    assert (
        f"{run.name} ran with model scripted, not echo; resuming would mix results of two "
        "models (resume with the same --model, or pass --force)"
    ) in err
    assert "the suite or a file it reads changed" not in err


def test_resuming_with_another_seed_names_the_decoding(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = make_suite(tmp_path, tests=2)
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    run_cli(["run", str(suite)])
    run = (tmp_path / "home" / "runs" / "latest").resolve()
    capsys.readouterr()
    assert run_cli(["run", "--resume", str(run), "--seed", "7"]) == 2
    assert "ran with decoding" in capsys.readouterr().err


# -- a full disk -------------------------------------------------------------------------------


def _assert_one_message_and_no_temporaries(err: str, run_root: Path) -> None:
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1, err
    assert "no space left on the device" in errors[0]
    assert "then finish the run with: skilleval run --resume" in errors[0]
    assert not [p.name for p in run_root.rglob("*.tmp")]


@pytest.fixture
def full_after(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """Make results.jsonl's file refuse writes with ENOSPC after ``n`` records."""
    from skilleval.runner import rundir

    original = rundir.RunDir.append

    class FullFile:
        def __init__(self, real: IO[str]) -> None:
            self.real = real

        def write(self, text: str) -> int:
            self.real.write(text[: len(text) // 2])  # a torn line, as a real full disk leaves
            self.real.flush()
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name: str) -> Any:
            return getattr(self.real, name)

    def install(n: int) -> None:
        count = 0

        def append(self: rundir.RunDir, record: dict[str, Any]) -> None:
            nonlocal count
            count += 1
            if count > n and self._jsonl is not None and not isinstance(self._jsonl, FullFile):
                self._jsonl = FullFile(self._jsonl)  # type: ignore[assignment]
            original(self, record)

        monkeypatch.setattr(rundir.RunDir, "append", append)

    return install


def test_a_full_disk_mid_run_is_one_message_exit_3_and_resumable(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, full_after: Callable[[int], None]
) -> None:
    suite = make_suite(tmp_path, tests=6)
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    full_after(3)
    assert run_cli(["run", str(suite), "--no-cache", "-q"]) == 3
    runs = tmp_path / "home" / "runs"
    (run,) = runs.iterdir()
    _assert_one_message_and_no_temporaries(capsys.readouterr().err, runs)
    assert not (run / "results.json").exists()
    assert len((run / "results.jsonl").read_text().splitlines()) == 4  # 3 and a torn one

    monkeypatch.undo()
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    assert run_cli(["run", "--resume", str(run), "--no-cache", "--json"]) == 1
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert "results.jsonl:4: skipping a corrupt line" in err
    assert doc["calls"]["model_calls"] == 3
    assert [r["test_id"] for r in doc["records"]] == [f"t{i:02d}" for i in range(6)]


def test_a_full_disk_at_results_json_leaves_no_temporary(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skilleval.runner import rundir

    suite = make_suite(tmp_path, tests=2)
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home"))
    real_replace = os.replace

    def full(src: Any, dst: Any) -> None:
        if str(dst).endswith("results.json"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(rundir.os, "replace", full)
    assert run_cli(["run", str(suite), "--no-cache"]) == 3
    runs = tmp_path / "home" / "runs"
    _assert_one_message_and_no_temporaries(capsys.readouterr().err, runs)
    monkeypatch.setattr(rundir.os, "replace", real_replace)
    (run,) = runs.iterdir()
    assert run_cli(["run", "--resume", str(run), "--no-cache"]) == 1
    assert (run / "results.json").is_file()


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB tmpfs (needs the right to mount; skipped elsewhere)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (it needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def test_a_really_full_disk_then_freed_space_finishes_the_run(
    tmp_path: Path, tiny_disk: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = make_suite(tmp_path, tests=12)
    text = suite.read_text().replace("an even answer", "even " * 1600)
    suite.write_text(text, encoding="utf-8")
    home = tiny_disk / "home"
    monkeypatch.setenv("SKILLEVAL_HOME", str(home))
    filler = tiny_disk / "filler"
    stat = os.statvfs(tiny_disk)
    filler.write_bytes(b"\0" * (stat.f_bavail * stat.f_frsize - 64 * 1024))

    assert run_cli(["run", str(suite), "--no-cache", "-q"]) == 3
    _assert_one_message_and_no_temporaries(capsys.readouterr().err, home)

    filler.unlink()
    (run,) = (home / "runs").iterdir()
    assert run_cli(["run", "--resume", str(run), "--no-cache", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["records"]) == 12
    assert not list(home.rglob("*.tmp"))
