"""How skilleval scales with the number of tests: time per test and peak RSS must grow linearly.

    .venv/bin/python bench/scale.py [--echo 250,500,1000,2000] [--model 50,100,200]
                                    [--max-tokens 8] [--repeat R]

Each size is one cold ``skilleval run -q`` in its own process and its own SKILLEVAL_HOME:
deterministic-only tests on the ``echo`` provider, then on the embedded model with a small
``max_tokens``. A least-squares line through (tests, seconds) and (tests, MB) gives the cost
of one more test; the marginal slopes between consecutive sizes stay flat when growth is
linear (a quadratic cost would make each one larger than the last).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from common import change_request, check, fit_line, load_average, median, run_child, table

SKILLEVAL = str(Path(sys.executable).parent / "skilleval")

# A what-if, not a measurement of skilleval as shipped: the same CLI with os.fsync disabled,
# to show what the per-record fsync of results.jsonl costs.
NO_FSYNC = (
    "import os, sys; os.fsync = lambda fd: None; "
    "from skilleval.cli import run_cli; sys.exit(run_cli(sys.argv[1:]))"
)

SUITE = """\
version: 1
description: Scale, {kind}, {n} deterministic-only tests
model: {model}
decoding:
  max_tokens: {max_tokens}
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


def write_suite(dest: Path, kind: str, n: int, max_tokens: int) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    model = "echo" if kind == "echo" else "default"
    suite = dest / "suite.yaml"
    suite.write_text(
        SUITE.format(kind=kind, n=n, model=model, max_tokens=max_tokens), encoding="utf-8"
    )
    with (dest / "tests.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n):
            # Unique prompts, so no reply comes from the cache within a run.
            word = f"#{i}"
            request = f"{change_request(i)} Ticket {word}."
            row = {"id": f"t{i:05d}", "vars": {"request": request, "word": word}}
            fh.write(json.dumps(row) + "\n")
    return suite


def measure(
    kind: str, sizes: list[int], repeat: int, max_tokens: int, work: Path, no_fsync: bool = False
) -> str:
    rows = []
    cpu_totals: list[float] = []
    walls: list[float] = []
    rsses: list[float] = []
    for n in sizes:
        times: list[float] = []
        cpus: list[float] = []
        peaks: list[float] = []
        loads: list[str] = []
        calls = None
        for r in range(repeat):
            out = work / f"{kind}-{n}-{r + 1}"
            suite = write_suite(out / "suite", kind, n, max_tokens)
            loads.append(load_average())
            command = [sys.executable, "-c", NO_FSYNC] if no_fsync else [SKILLEVAL]
            child = run_child(
                [*command, "run", str(suite), "-q"],
                {"SKILLEVAL_HOME": str(out / "home")},
                out / "run.json",
            )
            check(child, f"{kind} scale run with {n} tests")
            document = json.loads((out / "home/runs/latest/results.json").read_text())
            calls = document["calls"]["model_calls"]
            times.append(child.wall_s)
            cpus.append(child.cpu_s)
            peaks.append(child.max_rss_mb)
        wall, rss = median(times), median(peaks)
        walls.append(wall)
        rsses.append(rss)
        cpu = median(cpus)
        cpu_totals.append(cpu)
        rows.append(
            [
                str(n),
                f"{wall:.2f}",
                " ".join(f"{t:.2f}" for t in times),
                f"{wall / n * 1000:.2f}",
                f"{cpu:.2f}",
                f"{rss:.0f}",
                str(calls),
                loads[0],
            ]
        )
        print(f"  {kind} {n}: {wall:.2f} s, {rss:.0f} MB", flush=True)
    xs = [float(n) for n in sizes]
    a_t, b_t, r2_t = fit_line(xs, walls)
    a_m, b_m, r2_m = fit_line(xs, rsses)
    a_c, b_c, r2_c = fit_line(xs, cpu_totals)
    marginal_t = [
        (walls[i + 1] - walls[i]) / (sizes[i + 1] - sizes[i]) * 1000 for i in range(len(sizes) - 1)
    ]
    marginal_m = [
        (rsses[i + 1] - rsses[i]) / (sizes[i + 1] - sizes[i]) * 1024 for i in range(len(sizes) - 1)
    ]
    time_line = f"time: {a_t:.2f} s + {b_t * 1000:.2f} ms/test (r² {r2_t:.4f})"
    cpu_line = f"CPU time: {a_c:.2f} s + {b_c * 1000:.2f} ms/test (r² {r2_c:.4f})"
    rss_line = f"peak RSS: {a_m:.0f} MB + {b_m * 1024:.1f} KB/test (r² {r2_m:.4f})"
    if marginal_t:
        time_line += "; marginal ms/test " + ", ".join(f"{m:.2f}" for m in marginal_t)
        if marginal_t[0] > 0:
            time_line += f" (last/first {marginal_t[-1] / marginal_t[0]:.2f})"
        rss_line += "; marginal KB/test " + ", ".join(f"{m:.1f}" for m in marginal_m)
    what = f"{kind}{' (what-if: os.fsync disabled)' if no_fsync else ''}"
    headers = [
        "tests",
        "wall s",
        "each run",
        "wall ms/test",
        "CPU s",
        "peak RSS MB",
        "model calls",
        "load average",
    ]
    lines = [
        f"{what}: medians of {repeat} run(s) per size",
        table(headers, rows),
        time_line,
        cpu_line,
        rss_line,
    ]
    return "\n".join(lines)


def _sizes(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--echo", default="250,500,1000,2000", help="echo suite sizes")
    parser.add_argument("--model", default="50,100,200", help="embedded-model suite sizes")
    parser.add_argument("--max-tokens", type=int, default=8, help="max_tokens on the model")
    parser.add_argument("--repeat", type=int, default=3, help="echo runs per size (median)")
    parser.add_argument("--model-repeat", type=int, default=1, help="model runs per size")
    parser.add_argument("--work", type=Path, help="keep every run here")
    parser.add_argument(
        "--wait-policy", choices=("ACTIVE", "PASSIVE"), help="force OMP_WAIT_POLICY (default: none)"
    )
    parser.add_argument(
        "--what-if-no-fsync",
        action="store_true",
        help="also time the echo sizes with os.fsync disabled (a diagnostic, not skilleval)",
    )
    args = parser.parse_args()
    if args.wait_policy:
        os.environ["OMP_WAIT_POLICY"] = args.wait_policy
    work = args.work or Path(tempfile.mkdtemp(prefix="skilleval-scale-"))
    print(f"work directory: {work}")
    print(f"cores {os.cpu_count()}, load average {load_average()} (1, 5, 15 min)")
    parts = []
    if args.echo:
        parts.append(measure("echo", _sizes(args.echo), args.repeat, args.max_tokens, work))
        if args.what_if_no_fsync:
            parts.append(
                measure(
                    "echo", _sizes(args.echo), args.repeat, args.max_tokens, work / "no-fsync", True
                )
            )
    if args.model:
        parts.append(measure("model", _sizes(args.model), args.model_repeat, args.max_tokens, work))
    text = "\n\n".join(parts)
    print()
    print(text)
    print(f"load average at the end {load_average()}")
    (work / "report.txt").write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
