"""Lanes: one decoder per core with one thread each, against one decoder with a run's threads.

    .venv/bin/python bench/lanes.py [--rounds R] [--steps N] [--demo-rounds D] [--busy N]

A what-if for the engine's design, like bench/kernels.py: it forces thread counts a default
run does not use, to measure whether they would be worth using. With T threads (what a run
would choose now: engine/wait_policy.py) and C usable cores, it compares

* **micro**: one context on the embedded model decoding one sequence with T threads, against
  C contexts with one thread each, decoding one sequence each at the same time (a Python
  thread per context: llama.cpp releases the GIL). Milliseconds per token for single-token
  steps at position 300 and for 128-token prompt batches, medians over R rounds of N steps;
  and whether a step's logits are bitwise the same with one thread and with T;
* **demo**: the demo suite (examples/commit-message) run once with the threads a run
  chooses, against C runs of one shard each (``--shard K/C``), at the same time, each with
  ``threads: 1`` in its model block. Every configuration has a home of its own, warmed by one
  run first (the canary, the kernel probe and the prefix store are then what a user's second
  run finds), and every run is ``--no-cache``. D rounds, the two interleaved; wall seconds.

``--busy N`` runs both again with N spinning processes beside them (default: one per core).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from busy import busy, conditions
from common import child_json
from kernels import Context

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "examples" / "commit-message"
SKILLEVAL = Path(sys.executable).parent / "skilleval"
POSITION = 300
CHUNK = 128
CHILD = (sys.executable, __file__)


def _tokens(length: int) -> list[int]:
    return [100 + (p * 7) % 5000 for p in range(length)]


def _steps(ctx: Context, steps: int, gate: threading.Barrier | None, out: list[float]) -> None:
    """Decode ``steps`` single-token steps at POSITION after a prompt; seconds per step."""
    ctx.clear(0)
    ctx.decode([(t, p, 0, False) for p, t in enumerate(_tokens(POSITION))])
    if gate is not None:
        gate.wait()
    start = time.perf_counter()
    for k in range(steps):
        ctx.clear(0, POSITION)
        ctx.decode([(200 + k, POSITION, 0, True)])
    out.append((time.perf_counter() - start) / steps)


def _prompts(ctx: Context, steps: int, gate: threading.Barrier | None, out: list[float]) -> None:
    """Evaluate a CHUNK-token prompt ``steps`` times; seconds per token."""
    tokens = _tokens(CHUNK)
    if gate is not None:
        gate.wait()
    start = time.perf_counter()
    for _ in range(steps):
        ctx.clear(0)
        ctx.decode([(t, p, 0, p == CHUNK - 1) for p, t in enumerate(tokens)])
    out.append((time.perf_counter() - start) / (steps * CHUNK))


def _together(work: Any, lanes: list[Context], steps: int) -> float:
    """Seconds per token over every lane, the lanes working at the same time."""
    gate = threading.Barrier(len(lanes))
    out: list[float] = []
    threads = [threading.Thread(target=work, args=(c, steps, gate, out)) for c in lanes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return max(out) / len(lanes)  # the slowest lane's time, for all lanes' tokens


def micro(path: Path, threads: int, count: int, rounds: int, steps: int) -> dict[str, Any]:
    one = Context(path, threads)
    lanes = [Context(path, 1) for _ in range(count)]
    try:
        rows: dict[str, list[float]] = {k: [] for k in ("step_one", "step_lanes")}
        rows.update({"prompt_one": [], "prompt_lanes": []})
        for _ in range(rounds):
            out: list[float] = []
            _steps(one, steps, None, out)
            rows["step_one"].append(out[0])
            rows["step_lanes"].append(_together(_steps, lanes, steps))
            out = []
            _prompts(one, max(1, steps // 10), None, out)
            rows["prompt_one"].append(out[0])
            rows["prompt_lanes"].append(_together(_prompts, lanes, max(1, steps // 10)))
        ms = {k: statistics.median(v) * 1000 for k, v in rows.items()}
        for ctx in (one, lanes[0]):
            ctx.clear(0)
            ctx.decode([(t, p, 0, False) for p, t in enumerate(_tokens(POSITION))])
            ctx.decode([(5, POSITION, 0, True)])
        same = one.logits(0) == lanes[0].logits(0)
        return {
            "step_ms_per_token": {
                "one": round(ms["step_one"], 3),
                "lanes": round(ms["step_lanes"], 3),
            },
            "prompt_ms_per_token": {
                "one": round(ms["prompt_one"], 3),
                "lanes": round(ms["prompt_lanes"], 3),
            },
            "step_ratio": round(ms["step_lanes"] / ms["step_one"], 3),
            "prompt_ratio": round(ms["prompt_lanes"] / ms["prompt_one"], 3),
            "same_bits": same,
        }
    finally:
        one.close()
        for lane in lanes:
            lane.close()


def child(rounds: int, steps: int) -> int:
    """The micro case in a process of its own: threads and wait policy chosen as a run
    chooses them, before llama.cpp's library loads."""
    from skilleval.engine.embedded import default_model_path
    from skilleval.engine.llama_config import default_threads
    from skilleval.engine.wait_policy import choose, choose_threads

    policy = choose()
    threads = choose_threads(default_threads()).count
    lanes = len(os.sched_getaffinity(0))
    found = micro(Path(default_model_path()), threads, lanes, rounds, steps) if lanes > 1 else {}
    print(json.dumps({"policy": policy.policy, "threads": threads, "lanes": lanes, **found}))
    return 0


def _suite_copies(work: Path) -> tuple[Path, Path]:
    """The demo folder twice under ``work``: as it is, and with ``threads: 1`` in its model."""
    from skilleval.engine.embedded import default_model_path

    plain = work / "plain"
    shutil.copytree(DEMO, plain)
    laned = work / "lanes"
    shutil.copytree(DEMO, laned)
    suite = laned / "suite.yaml"
    text = suite.read_text(encoding="utf-8")
    model = f"model: {{provider: gguf, path: {default_model_path()}, threads: 1}}"
    if "\nmodel: default\n" not in text:
        raise SystemExit("the demo suite's `model: default` line moved; update bench/lanes.py")
    suite.write_text(text.replace("\nmodel: default\n", f"\n{model}\n"), encoding="utf-8")
    # The plain copy names the model by its path too, so the two differ only in threads.
    plain_suite = plain / "suite.yaml"
    plain_text = plain_suite.read_text(encoding="utf-8")
    by_path = f"model: {{provider: gguf, path: {default_model_path()}}}"
    plain_suite.write_text(plain_text.replace("\nmodel: default\n", f"\n{by_path}\n"), "utf-8")
    return plain_suite, suite


def _run(suite: Path, home: Path, shard: str | None = None) -> subprocess.Popen[bytes]:
    argv = [str(SKILLEVAL), "run", str(suite), "--no-cache", "-q"]
    if shard:
        argv += ["--shard", shard]
    env = {**os.environ, "SKILLEVAL_HOME": str(home)}
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _wall(procs: list[subprocess.Popen[bytes]], start: float) -> float:
    for proc in procs:
        if proc.wait() > 3:
            raise SystemExit(f"a demo run failed with exit code {proc.returncode}")
    return time.perf_counter() - start


def demo(work: Path, lanes: int, rounds: int) -> dict[str, Any]:
    plain, laned = _suite_copies(work)
    homes = {"one": work / "home-one", "lanes": work / "home-lanes"}
    shards = [f"{k}/{lanes}" for k in range(1, lanes + 1)]
    _wall([_run(plain, homes["one"])], time.perf_counter())
    _wall([_run(laned, homes["lanes"], s) for s in shards], time.perf_counter())
    walls: dict[str, list[float]] = {"one": [], "lanes": []}
    for _ in range(rounds):
        start = time.perf_counter()
        walls["one"].append(_wall([_run(plain, homes["one"])], start))
        start = time.perf_counter()
        walls["lanes"].append(_wall([_run(laned, homes["lanes"], s) for s in shards], start))
    ratios = [b / a for a, b in zip(walls["one"], walls["lanes"], strict=True)]
    return {
        "wall_s": {k: [round(x, 2) for x in v] for k, v in walls.items()},
        "median_ratio": round(statistics.median(ratios), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--demo-rounds", type=int, default=4)
    parser.add_argument("--busy", type=int, help="busy processes (default: one per core; 0: none)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.rounds, args.steps)
    report: dict[str, Any] = {}
    for condition, count in conditions(args.busy):
        with busy(count):
            time.sleep(0.5 if count else 0)
            found = child_json(
                [*CHILD, "--rounds", str(args.rounds), "--steps", str(args.steps), "--child"]
            )
            lanes = found["lanes"]
            if lanes > 1 and args.demo_rounds > 0:
                with tempfile.TemporaryDirectory(prefix="skilleval-lanes-") as work:
                    found["demo"] = demo(Path(work), lanes, args.demo_rounds)
        report[condition] = found
        print(
            f"\n{condition}: one decoder with {found['threads']} threads (wait policy "
            f"{found['policy']}), or {lanes} lanes"
        )
        if lanes < 2:
            print("one core: nothing to split into lanes")
            continue
        step, prompt = found["step_ms_per_token"], found["prompt_ms_per_token"]
        print("| case | one decoder, a run's threads | lanes, one thread each | ratio |")
        print("|---|---|---|---|")
        print(
            f"| decode step, ms a token | {step['one']:.2f} | {step['lanes']:.2f} | "
            f"{found['step_ratio']:.2f} |"
        )
        print(
            f"| prompt, ms a token | {prompt['one']:.2f} | {prompt['lanes']:.2f} | "
            f"{found['prompt_ratio']:.2f} |"
        )
        if "demo" in found:
            d = found["demo"]
            print(
                f"| demo suite, wall s | {', '.join(f'{x:.1f}' for x in d['wall_s']['one'])} | "
                f"{', '.join(f'{x:.1f}' for x in d['wall_s']['lanes'])} | "
                f"{d['median_ratio']:.2f} (median of rounds) |"
            )
        same = "yes" if found["same_bits"] else "no"
        print(f"same bits with one thread and {found['threads']}: {same}")
    print("\n" + json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
