"""The OpenMP wait policy (engine/wait_policy.py): decided from what other processes do now,
read from a /proc/stat the test writes, never from timings."""

from __future__ import annotations

import multiprocessing
import sys
from pathlib import Path

import pytest

from skilleval.engine.wait_policy import (
    BUSY_CORES,
    SAMPLE_S,
    decide,
    others_busy_cores,
    thread_count,
    threads_for,
)

TICKS = 100


def _stat(busy: int, idle: int) -> str:
    # user nice system idle iowait irq softirq steal guest guest_nice
    return f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\nintr 1\n"


class Machine:
    """A /proc/stat that advances by ``busy_cores`` (every process) while the sample sleeps,
    and this process's CPU clock, which advances by ``own_cores``."""

    def __init__(self, tmp_path: Path, busy_cores: float, own_cores: float, cores: int = 2):
        self.path = tmp_path / "stat"
        self.busy_cores, self.own_cores, self.cores = busy_cores, own_cores, cores
        self.busy, self.idle, self.own = 1000, 5000, 3.0
        self._write()

    def _write(self) -> None:
        self.path.write_text(_stat(self.busy, self.idle), encoding="ascii")

    def sleep(self, seconds: float) -> None:
        busy = round(self.busy_cores * seconds * TICKS)
        self.busy += busy
        self.idle += round(self.cores * seconds * TICKS) - busy
        self.own += self.own_cores * seconds
        self._write()

    def measure(self) -> float | None:
        return others_busy_cores(
            stat=self.path,
            clock_ticks=TICKS,
            sleep=self.sleep,
            own_cpu_s=lambda: self.own,
        )


def test_other_processes_busy_now_make_the_threads_sleep(tmp_path: Path) -> None:
    machine = Machine(tmp_path, busy_cores=2.0, own_cores=0.0)
    environ: dict[str, str] = {}
    chosen = decide(environ, machine.measure)
    assert chosen.policy == "PASSIVE"
    assert environ == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert "2.0 cores" in chosen.reason


def test_an_idle_machine_keeps_openmp_s_own_bounded_spin(tmp_path: Path) -> None:
    machine = Machine(tmp_path, busy_cores=0.1, own_cores=0.0)
    environ: dict[str, str] = {}
    chosen = decide(environ, machine.measure)
    assert chosen.policy == "default"
    assert environ == {}


def test_this_process_s_own_work_is_not_counted_as_load(tmp_path: Path) -> None:
    # What a load average cannot tell apart: the busy time is this process's own.
    machine = Machine(tmp_path, busy_cores=1.6, own_cores=1.6)
    measured = machine.measure()
    assert measured is not None
    assert measured < BUSY_CORES
    assert decide({}, Machine(tmp_path, 1.6, 1.6).measure).policy == "default"


def test_a_policy_the_user_set_is_kept_without_measuring() -> None:
    def measure() -> float:
        raise AssertionError("measured although the user chose")

    environ = {"OMP_WAIT_POLICY": "active"}
    chosen = decide(environ, measure)
    assert chosen.policy == "ACTIVE"
    assert environ == {"OMP_WAIT_POLICY": "active"}
    assert "set to 'active'" in chosen.reason


@pytest.mark.parametrize("text", ["", "cpu  x y z\n", "intr 1\n", "cpu 1 2\n"])
def test_an_unreadable_stat_leaves_openmp_s_own_policy(tmp_path: Path, text: str) -> None:
    stat = tmp_path / "stat"
    stat.write_text(text, encoding="ascii")
    assert others_busy_cores(stat=stat, sleep=lambda s: None) is None
    chosen = decide({}, lambda: others_busy_cores(stat=stat, sleep=lambda s: None))
    assert chosen.policy == "default"
    assert others_busy_cores(stat=tmp_path / "missing", sleep=lambda s: None) is None


def _spin() -> None:
    while True:
        pass


@pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="needs Linux's /proc/stat")
def test_on_this_machine_spinning_processes_are_seen() -> None:
    assert sys.platform.startswith("linux")
    procs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(2)]
    for p in procs:
        p.start()
    try:
        measured = others_busy_cores(sample_s=SAMPLE_S * 4)
    finally:
        for p in procs:
            p.terminate()
            p.join()
    assert measured is not None
    assert measured >= 1.0


# -- how many threads ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("others", "cores", "count"),
    [
        (None, 2, 2),  # the load could not be read
        (0.0, 2, 2),
        (0.4, 2, 2),
        (0.5, 2, 1),  # where the threads also stop spinning
        (1.0, 2, 1),
        (2.0, 2, 1),
        (6.0, 2, 1),  # never fewer than one
        (1.0, 8, 7),
        (2.4, 8, 6),
        (2.6, 8, 5),
        (0.0, 1, 1),
    ],
)
def test_threads_leave_the_cores_other_processes_keep_busy(
    others: float | None, cores: int, count: int
) -> None:
    chosen = threads_for(others, cores)
    assert chosen.count == count
    assert chosen.reason


def test_a_busy_machine_gets_fewer_threads_from_the_same_sample(tmp_path: Path) -> None:
    machine = Machine(tmp_path, busy_cores=2.0, own_cores=0.0)
    others = machine.measure()
    assert others is not None
    chosen = threads_for(others, 2)
    assert chosen.count == 1
    assert "1 of 2 usable cores" in chosen.reason
    assert "2.0 cores busy" in chosen.reason
    assert threads_for(Machine(tmp_path, busy_cores=0.1, own_cores=0.0).measure(), 2).count == 2


def test_threads_the_user_set_are_kept_without_measuring(monkeypatch: pytest.MonkeyPatch) -> None:
    from skilleval.engine import wait_policy

    def measure() -> float:
        raise AssertionError("measured although the user chose")

    monkeypatch.setattr(wait_policy, "choose_threads", lambda cores: measure())
    chosen = thread_count(3, 2)
    assert (chosen.count, chosen.reason) == (3, "set in the model's `threads`")


def test_the_policy_and_the_threads_come_from_one_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    from skilleval.engine import wait_policy

    monkeypatch.setattr(wait_policy, "_chosen", None)
    monkeypatch.setattr(wait_policy, "_measured", [])
    samples: list[float] = []

    def measure() -> float:
        samples.append(1.8)
        return 1.8

    environ: dict[str, str] = {}
    assert wait_policy.choose(environ, measure).policy == "PASSIVE"
    assert wait_policy.choose_threads(4, measure).count == 2
    assert wait_policy.choose_threads(4, measure).count == 2
    assert samples == [1.8]
