"""Shared by bench/run.py and bench/scale.py: test generation, timed child processes, tables."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
SUITE_DIR = REPO / "suites" / "bench"
PYTHON = sys.executable

_ACTIONS = (
    "fixed a crash",
    "added retries with backoff",
    "removed dead code",
    "renamed a confusing option",
    "added a unit test",
    "sped up the lookup",
    "documented the public functions",
    "upgraded the pinned dependency",
    "fixed typos",
    "added debug logging",
)
_PLACES = (
    "in the CSV parser",
    "in the login form",
    "in the cache layer",
    "in the command-line interface",
    "in the HTTP client",
    "in the settings page",
    "in the nightly billing job",
    "in the search index",
    "in the README",
    "in the CI workflow",
)
_PHRASINGS = (
    "Write a commit message: I {action} {place}.",
    "Commit message please. I {action} {place}.",
    "What should the commit subject be? I {action} {place}.",
)


def change_request(i: int) -> str:
    """The i-th distinct change description (300 of them before phrasings repeat)."""
    a = len(_ACTIONS)
    # Stepping the place by i // a as well gives every (action, place) pair once per 100.
    action = _ACTIONS[i % a]
    place = _PLACES[(i + i // a) % len(_PLACES)]
    phrasing = _PHRASINGS[(i // (a * len(_PLACES))) % len(_PHRASINGS)]
    return phrasing.format(action=action, place=place)


def write_tests(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            row = {"id": f"t{i:04d}", "vars": {"request": change_request(i)}}
            fh.write(json.dumps(row) + "\n")


def copy_suite(dest: Path, n: int, model_block: str | None = None) -> Path:
    """suites/bench copied to ``dest`` with ``n`` tests; ``model_block`` replaces ``model:``."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(SUITE_DIR, dest)
    write_tests(dest / "tests.jsonl", n)
    suite = dest / "suite.yaml"
    if model_block is not None:
        text = suite.read_text(encoding="utf-8")
        assert "\nmodel: default\n" in text
        suite.write_text(text.replace("\nmodel: default\n", f"\n{model_block}\n"), "utf-8")
    return suite


@dataclass
class Child:
    """A finished child process and what it cost."""

    wall_s: float
    max_rss_mb: float
    """The child's peak resident set (ru_maxrss of this child alone, via wait4)."""
    cpu_s: float
    returncode: int
    report: dict[str, Any] = field(default_factory=dict)
    """What the child wrote to its report file, if anything."""


def copy_home(source: Path, dest: Path, leave: Callable[[str], bool]) -> Path:
    """``dest``, made anew: a copy of the skilleval home ``source`` without the top-level
    entries whose names ``leave`` accepts."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for entry in source.iterdir():
        if leave(entry.name):
            continue
        if entry.is_dir():
            shutil.copytree(entry, dest / entry.name)
        else:
            shutil.copy2(entry, dest / entry.name)
    return dest


def child_json(argv: Sequence[str]) -> dict[str, Any]:
    """Run ``argv`` (a benchmark's own ``--child`` case) and return the JSON document on the
    last line of its stdout; stops the benchmark with the child's stderr if it failed."""
    done = subprocess.run(list(argv), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def run_child(
    argv: Sequence[str], env: Mapping[str, str] | None = None, report: Path | None = None
) -> Child:
    """Run ``argv`` and measure it; stdout and stderr go to ``<report>.log`` when given."""
    full_env = {**os.environ, **(env or {})}
    log = report.with_suffix(".log") if report else None
    sink = log.open("wb") if log else subprocess.DEVNULL
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(list(argv), env=full_env, stdout=sink, stderr=subprocess.STDOUT)
        # wait4 gives this child's own rusage; RUSAGE_CHILDREN would fold in earlier children.
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if log is not None and not isinstance(sink, int):
            sink.close()
    data: dict[str, Any] = {}
    if report is not None and report.is_file():
        data = json.loads(report.read_text(encoding="utf-8"))
    return Child(
        wall_s=wall,
        max_rss_mb=usage.ru_maxrss / 1024.0,
        cpu_s=usage.ru_utime + usage.ru_stime,
        returncode=proc.returncode,
        report=data,
    )


def check(child: Child, what: str, ok: Sequence[int] = (0, 1)) -> None:
    """Stop the benchmark when a child failed (exit 1 is a failed gate, which is fine)."""
    if child.returncode not in ok:
        raise SystemExit(f"{what} exited with {child.returncode}; see its .log file")


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """Least-squares ``y = a + b x``: (a, b, r²)."""
    n = len(xs)
    mx = sum(xs) / n
    my = sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    b = sxy / sxx if sxx else 0.0
    a = my - b * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - a - b * x) ** 2 for x, y in zip(xs, ys, strict=True))
    r2 = 1.0 - ss_res / ss_tot if ss_tot else 1.0
    return a, b, r2


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    rule = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join([line, rule, *body])
