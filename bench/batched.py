"""What a user gets: batching against one at a time, a plain loop and llama.cpp's own decode
loop, on an idle machine and with busy processes (run by ``bench/run.py --batched``).

    .venv/bin/python bench/batched.py [--tests N] [--busy N] [--rounds R] [--sweep] [--work DIR]

No case chooses OMP_WAIT_POLICY: each waits as a user's run would (skilleval chooses from the
machine's state, docs/engine.md "How the threads wait"), and the ceilings take the threads and
the policy (a) recorded in its results.json (:func:`run_params`). Every case runs idle and then with
``--busy N`` processes spinning beside it (default: one per usable core; 0 skips it).

Cases, each in its own child process with a fresh SKILLEVAL_HOME (and, for the demo and the
bench suite, again with a home that kept only the verdicts the fresh run learnt once for good,
what every later run on the machine starts from; see below):

  demo, one       the demo suite one at a time: its copy with ``model: {provider: gguf,
                  parallel: 1}``, ``--no-cache``
  demo, default   ``skilleval run examples/commit-message/suite.yaml --no-cache`` (defaults:
                  lanes where the lane probe measures them faster, else one at a time)
  demo, width 4   the same with ``--jobs 4``
  (s)             the bench suite (ON and OFF arms, one llm-rubric judge call per reply), one
                  at a time: ``model: {provider: gguf, parallel: 1}``
  (a)             the same, batched: ``model: {provider: gguf, parallel: 4}``
  (e)             (a)'s requests replayed one at a time by a plain llama-cpp-python loop, in
                  the order that evaluates each prompt prefix once, with (a)'s threads
  (e0)            the same loop with llama-cpp-python's own thread defaults
  (L) ceiling     (a)'s batched schedule, recorded in (a) and replayed through the engine's
                  own decoder: the same admissions, prompt chunks, shared prefixes and KV
                  cells, the same model, threads, wait policy and sampling, and each request
                  ending at (a)'s tokens, with nothing else (bench/ceiling.py)
  (L0)            (a)'s requests through llama.cpp's low-level decode loop at (a)'s width,
                  each prompt evaluated whole at admission: the ceiling before (L), kept to
                  compare (bench/ceiling_prefill.py)

"Verdicts kept": a fresh home learns some things once, and keeps them for every later run: the
canary's verdict (a child process that loads llama.cpp), the kernel and lane probes' verdicts,
the model file's SHA-256 and the chat template's checks. The kept case runs in a home holding
only those (:func:`kept_home`: no response cache, no kept prompt prefixes, no runs), so it
measures a user's second and later runs, where the fresh case measures the first.

Reported per condition: wall seconds, generation tokens/s, peak RSS, lanes; width 4 and
the default ÷ one at a time on the demo; (a)/(e0) and (a)/(e) (target ≤ 0.7); skilleval's tokens/s ÷ the ceiling's
(target ≥ 0.9), and ÷ the all-at-once one's; the ceiling's two placements of prompt work
compared with every request waiting (bench/ceiling.py); and the memory-bandwidth bound,
model bytes per token ÷ measured read bandwidth, for context.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from busy import busy, conditions
from ceiling import read_bandwidth
from common import (
    BENCH,
    PYTHON,
    REPO,
    check,
    copy_home,
    copy_suite,
    load_average,
    median,
    run_child,
    table,
)

CASE = str(BENCH / "case.py")
DEMO = REPO / "examples" / "commit-message" / "suite.yaml"
TARGETS = {
    "a/e0": "≤ 0.7",
    "a/e": "≤ 0.7",
    "a/e, verdicts kept": "≤ 0.7",
    "demo w4/one": "≤ 0.9",
    "demo w4/one, verdicts kept": "≤ 0.9",
    "demo RSS w4/one": "≤ 1.3",
    "a tok/s ÷ ceiling": "≥ 0.9",
}


KEPT_OUT = ("kv", "runs", "cache.db")
"""What a home holds that a later run of another suite would not find: kept prompt prefixes,
runs, and the response cache (with its journal files)."""


def kept_home(fresh: Path, dest: Path) -> Path:
    """``dest``: a copy of the home ``fresh`` without its response cache, kept prompt prefixes
    and runs, so that only the verdicts learnt once for the machine and model are left."""
    return copy_home(fresh, dest, lambda name: name in KEPT_OUT or name.startswith("cache.db"))


def _kept(name: str, out: Path) -> Path:
    """The home for case ``name`` + "k", seeded from case ``name``'s fresh home."""
    return kept_home(out / f"home-{name}", out / f"home-{name}k")


def _skilleval(name: str, suite: Path, out: Path, home: Path | None = None) -> dict[str, Any]:
    load = load_average()
    report = out / f"{name}.json"
    child = run_child(
        [PYTHON, CASE, "skilleval", str(suite), str(report), "--record"],
        {"SKILLEVAL_HOME": str(home or out / f"home-{name}")},
        report,
    )
    check(child, f"case {name}")
    requests = str(out / f"{name}.requests.jsonl")
    return {
        "wall": child.wall_s,
        "rss": child.max_rss_mb,
        "load": load,
        "requests": requests,
        **child.report,
    }


def _demo_one_at_a_time(out: Path) -> Path:
    """The demo folder copied under ``out``, its model one call at a time."""
    dest = out / "demo-one"
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(DEMO.parent, dest)
    suite = dest / DEMO.name
    text = suite.read_text(encoding="utf-8")
    assert "\nmodel: default\n" in text
    one = "\nmodel: {provider: gguf, parallel: 1}\n"
    suite.write_text(text.replace("\nmodel: default\n", one), encoding="utf-8")
    return suite


def _demo(
    name: str, out: Path, *args: str, suite: Path = DEMO, home: Path | None = None
) -> dict[str, Any]:
    load = load_average()
    home = home or out / f"home-{name}"
    report = out / f"{name}.json"
    child = run_child(
        [
            PYTHON,
            "-m",
            "skilleval",
            "run",
            str(suite),
            "--no-cache",
            "-q",
            "-o",
            str(report),
            *args,
        ],
        {"SKILLEVAL_HOME": str(home)},
        report,
    )
    check(child, f"case {name}")
    env = child.report.get("environment", {})
    return {
        "wall": child.wall_s,
        "rss": child.max_rss_mb,
        "load": load,
        "width": env.get("batch_width"),
        "threads": env.get("threads"),
        "lanes": (env.get("lanes") or {}).get("count", 1),
        "policy": (env.get("wait_policy") or {}).get("policy"),
        "tok_s": (child.report.get("calls") or {}).get("generation_tokens_per_s"),
    }


def _replay(
    mode: str,
    name: str,
    out: Path,
    params: dict[str, Any],
    *extra: str,
    source: str = "a.requests.jsonl",
) -> dict[str, Any]:
    load = load_average()
    report = out / f"{name}.json"
    requests = out / source
    child = run_child(
        [PYTHON, CASE, mode, str(requests), str(report), json.dumps(params), *extra], None, report
    )
    check(child, f"case {name}", ok=(0,))
    data = child.report
    return {
        "wall": data["load_s"] + data["inference_s"],
        "rss": child.max_rss_mb,
        "load": load,
        **data,
    }


def run_params(case: dict[str, Any]) -> dict[str, Any]:
    """The model's parameters as skilleval's run used them, its threads and wait policy read
    from its results.json environment block (not recomputed here: the engine may choose
    them from the machine's state)."""
    env = case.get("document_environment") or {}
    threads = env.get("threads")
    if threads is None:
        raise SystemExit(f"{case['run_dir']}/results.json records no environment.threads")
    return {
        **case["model"],
        "n_threads": int(threads),
        "n_threads_batch": int(threads),
        "wait_policy": env.get("wait_policy"),
    }


def one_condition(n: int, out: Path) -> dict[str, dict[str, Any]]:
    """Every case once, in this order, into ``out``: each skilleval case fresh, then with
    the verdicts its fresh run kept (key + "k")."""
    out.mkdir(parents=True, exist_ok=True)
    cases: dict[str, dict[str, Any]] = {}
    one = _demo_one_at_a_time(out)
    demos: dict[str, tuple[str, ...]] = {"demo-1": (), "demo-w1": (), "demo-w4": ("--jobs", "4")}
    for key, args in demos.items():
        suite = one if key == "demo-1" else DEMO
        cases[key] = _demo(key, out, *args, suite=suite)
        cases[key + "k"] = _demo(key + "k", out, *args, suite=suite, home=_kept(key, out))
    sequential = copy_suite(out / "suite-s", n, "model: {provider: gguf, parallel: 1}")
    batched = copy_suite(out / "suite-a", n, "model: {provider: gguf, parallel: 4}")
    for key, suite in (("a", batched), ("s", sequential)):
        cases[key] = _skilleval(key, suite, out)
        cases[key + "k"] = _skilleval(key + "k", suite, out, home=_kept(key, out))
    params = cases["a"]["model"]
    width = int(params["batch_width"])
    cases["e"] = _replay("limit", "e", out, params)
    cases["e0"] = _replay(
        "limit", "e0", out, {**params, "n_threads": None, "n_threads_batch": None}
    )
    run = run_params(cases["a"])
    cases["L"] = _replay("ceiling", "L", out, run, source="a.schedule.json")
    cases["L0"] = _replay("ceiling-prefill", "L0", out, run, str(width))
    return cases


def _tok_s(case: dict[str, Any]) -> float | None:
    calls = case.get("document_calls") or {}
    figure = calls.get("generation_tokens_per_s") if calls else case.get("tokens_per_s")
    return case.get("tok_s") if figure is None else figure


def ratios(cases: dict[str, dict[str, Any]]) -> dict[str, float]:
    wall = {k: c["wall"] for k, c in cases.items()}
    a_tps, l_tps, l0_tps = _tok_s(cases["a"]), _tok_s(cases["L"]), _tok_s(cases["L0"])
    return {
        "demo w4/one": wall["demo-w4"] / wall["demo-1"],
        "demo default/one": wall["demo-w1"] / wall["demo-1"],
        "demo RSS w4/one": cases["demo-w4"]["rss"] / cases["demo-1"]["rss"],
        "demo RSS default/one": cases["demo-w1"]["rss"] / cases["demo-1"]["rss"],
        "demo w4/one, verdicts kept": wall["demo-w4k"] / wall["demo-1k"],
        "demo default/one, verdicts kept": wall["demo-w1k"] / wall["demo-1k"],
        "a/e0": wall["a"] / wall["e0"],
        "a/e": wall["a"] / wall["e"],
        "a/e, verdicts kept": wall["ak"] / wall["e"],
        "a/s": wall["a"] / wall["s"],
        "a/s, verdicts kept": wall["ak"] / wall["sk"],
        "bench RSS a/s": cases["a"]["rss"] / cases["s"]["rss"],
        "a tok/s ÷ ceiling": (a_tps or 0.0) / l_tps if l_tps else float("nan"),
        "a tok/s ÷ all-at-once (L0)": (a_tps or 0.0) / l0_tps if l0_tps else float("nan"),
        "ceiling tok/s ÷ all-at-once (L/L0)": (l_tps or 0.0) / l0_tps if l0_tps else float("nan"),
        "all waiting: whole prompts ÷ a chunk a step": _placement(cases["L"]),
    }


def _placement(ceiling: dict[str, Any]) -> float:
    """The ceiling's tokens/s with every request waiting, prompts evaluated whole as they
    begin ÷ a chunk a step between decode steps (the engine's way)."""
    waiting = ceiling.get("all_waiting") or {}
    chunked = (waiting.get("chunk_a_step") or {}).get("tokens_per_s")
    whole = (waiting.get("whole_prompts") or {}).get("tokens_per_s")
    return whole / chunked if whole and chunked else float("nan")


LABELS = {
    "demo-1": "demo suite, one at a time (parallel: 1)",
    "demo-1k": "  the same, verdicts kept",
    "demo-w1": "demo suite, the default",
    "demo-w1k": "  the same, verdicts kept",
    "demo-w4": "demo suite, width 4 (--jobs 4)",
    "demo-w4k": "  the same, verdicts kept",
    "s": "(s) bench suite, one at a time",
    "sk": "  the same, verdicts kept",
    "a": "(a) bench suite, batched, width 4",
    "ak": "  the same, verdicts kept",
    "e": "(e) sequential llama-cpp-python loop",
    "e0": "(e0) the same loop, llama-cpp-python's default threads",
    "L": "(L) ceiling: (a)'s schedule, the engine's decoder alone",
    "L0": "(L0) all-at-once prefill, llama.cpp's decode loop",
}


def report(rounds: dict[str, list[dict[str, dict[str, Any]]]], n: int, bound: str) -> str:
    lines = [
        f"bench suite: {n} tests × 2 arms + 1 judge call each; demo: examples/commit-message;",
        "median over rounds; load average before each case in the last round (1, 5, 15 min)",
        "",
    ]
    for condition, runs in rounds.items():
        rows = []
        for key, label in LABELS.items():
            last = runs[-1][key]
            tps = [_tok_s(r[key]) for r in runs]
            rows.append(
                [
                    label,
                    f"{median([r[key]['wall'] for r in runs]):.1f}",
                    str(
                        last.get("width")
                        or last.get("document_environment", {}).get("batch_width")
                        or ""
                    ),
                    str(
                        last.get("lanes")
                        or (last.get("document_environment", {}).get("lanes") or {}).get("count")
                        or 1
                    ),
                    "" if None in tps else f"{median([t for t in tps if t is not None]):.1f}",
                    f"{median([r[key]['rss'] for r in runs]):.0f}",
                    str(last.get("policy") or (last.get("wait_policy") or {}).get("policy") or ""),
                    last["load"],
                ]
            )
        lines += [f"## {condition}", ""]
        lines.append(
            table(
                ["case", "wall s", "width", "lanes", "tok/s", "peak RSS MB", "policy", "load"],
                rows,
            )
        )
        lines.append("")
        per_round = [ratios(r) for r in runs]
        ratio_rows = [
            [
                name,
                f"{median([r[name] for r in per_round]):.3f}",
                ", ".join(f"{r[name]:.3f}" for r in per_round),
                TARGETS.get(name, ""),
            ]
            for name in per_round[0]
        ]
        lines.append(table(["ratio", "median", "rounds", "target"], ratio_rows))
        same = runs[-1]["e"].get("replies_identical")
        lines.append(
            f"\nreplies of (e) identical to (a)'s: {same} of {runs[-1]['e'].get('model_calls')}"
        )
        equal, both = same_replies(runs[-1]["a"]["requests"], runs[-1]["s"]["requests"])
        lines.append(
            f"replies of (a), batched, identical to (s)'s, one at a time: {equal} of {both}"
        )
        for name, run in (runs[-1]["L"].get("all_waiting") or {}).items():
            lines.append(
                f"(L) with every request waiting, {name.replace('_', ' ')}: "
                f"{run.get('tokens_per_s')} tok/s, {run.get('decode_steps')} decode steps, "
                f"{run.get('tokens_evaluated')} prompt tokens evaluated, replies identical to "
                f"(a)'s: {run.get('replies_identical')}"
            )
        for key in ("L", "L0"):
            c = runs[-1][key]
            lines.append(
                f"replies of ({key}) identical to (a)'s: {c.get('replies_identical')} of "
                f"{c.get('model_calls')}; prompt tokens evaluated {c.get('tokens_evaluated')}"
                f" ((a): {runs[-1]['a'].get('tokens_evaluated')}); threads {c.get('threads')}"
            )
        lines.append("")
    lines.append(bound)
    return "\n".join(lines)


def same_replies(a: str, s: str) -> tuple[int, int]:
    """How many requests both runs made (their ``*.requests.jsonl``) got the same reply."""

    def replies(path: str) -> dict[str, str]:
        out = {}
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            out[json.dumps([row["messages"], row["json_schema"], row["max_tokens"]])] = row["text"]
        return out

    ra, rs = replies(a), replies(s)
    both = ra.keys() & rs.keys()
    return sum(ra[k] == rs[k] for k in both), len(both)


def bandwidth_bound() -> str:
    from skilleval.engine.embedded import default_model_path

    model = default_model_path()
    size = model.stat().st_size
    bandwidth = read_bandwidth()
    return (
        f"memory-bandwidth bound: {model.name} is {size / 1e6:.1f} MB, every decode step reads "
        f"it once; measured read bandwidth {bandwidth / 1e9:.1f} GB/s, so at most "
        f"{bandwidth / size:.0f} steps/s (one token each at width 1, four at width 4)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=20, help="tests in the suite (default 20)")
    parser.add_argument(
        "--busy", type=int, help="busy processes for the contended runs (default: one per core)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="rounds per condition (default 1)")
    parser.add_argument("--work", type=Path, help="keep every run and log here")
    parser.add_argument("--sweep", action="store_true", help="(kept for compatibility; ignored)")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="skilleval-bench-batched-"))
    print(f"work directory: {work}")
    print(f"cores usable {len(os.sched_getaffinity(0))}, load average {load_average()}")
    start = time.perf_counter()
    rounds: dict[str, list[dict[str, dict[str, Any]]]] = {}
    for r in range(args.rounds):
        # Conditions alternate within a round, so both see the machine's drift alike.
        for condition, count in conditions(args.busy):
            with busy(count):
                out = work / f"round{r + 1}-{condition.replace(' ', '')}"
                rounds.setdefault(condition, []).append(one_condition(args.tests, out))
    text = report(rounds, args.tests, bandwidth_bound())
    print(f"done in {time.perf_counter() - start:.0f} s\n")
    print(text)
    (work / "report.txt").write_text(text + "\n", encoding="utf-8")
    print(f"load average at the end {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
