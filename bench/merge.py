"""How long `skilleval merge` takes beside reading its parts (issue: at most twice as long).

    .venv/bin/python bench/merge.py [--tests 20000] [--shards 3] [--repeat 3] [--work DIR]

A suite of ``shards × tests`` deterministic echo tests (five assertions each) is run as
``--shard K/N`` parts, each in a home of its own (the parts are made once and kept under
``--work``). Then, in one child process per round, the parts are read with the results
loader (``read_records``: every line parsed into a record, the work any reader of the parts
must do) and its run files (``run.json``, ``shard-part.json``) parsed, which is what reading
the parts means; then they are merged with ``skilleval merge`` (checks, streaming, the
statistics over the union, ``results.json``, ``results.jsonl`` and ``report.html``). Rounds
alternate the order of the two (read first, then merge first), so neither always runs on a
warmer page cache or a quieter moment. The figure is merge time ÷ read time, the median over rounds, in wall time and in CPU time (the steadier of the two on a
shared machine); both are timed inside the same process, after the imports, so interpreter
start-up counts in neither. ``merge`` pauses the cycle collector (it keeps everything it
builds to the end) while the results loader does not, so each round also reads the parts once
more with the collector paused and reports merge ÷ that read in CPU time: the stricter figure.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from common import change_request, check, load_average, median, run_child

SUITE = """\
version: 1
description: Merge bench, {n} deterministic-only tests
model: echo
prompts:
  - "Repeat after me: {{{{request}}}}"
defaultTest:
  assert:
    - type: contains
      value: "{{{{word}}}}"
    - type: not-icontains
      value: as an ai
    - type: regex
      value: "\\\\w+"
    - type: max-length
      value: 400
    - type: word-count
      value: {{min: 1}}
tests: file://tests.jsonl
"""

# The child: read every part (its records and run files) and merge them, in the order the
# round gives, each timed after the imports.
CHILD = """\
import json, sys, time
from pathlib import Path
from skilleval.cli import run_cli
from skilleval.results.load import read_records
parts, out, report = [Path(p) for p in sys.argv[1].split(",")], Path(sys.argv[2]), Path(sys.argv[3])
got = {}
def read():
    n = sum(len(read_records(p / "results.jsonl", lambda m: None)) for p in parts)
    for p in parts:
        for name in ("run.json", "shard-part.json"):
            json.loads((p / name).read_text(encoding="utf-8"))
    return n
def merge():
    return run_cli(["merge", *map(str, parts), "-o", str(out), "-q"])
def read_paused():
    from skilleval.util.collector import paused
    with paused():
        return read()
for name in sys.argv[4].split(",") + ["paused"]:
    t0, c0 = time.perf_counter(), time.process_time()
    value = {"read": read, "merge": merge, "paused": read_paused}[name]()
    got[name] = (value, time.perf_counter() - t0, time.process_time() - c0)
report.write_text(json.dumps({"records": got["read"][0], "code": got["merge"][0],
                              "read_s": got["read"][1], "read_cpu": got["read"][2],
                              "merge_s": got["merge"][1], "merge_cpu": got["merge"][2],
                              "paused_cpu": got["paused"][2]}))
"""


def make_parts(work: Path, tests: int, shards: int) -> list[Path]:
    """The shards' run directories, made once (a marker file says they are complete)."""
    done = work / "parts.json"
    if done.is_file():
        recorded = json.loads(done.read_text(encoding="utf-8"))
        if recorded["tests"] == tests and recorded["shards"] == shards:
            return [Path(p) for p in recorded["parts"]]
    suite_dir = work / "suite"
    shutil.rmtree(suite_dir, ignore_errors=True)
    suite_dir.mkdir(parents=True)
    total = tests * shards
    suite = suite_dir / "suite.yaml"
    suite.write_text(SUITE.format(n=total), encoding="utf-8")
    with (suite_dir / "tests.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(total):
            word = f"#{i}"
            row = {
                "id": f"t{i:06d}",
                "vars": {"request": f"{change_request(i)} {word}", "word": word},
            }
            fh.write(json.dumps(row) + "\n")
    parts = []
    skilleval = str(Path(sys.executable).parent / "skilleval")
    for k in range(1, shards + 1):
        home = work / f"home-{k}"
        shutil.rmtree(home, ignore_errors=True)
        started = time.perf_counter()
        child = run_child(
            [skilleval, "run", str(suite), "--shard", f"{k}/{shards}", "-q"],
            env={"SKILLEVAL_HOME": str(home)},
            report=work / f"shard-{k}.json",
        )
        check(child, f"shard {k}/{shards}")
        print(f"shard {k}/{shards}: {time.perf_counter() - started:.1f} s", flush=True)
        parts.append((home / "runs" / "latest").resolve())
    done.write_text(
        json.dumps({"tests": tests, "shards": shards, "parts": [str(p) for p in parts]}),
        encoding="utf-8",
    )
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=20000, help="tests per shard")
    parser.add_argument("--shards", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, help="keep the parts here (default: a temp folder)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="skilleval-merge-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work: {work}; load average {load_average()}", flush=True)
    parts = make_parts(work, args.tests, args.shards)
    rounds = []
    for r in range(args.repeat):
        out = work / f"merged-{r}"
        shutil.rmtree(out, ignore_errors=True)
        report = work / f"round-{r}.json"
        child = run_child(
            [
                sys.executable,
                "-c",
                CHILD,
                ",".join(map(str, parts)),
                str(out),
                str(report),
                "read,merge" if r % 2 == 0 else "merge,read",
            ],
            env={"SKILLEVAL_HOME": str(work / "home-merge")},
            report=report,
        )
        check(child, "merge round")
        got = child.report
        if got.get("code") not in (0, 1):
            raise SystemExit(
                f"merge exited with {got.get('code')}; see {report.with_suffix('.log')}"
            )
        rounds.append(got)
        print(
            f"round {r + 1}: {got['records']} records, read {got['read_s']:.2f} s, "
            f"merge {got['merge_s']:.2f} s, ratio {got['merge_s'] / got['read_s']:.2f} "
            f"(CPU time: {got['merge_cpu'] / got['read_cpu']:.2f}; "
            f"{got['merge_cpu'] / got['paused_cpu']:.2f} against a read with the cycle "
            "collector paused, as merge pauses it), "
            f"peak RSS {child.max_rss_mb:.0f} MB",
            flush=True,
        )
        shutil.rmtree(out, ignore_errors=True)
    ratio = median([g["merge_s"] / g["read_s"] for g in rounds])
    cpu = median([g["merge_cpu"] / g["read_cpu"] for g in rounds])
    paused = median([g["merge_cpu"] / g["paused_cpu"] for g in rounds])
    print(
        f"{args.shards} shards x {args.tests} tests: merge / read = {ratio:.2f} wall, "
        f"{cpu:.2f} CPU time ({paused:.2f} against a read with the collector paused) "
        f"(median of {len(rounds)}; read {median([g['read_s'] for g in rounds]):.2f} s, "
        f"merge {median([g['merge_s'] for g in rounds]):.2f} s); load average {load_average()}"
    )


if __name__ == "__main__":
    main()
