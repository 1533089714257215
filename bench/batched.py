"""The batched case and the physical limit (run by ``bench/run.py --batched``).

    .venv/bin/python bench/batched.py [--tests N] [--sweep] [--work DIR]

Cases, each in its own child process, on the benchmark suite (ON and OFF arms, one
llm-rubric judge call per reply), fresh SKILLEVAL_HOME each:

  (s) skilleval, one at a time  ``model: {provider: gguf, parallel: 1}``
  (a) skilleval, batched        ``model: {provider: gguf, parallel: 4}``
  (e) sequential loop           (a)'s requests replayed one at a time with llama-cpp-python
                                alone, in the order that evaluates each prompt prefix once,
                                with (a)'s thread counts
  (e0) plain sequential loop    the same, with llama-cpp-python's own thread defaults (what
                                a plain loop gets when it passes none)
  (p) the physical limit        the same prompts and as many generated tokens through a
                                minimal batched loop over llama.cpp's low-level API, at (a)'s
                                width: what the hardware does with no harness at all

With ``--sweep``: the physical limit at widths 1, 2, 4, 8 with 1 thread and with every
usable core, and (a) with 1 thread, to choose the defaults.

Wall times: (s) and (a) are whole processes (imports, model load, run, results written);
(e) and (p) are model load plus inference, with their prompt preparation left out.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from common import BENCH, PYTHON, check, copy_suite, load_average, run_child, table

CASE = str(BENCH / "case.py")

TARGETS = {"a/e0": 0.7, "a/e": 0.7}


def _skilleval(name: str, suite: Path, out: Path) -> dict[str, Any]:
    load = load_average()
    report = out / f"{name}.json"
    child = run_child(
        [PYTHON, CASE, "skilleval", str(suite), str(report), "--record"],
        {"SKILLEVAL_HOME": str(out / f"home-{name}")},
        report,
    )
    check(child, f"case {name}")
    return {"wall": child.wall_s, "load": load, **child.report}


def _replay(mode: str, name: str, out: Path, params: dict[str, Any], *extra: str) -> dict[str, Any]:
    load = load_average()
    report = out / f"{name}.json"
    requests = out / "a.requests.jsonl"
    child = run_child(
        [PYTHON, CASE, mode, str(requests), str(report), json.dumps(params), *extra], None, report
    )
    check(child, f"case {name}", ok=(0,))
    data = child.report
    return {"wall": data["load_s"] + data["inference_s"], "load": load, **data}


def one_round(n: int, out: Path, sweep: bool) -> dict[str, dict[str, Any]]:
    out.mkdir(parents=True, exist_ok=True)
    cases: dict[str, dict[str, Any]] = {}
    sequential = copy_suite(out / "suite-s", n, "model: {provider: gguf, parallel: 1}")
    batched = copy_suite(out / "suite-a", n, "model: {provider: gguf, parallel: 4}")
    cases["a"] = _skilleval("a", batched, out)
    cases["s"] = _skilleval("s", sequential, out)
    params = cases["a"]["model"]
    width = int(params["batch_width"])
    cases["e"] = _replay("limit", "e", out, params)
    cases["e0"] = _replay(
        "limit", "e0", out, {**params, "n_threads": None, "n_threads_batch": None}
    )
    cases["p"] = _replay("physical", "p", out, params, str(width))
    if sweep:
        cases |= sweep_limit(out, params)
        one = copy_suite(out / "suite-a1", n, "model: {provider: gguf, threads: 1}")
        cases["a-t1"] = _skilleval("a-t1", one, out)
    return cases


def sweep_limit(out: Path, params: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The physical limit over (a)'s requests at widths 1, 2, 4, 8, with 1 thread and with
    every usable core."""
    cases: dict[str, dict[str, Any]] = {}
    cores = len(os.sched_getaffinity(0))
    for threads in sorted({1, cores}):
        for w in (1, 2, 4, 8):
            p = {**params, "n_threads": threads, "n_threads_batch": threads}
            name = f"p-t{threads}-w{w}"
            cases[name] = _replay("physical", name, out, p, str(w))
    return cases


def sweep_report(cases: dict[str, dict[str, Any]]) -> str:
    rows = [
        [name, str(c["threads"]), str(c["width"]), f"{c['inference_s']:.1f}", _tok_s(c), c["load"]]
        for name, c in cases.items()
    ]
    return table(["case", "threads", "width", "inference s", "tok/s", "load"], rows)


def ratios(cases: dict[str, dict[str, Any]]) -> dict[str, float]:
    a, s, e, e0, p = (cases[k]["wall"] for k in ("a", "s", "e", "e0", "p"))
    return {
        "a/e0": a / e0,
        "a/e": a / e,
        "s/e": s / e,
        "a/s": a / s,
        "a/p": a / p,
        "p/e": p / e,
    }


def _tok_s(case: dict[str, Any]) -> str:
    calls = case.get("document_calls") or {}
    figure = calls.get("generation_tokens_per_s") if calls else case.get("tokens_per_s")
    return "" if figure is None else f"{figure:.1f}"


def report(cases: dict[str, dict[str, Any]], n: int) -> str:
    rows = []
    labels = {
        "s": "(s) skilleval, one at a time",
        "a": "(a) skilleval, batched",
        "e": "(e) sequential llama-cpp-python loop",
        "e0": "(e0) the same loop, llama-cpp-python's default threads",
        "p": "(p) physical limit, batched low-level loop",
    }
    for key, case in cases.items():
        env = case.get("document_environment") or {}
        width = env.get("batch_width") or case.get("width") or ""
        threads = env.get("threads") or case.get("threads") or ""
        rows.append(
            [
                labels.get(key, key),
                f"{case['wall']:.1f}",
                str(width),
                str(threads),
                str(case.get("completion_tokens", "")),
                _tok_s(case),
                case["load"],
            ]
        )
    lines = [
        f"{n} tests × 2 arms + 1 judge call each; load average before each case (1, 5, 15 min)",
        "",
        table(["case", "s", "width", "threads", "generated", "tok/s busy", "load"], rows),
        "",
    ]
    figures = ratios(cases)
    ratio_rows = []
    for name, value in figures.items():
        target = TARGETS.get(name)
        ratio_rows.append([name, f"{value:.3f}", "" if target is None else f"≤ {target}"])
    lines.append(table(["ratio", "measured", "target"], ratio_rows))
    same = cases["e"].get("replies_identical")
    lines.append("")
    lines.append(f"replies of (e) identical to (a)'s: {same} of {cases['e'].get('model_calls')}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=20, help="tests in the suite (default 20)")
    parser.add_argument("--sweep", action="store_true", help="also sweep threads and widths")
    parser.add_argument("--work", type=Path, help="keep every run and log here")
    parser.add_argument(
        "--sweep-from",
        type=Path,
        metavar="DIR",
        help="only sweep the physical limit over the requests of an earlier run's DIR",
    )
    args = parser.parse_args(argv)
    if args.sweep_from is not None:
        params = json.loads((args.sweep_from / "a.json").read_text(encoding="utf-8"))["model"]
        print(f"load average {load_average()}")
        print(sweep_report(sweep_limit(args.sweep_from, params)))
        print(f"load average at the end {load_average()}")
        return 0
    work = args.work or Path(tempfile.mkdtemp(prefix="skilleval-bench-batched-"))
    print(f"work directory: {work}")
    print(f"cores usable {len(os.sched_getaffinity(0))}, load average {load_average()}")
    start = time.perf_counter()
    cases = one_round(args.tests, work, args.sweep)
    text = report(cases, args.tests)
    print(f"done in {time.perf_counter() - start:.0f} s\n")
    print(text)
    (work / "report.txt").write_text(text + "\n", encoding="utf-8")
    print(f"load average at the end {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
