"""Two llama-cpp-python builds side by side: the same suite, run by each build in turn.

Each build is a virtualenv with skilleval installed (``make setup VENV=DIR
LLAMA_CMAKE_ARGS=...`` makes one). Every round runs the benchmark suite (suites/bench, N
tests, the embedded model, greedy, nothing forced) once per build, in alternating order, each
with a fresh home so nothing is answered from a cache; ratios are taken within a round. With
``--busy``, the same rounds run again while one busy process per core spins, which is what a
shared CI runner looks like.

    .venv/bin/python bench/builds.py .venv .venv-portable --rounds 3 --busy
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import check, copy_suite, load_average, median, run_child, table


def _spin() -> None:
    while True:
        pass


@contextmanager
def busy(cores: int) -> Iterator[None]:
    """One process spinning on each core while the block runs."""
    procs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(cores)]
    for p in procs:
        p.start()
    try:
        yield
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.join()


def system_info(venv: Path) -> str:
    """The instruction sets the build compiled in, as llama.cpp reports them."""
    code = "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True
    )
    flags = [part.strip() for part in out.stdout.split("|")]
    return " ".join(f.split(" = ")[0].replace("CPU : ", "") for f in flags if f.endswith("= 1"))


def one_run(venv: Path, suite: Path, work: Path, tag: str) -> tuple[float, float]:
    """Wall seconds of one cold run, and the generation rate the run reported."""
    home = work / f"home-{tag}"
    out = work / f"{tag}.json"
    child = run_child(
        [str(venv / "bin" / "skilleval"), "run", str(suite), "--json", "-o", str(out)],
        env={"SKILLEVAL_HOME": str(home)},
        report=work / f"{tag}.report",
    )
    check(child, f"{venv} run {tag}", ok=(0, 1, 3))
    data = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    calls = data.get("calls", {}) if isinstance(data, dict) else {}
    rate = float(calls.get("generation_tokens_per_s") or 0.0)
    return child.wall_s, rate


def rounds(venvs: Sequence[Path], suite: Path, work: Path, n: int, label: str) -> list[list[str]]:
    rows: list[list[str]] = []
    walls: dict[Path, list[float]] = {v: [] for v in venvs}
    rates: dict[Path, list[float]] = {v: [] for v in venvs}
    ratio: list[float] = []
    for r in range(n):
        order = list(venvs) if r % 2 == 0 else list(reversed(venvs))
        this: dict[Path, float] = {}
        for venv in order:
            wall, rate = one_run(venv, suite, work, f"{label}-{r}-{venv.name}")
            this[venv] = wall
            walls[venv].append(wall)
            rates[venv].append(rate)
            print(f"{label} round {r + 1}: {venv} {wall:.1f} s (load {load_average()})")
        ratio.append(this[venvs[1]] / this[venvs[0]])
    for venv in venvs:
        rows.append(
            [
                label,
                str(venv),
                " ".join(f"{w:.1f}" for w in walls[venv]),
                f"{median(rates[venv]):.1f}",
            ]
        )
    rows.append([label, f"ratio {venvs[1]} / {venvs[0]}", f"{median(ratio):.3f}", ""])
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("venvs", nargs=2, type=Path, help="two virtualenvs, A then B")
    parser.add_argument("--tests", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--busy", action="store_true", help="also run with every core busy")
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="skilleval-builds-"))
    work.mkdir(parents=True, exist_ok=True)
    suite = copy_suite(work / "suite", args.tests)
    for venv in args.venvs:
        print(f"{venv}: {system_info(venv)}")
    rows = rounds(args.venvs, suite, work, args.rounds, "idle")
    if args.busy:
        with busy(os.cpu_count() or 1):
            rows += rounds(args.venvs, suite, work, args.rounds, "busy")
    print(table(["machine", "build", "wall s per round", "median tok/s"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
