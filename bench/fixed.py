"""The fixed costs: ``skilleval validate`` of the inline-YAML suite, and a warm re-run of the
benchmark suite (every reply cached, one earlier run in the history).

Each is a child process timed from spawn to exit, wall and CPU seconds; the report gives the
best and the median of ``--repeat`` runs. With ``--against PATH`` (another checkout of
skilleval, such as ``main``), both trees run in turn, round by round, so that they see the
same load. Every child gets the tree it measures first on ``PYTHONPATH`` and may write
bytecode, as an installed package has it; one untimed run per tree and case writes it.

The warm case needs one cold run on the embedded model first (a minute or two). It is made
once, in ``WORK/warm-home``, and kept: every timed re-run starts from a fresh copy of that
home, so the history always holds exactly the one earlier run.

    .venv/bin/python bench/fixed.py --work DIR [--repeat 10] [--against PATH]
        [--warm SUITE HOME]   # reuse a suite and the home of its one cold run
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from common import REPO, Child, check, copy_home, copy_suite, load_average, median, run_child, table
from inline_yaml import write_suites


def _env(tree: Path, home: Path) -> dict[str, str]:
    return {"PYTHONPATH": str(tree), "SKILLEVAL_HOME": str(home)}


def _skilleval(*args: str) -> list[str]:
    return [sys.executable, "-m", "skilleval", *args]


def prepare(
    work: Path, tests: int, inline_tests: int, reuse: tuple[Path, Path] | None
) -> tuple[Path, Path, Path]:
    """The inline suite, the benchmark suite and its warm home (made once, then kept)."""
    inline, _ = write_suites(work / "inline", inline_tests)
    if reuse is not None:
        return inline, reuse[0], reuse[1]
    suite_dir = work / "suite"
    home = work / "warm-home"
    if not (home / "runs").is_dir():
        copy_suite(suite_dir, tests)
        shutil.rmtree(home, ignore_errors=True)
        print(f"cold run of {tests} tests on the embedded model, once (into {home}) ...")
        cold = run_child(
            _skilleval("run", str(suite_dir / "suite.yaml"), "-q"),
            _env(REPO, home),
            work / "cold.json",
        )
        check(cold, "the cold run")
        print(f"  {cold.wall_s:.1f} s")
    return inline, suite_dir / "suite.yaml", home


KEPT_APART = ("runs", "cache.db")
"""What every tree's re-runs share from the cold run's home: the run history and the
response cache. The rest of the home (memos, compiled templates) is what a tree's own first
run leaves there."""


def warm(tree: Path, suite: Path, home: Path, scratch: Path, first: bool) -> Child:
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(home, scratch)
    # What this tree's own cold run would have left in the home (a home made by another
    # tree, or from another folder, lacks it): the installed-packages memo, keyed by
    # sys.path, whose first folder is the tree's, the compiled templates, keyed by their
    # file's path, and the other memos. Each tree keeps its own from its first (untimed)
    # re-run, so that neither pays on every run for what the other's cold run made.
    kept = scratch.with_name(f"{scratch.name}-home")
    if not first and kept.is_dir():
        for entry in kept.iterdir():
            target = scratch / entry.name
            if target.is_dir():
                shutil.rmtree(target)
            if entry.is_dir():
                shutil.copytree(entry, target)
            else:
                shutil.copy2(entry, target)
    child = run_child(_skilleval("run", str(suite), "-q"), _env(tree, scratch))
    check(child, f"the warm re-run ({tree})")
    if first:
        copy_home(scratch, kept, lambda name: name in KEPT_APART or name.startswith("."))
    return child


def validate(tree: Path, inline: Path, home: Path) -> Child:
    home.mkdir(parents=True, exist_ok=True)
    child = run_child(_skilleval("validate", str(inline)), _env(tree, home))
    check(child, f"validate ({tree})", ok=(0,))
    return child


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--tests", type=int, default=20)
    parser.add_argument("--inline-tests", type=int, default=2000)
    parser.add_argument("--against", type=Path, help="another skilleval checkout to compare")
    parser.add_argument(
        "--warm",
        nargs=2,
        type=Path,
        metavar=("SUITE", "HOME"),
        help="reuse a suite and the home of its one cold run instead of making them",
    )
    args = parser.parse_args()
    # Children write and use bytecode, as an installed package does.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    work: Path = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    reuse = (args.warm[0].resolve(), args.warm[1].resolve()) if args.warm else None
    trees = {"this tree": REPO}
    if args.against:
        trees = {"against": args.against.resolve(), **trees}
    # The children's current folder comes first on sys.path: not a checkout's root, where
    # `-m skilleval` would find that checkout's package before PYTHONPATH's.
    os.chdir(work)
    inline, suite, home = prepare(work, args.tests, args.inline_tests, reuse)
    cases: dict[str, Callable[[Path, str, bool], Child]] = {
        f"validate, {args.inline_tests} inline tests": lambda tree, name, first: validate(
            tree, inline, work / f"validate-home-{name}"
        ),
        f"warm re-run, {args.tests} tests": lambda tree, name, first: warm(
            tree, suite, home, work / f"warm-{name}", first
        ),
    }
    loads = [load_average()]
    results: dict[tuple[str, str], list[Child]] = {}
    for case, measure in cases.items():
        for label, tree in trees.items():
            measure(tree, label.replace(" ", "-"), True)  # untimed: bytecode and memos
        for _ in range(args.repeat):
            for label, tree in trees.items():
                child = measure(tree, label.replace(" ", "-"), False)
                results.setdefault((case, label), []).append(child)
        loads.append(load_average())
    rows = []
    for (case, label), runs in results.items():
        walls, cpus = [c.wall_s for c in runs], [c.cpu_s for c in runs]
        rows.append(
            [
                case,
                label,
                f"{min(walls):.3f}",
                f"{median(walls):.3f}",
                f"{min(cpus):.3f}",
                f"{median(cpus):.3f}",
            ]
        )
    headers = ["case", "tree", "wall best", "wall median", "CPU best", "CPU median"]
    print(table(headers, rows))
    print(f"{args.repeat} runs each; load average before and after each case: {'; '.join(loads)}")


if __name__ == "__main__":
    main()
