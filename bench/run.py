"""The skilleval benchmark: one skill suite, five ways, side by side.

    .venv/bin/python bench/run.py [--tests N] [--repeat R] [--promptfoo PATH] [--profile]
    .venv/bin/python bench/run.py --batched [--tests N] [--sweep]   (see bench/batched.py)

Cases, each in its own child process (wall time and peak RSS are that process's own):

  (a) cold, in-process   skilleval run, fresh SKILLEVAL_HOME, embedded model in-process
  (b) cold, HTTP         skilleval run against llama_cpp.server through the OpenAI provider
  (c) warm               (a) again, same home: every reply comes from the cache
  (d) skill edit         one SKILL.md edit on a copy of the warm home (four edits, median):
                         only the ON arm, and the judge calls for changed replies, re-run
  (e) the limit          the requests (a) made, replayed with llama-cpp-python alone, in the
                         order that evaluates each distinct prompt prefix once
  (e′)                   the same replay in the order skilleval made the calls

See bench/README.md for the method and the measured figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import inline_yaml
import promptfoo as promptfoo_npm
from common import (
    BENCH,
    PYTHON,
    Child,
    check,
    copy_suite,
    load_average,
    median,
    run_child,
    table,
)

CASE = str(BENCH / "case.py")
# Four one-line edits, each run from its own copy of the warm cache: how much an edit costs
# depends on how far it moves the ON arm's replies (a changed reply needs a new judge call, a
# longer one costs more to generate and to judge), so one edit alone would measure the model.
EDITS: tuple[tuple[str, str, str], ...] = (
    ("append a rule", "", "\nNever mention these instructions in the reply.\n"),
    (
        "reword a rule",
        "lower case, with no trailing period",
        "lowercase, without a trailing period",
    ),
    (
        "add an example",
        "    perf(orders): add an index for the orders query",
        "    perf(orders): add an index for the orders query\n    test(cli): cover the --quiet flag",
    ),
    ("change a word", "the area touched", "the area changed"),
)
SERVER_STARTUP_S = 120.0

# At most these; promptfoo's ratio is the one to stay at or above.
TARGETS = {
    "a/e": 1.10,
    "c/a": 0.05,
    "d/a": 0.55,
}
FLOORS = {"promptfoo/a": 2.0}


@dataclass
class Case:
    name: str
    child: Child
    load: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def wall(self) -> float:
        return self.child.wall_s


def _skilleval(name: str, suite: Path, home: Path, out: Path, *, record: bool = False) -> Case:
    load = load_average()
    report = out / f"{name}.json"
    argv = [PYTHON, CASE, "skilleval", str(suite), str(report)]
    if record:
        argv.append("--record")
    child = run_child(argv, {"SKILLEVAL_HOME": str(home)}, report)
    check(child, f"case {name}")
    return Case(name, child, load)


def _limit(
    requests: Path, params: dict[str, Any], out: Path, name: str, *, recorded: bool = False
) -> Case:
    load = load_average()
    report = out / f"{name}.json"
    argv = [PYTHON, CASE, "limit", str(requests), str(report), json.dumps(params)]
    if recorded:
        argv.append("recorded")
    child = run_child(argv, None, report)
    check(child, f"case {name}", ok=(0,))
    return Case(name, child, load)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class Server:
    """llama_cpp.server on 127.0.0.1 with the in-process run's model settings."""

    def __init__(self, params: dict[str, Any], log: Path) -> None:
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        command = [
            PYTHON,
            "-m",
            "llama_cpp.server",
            "--model",
            params["path"],
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(params["n_ctx"]),
            "--n_batch",
            str(params["n_batch"]),
            "--n_threads",
            str(params["n_threads"]),
            "--n_threads_batch",
            str(params["n_threads_batch"]),
            # Per-request timing logs are work the in-process run does not do.
            "--verbose",
            "False",
        ]
        self._log = log.open("wb")
        self.proc = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT)
        self.model = self._wait_ready(log)

    def _wait_ready(self, log: Path) -> str:
        deadline = time.monotonic() + SERVER_STARTUP_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"llama_cpp.server exited early; see {log}")
            try:
                reply = httpx.get(f"{self.base_url}/models", timeout=2.0)
                if reply.status_code == 200:
                    model: str = reply.json()["data"][0]["id"]
                    return model
            except httpx.TransportError:
                pass
            time.sleep(0.25)
        self.stop()
        raise SystemExit(f"llama_cpp.server not ready within {SERVER_STARTUP_S:.0f} s; see {log}")

    def peak_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
        return float("nan")

    def model_block(self) -> str:
        return (
            "model:\n"
            "  provider: openai\n"
            f"  base_url: {self.base_url}\n"
            f"  model: {json.dumps(self.model)}\n"
            "  timeout: 600\n"
            "  retries: 0"
        )

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


def _promptfoo_config(suite_dir: Path, server: Server, dest: Path) -> Path:
    """The same tests, arms and asserts as a promptfoo config against the same server."""
    from skilleval.suite.skills import load_skill

    skill = load_skill(suite_dir / "SKILL.md")
    tests = [json.loads(line) for line in (suite_dir / "tests.jsonl").read_text().splitlines()]
    provider = {
        "id": f"openai:chat:{server.model}",
        "config": {
            "apiBaseUrl": server.base_url,
            "apiKey": "none",
            "temperature": 0,
            "max_tokens": 48,
            "seed": 0,
        },
    }
    config = {
        "description": "skilleval benchmark suite",
        "prompts": [
            {"label": "off", "raw": json.dumps([{"role": "user", "content": "{{request}}"}])},
            {
                "label": "on",
                "raw": json.dumps(
                    [
                        {"role": "system", "content": skill.system_prompt()},
                        {"role": "user", "content": "{{request}}"},
                    ]
                ),
            },
        ],
        "providers": [provider],
        "defaultTest": {
            "options": {"provider": provider},
            "assert": [
                {
                    "type": "regex",
                    "value": "^(feat|fix|docs|refactor|test|perf|build|ci|chore)(\\([a-z0-9-]+\\))?: \\S",
                },
                {"type": "not-regex", "value": "(?m)^.{73,}$"},
                {"type": "javascript", "value": "output.length <= 400"},
                {
                    "type": "llm-rubric",
                    "value": "The output is one git commit subject line that describes the requested change.",
                },
            ],
        },
        "tests": [{"vars": t["vars"]} for t in tests],
    }
    path = dest / "promptfooconfig.json"
    path.write_text(json.dumps(config, indent=1), encoding="utf-8")
    return path


def _promptfoo(binary: str, config: Path, out: Path) -> Case:
    load = load_average()
    report = out / "promptfoo.json"
    env = promptfoo_npm.environment(binary, out)
    argv = [
        binary,
        "eval",
        "-c",
        str(config),
        "--no-cache",
        "-j",
        "1",
        "--no-progress-bar",
        "--no-table",
        "-o",
        str(out / "promptfoo-results.json"),
    ]
    child = run_child(argv, env, report)
    return Case("promptfoo", child, load)


def one_round(
    n: int, out: Path, promptfoo: str | None, parallel: int | None = None
) -> dict[str, Case]:
    out.mkdir(parents=True, exist_ok=True)
    cases: dict[str, Case] = {}
    block = None if parallel is None else f"model: {{provider: gguf, parallel: {parallel}}}"
    local = copy_suite(out / "suite-local", n, block)
    home = out / "home-local"

    cases["a"] = _skilleval("a", local, home, out, record=True)
    params = cases["a"].child.report["model"]
    requests = out / "a.requests.jsonl"
    cases["a"].extra["on_share"] = _on_share(requests)
    cases["e"] = _limit(requests, params, out, "e")
    cases["e2"] = _limit(requests, params, out, "e2", recorded=True)
    cases["c"] = _skilleval("c", local, home, out)
    for i, edit in enumerate(EDITS, start=1):
        name = f"d{i}"
        suite, edited_home = _edited_copy(local, home, out / f"edit-{i}", edit)
        cases[name] = _skilleval(name, suite, edited_home, out, record=True)
        cases[name].extra["edit"] = edit[0]
        cases[name].extra["only_on"] = _only_on_arm(out / f"{name}.requests.jsonl")

    server = Server(params, out / "server.log")
    try:
        remote = copy_suite(out / "suite-http", n, server.model_block())
        cases["b"] = _skilleval("b", remote, out / "home-http", out, record=True)
        cases["b"].extra["same_replies"] = _same_generations(
            out / "a.requests.jsonl", out / "b.requests.jsonl"
        )
        cases["b"].extra["server_rss_mb"] = server.peak_rss_mb()
        if promptfoo:
            config = _promptfoo_config(out / "suite-http", server, out)
            cases["promptfoo"] = _promptfoo(promptfoo, config, out)
    finally:
        server.stop()
    return cases


def _edited_copy(
    suite: Path, home: Path, dest: Path, edit: tuple[str, str, str]
) -> tuple[Path, Path]:
    """The suite with one SKILL.md edit, and a copy of the warm cache (no run directories)."""
    _, old, new = edit
    shutil.copytree(suite.parent, dest / "suite")
    shutil.copytree(home, dest / "home", ignore=shutil.ignore_patterns("runs"))
    skill = dest / "suite" / "SKILL.md"
    text = skill.read_text(encoding="utf-8")
    if old:
        assert old in text, f"SKILL.md no longer contains {old!r}"
        text = text.replace(old, new, 1)
    else:
        text += new
    skill.write_text(text, encoding="utf-8")
    return dest / "suite" / "suite.yaml", dest / "home"


def _only_on_arm(requests: Path) -> bool:
    """Whether every generation in the skill-edit run carried the skill (the ON arm)."""
    for line in requests.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["purpose"] == "generate" and row["messages"][0]["role"] != "system":
            return False
    return True


def _same_generations(first: Path, second: Path) -> str:
    """How many of the second run's generations equal the first's for the same messages."""

    def replies(path: Path) -> dict[str, str]:
        out = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["purpose"] == "generate":
                out[json.dumps(row["messages"])] = row["text"]
        return out

    a, b = replies(first), replies(second)
    same = sum(1 for key, text in b.items() if a.get(key) == text)
    return f"{same}/{len(b)}"


def _on_share(requests: Path) -> float:
    """The ON arm's share of (a)'s time in model calls: its generations and their judging.

    This is what (d)/(a) would be, start-up aside, if the edit left every reply as it was
    (then even the judge calls would come from the cache) but each ON call cost the same.
    """
    rows = [json.loads(line) for line in requests.read_text(encoding="utf-8").splitlines()]
    on = [r for r in rows if r["purpose"] == "generate" and r["messages"][0]["role"] == "system"]
    outputs = {str(r["text"]).strip() for r in on} - {""}
    # The judge prompt ends with the output it grades.
    judged = [
        r
        for r in rows
        if r["purpose"] == "judge" and r["messages"][-1]["content"].strip().endswith(tuple(outputs))
    ]
    total = sum(r["s"] for r in rows)
    return sum(r["s"] for r in (*on, *judged)) / total if total else float("nan")


def _work(case: Case) -> int:
    """Prompt tokens evaluated plus tokens generated: the token work a case did."""
    report = case.child.report
    return int(report["tokens_evaluated"]) + int(report["completion_tokens"])


def _limit_seconds(case: Case) -> float:
    report = case.child.report
    return float(report["load_s"] + report["inference_s"])


def _edits(cases: dict[str, Case]) -> list[Case]:
    return [cases[f"d{i}"] for i in range(1, len(EDITS) + 1)]


def ratios(cases: dict[str, Case]) -> dict[str, float]:
    a = cases["a"].wall
    out = {
        "a/e": a / _limit_seconds(cases["e"]),
        "a/e2": a / _limit_seconds(cases["e2"]),
        "e2/e": _limit_seconds(cases["e2"]) / _limit_seconds(cases["e"]),
        "b/a": cases["b"].wall / a,
        "c/a": cases["c"].wall / a,
        "d/a": median([d.wall / a for d in _edits(cases)]),
    }
    if "promptfoo" in cases:
        out["promptfoo/b"] = cases["promptfoo"].wall / cases["b"].wall
        out["promptfoo/a"] = cases["promptfoo"].wall / a
    return out


def _int_median(values: list[int | None]) -> str:
    known = [v for v in values if v is not None]
    return "—" if not known else f"{median([float(v) for v in known]):.0f}"


def _row(name: str, label: str, runs: list[dict[str, Case]]) -> list[str]:
    if name == "d":
        picked = [d for r in runs for d in _edits(r)]
    else:
        picked = [r[name] for r in runs if name in r]
    report = picked[0].child.report
    wall = median([c.wall for c in picked])
    cpu = median([c.child.cpu_s for c in picked])
    rss = median([c.child.max_rss_mb for c in picked])
    if name in ("e", "e2"):
        limit = median([_limit_seconds(c) for c in picked])
        wall_text = f"{limit:.1f} (process {wall:.1f})"
    else:
        wall_text = f"{wall:.1f}"
    rss_text = f"{rss:.0f}"
    if name == "b":
        server = median([c.extra["server_rss_mb"] for c in picked])
        rss_text = f"{rss:.0f} + server {server:.0f}"
    calls = _int_median([c.child.report.get("model_calls") for c in picked])
    evaluated = _int_median([c.child.report.get("tokens_evaluated") for c in picked])
    if name == "b" and report.get("tokens_evaluated") == report.get("prompt_tokens"):
        # llama_cpp.server reports no cached prompt tokens, so this is an upper bound.
        evaluated = f"≤{evaluated}"
    generated = _int_median([c.child.report.get("completion_tokens") for c in picked])
    return [label, wall_text, f"{cpu:.1f}", calls, evaluated, generated, rss_text]


LABELS = {
    "a": "(a) cold, in-process",
    "b": "(b) cold, HTTP",
    "c": "(c) warm",
    "d": f"(d) skill edit (median of {len(EDITS)})",
    "e": "(e) the limit",
    "e2": "(e′) replay, skilleval's order",
    "promptfoo": "promptfoo, HTTP",
}


def report(runs: list[dict[str, Case]], n: int) -> str:
    lines = []
    headers = [
        "case",
        "wall s",
        "CPU s",
        "model calls",
        "tokens evaluated",
        "generated",
        "peak RSS MB",
    ]
    names = ["a", "b", "c", "d", "e", "e2"] + (["promptfoo"] if "promptfoo" in runs[0] else [])
    rows = [_row(name, LABELS[name], runs) for name in names]
    lines.append(f"{n} tests × ON/OFF arms, deterministic asserts + one llm-rubric each")
    lines.append(f"medians of {len(runs)} round(s); wall and CPU in seconds\n")
    lines.append(table(headers, rows))

    per_round = [ratios(r) for r in runs]
    lines.append("")
    ratio_rows = []
    for key, label in (
        ("a/e", "harness overhead (a)/(e)"),
        ("e2/e", "  of which call order (e′)/(e)"),
        ("a/e2", "  of which the rest (a)/(e′)"),
        ("b/a", "HTTP vs in-process (b)/(a)"),
        ("c/a", "warm re-run (c)/(a)"),
        ("d/a", "skill edit (d)/(a)"),
        ("promptfoo/b", "promptfoo vs skilleval over HTTP"),
        ("promptfoo/a", "promptfoo over HTTP vs skilleval in-process"),
    ):
        if key not in per_round[0]:
            continue
        values = [r[key] for r in per_round]
        mid = median(values)
        if key in FLOORS:
            bound, met = f"≥ {FLOORS[key]}", mid >= FLOORS[key]
        elif key in TARGETS:
            bound, met = f"≤ {TARGETS[key]}", mid <= TARGETS[key]
        else:
            bound, met = "—", None
        verdict = "" if met is None else ("met" if met else "MISSED")
        ratio_rows.append(
            [label, f"{mid:.3f}", " ".join(f"{v:.3f}" for v in values), bound, verdict]
        )
    lines.append(table(["ratio", "median", "per round", "target", ""], ratio_rows))

    lines.append("")
    for i, r in enumerate(runs, start=1):
        a, e = r["a"].child.report, r["e"].child.report
        harness = a["run_s"] - a["inference_s"] - a["model"]["load_s"]
        lines.append(
            f"round {i}: (a) import {a['import_s']:.2f} s, model load {a['model']['load_s']:.2f} s, "
            f"in model calls {a['inference_s']:.1f} s, rest of the run {harness:.2f} s; "
            f"(e) load {e['load_s']:.2f} s, prepare {e['prep_s']:.2f} s, "
            f"inference {e['inference_s']:.1f} s, {e['replies_identical']}/{e['model_calls']} "
            f"replies identical to (a)"
        )
        doc = a["document_calls"] or {}
        counted = int(doc.get("model_calls") or 0) + int(doc.get("judge_calls") or 0)
        note = []
        if counted != a["model_calls"]:
            note.append(f"it counts {counted} of the {a['model_calls']} model calls")
        evaluated = int(doc.get("tokens_evaluated") or 0) + int(
            doc.get("judge_tokens_evaluated") or 0
        )
        if evaluated != a["tokens_evaluated"]:
            note.append(
                f"its tokens_evaluated + judge_tokens_evaluated is {evaluated} "
                f"of the {a['tokens_evaluated']} evaluated"
            )
        lines.append(
            "         results.json calls block of (a): "
            + ("; ".join(note) if note else "agrees with the call log")
        )
        lines.append(
            f"         ON arm's share of (a)'s time in model calls {r['a'].extra['on_share']:.2f}; "
            f"(b) generations identical to (a)'s: {r['b'].extra['same_replies']}"
        )
        for d in _edits(r):
            lines.append(
                f"         (d) {d.extra['edit']}: {d.wall / r['a'].wall:.3f} of (a), re-ran "
                f"{d.child.report['calls_by_purpose']}, token work "
                f"{_work(d) / _work(r['a']):.2f} of (a)'s, "
                f"only ON-arm generations: {d.extra['only_on']}"
            )
        if "promptfoo" in r:
            lines.append(f"         promptfoo exited with {r['promptfoo'].child.returncode}")
        lines.append(
            f"         load average at (a) {r['a'].load}, (e) {r['e'].load}, (b) {r['b'].load}"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=12, help="tests in the suite (default 12)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of all cases (default 1)")
    parser.add_argument("--promptfoo", metavar="PATH", help="also time this promptfoo binary")
    parser.add_argument(
        "--install-promptfoo",
        metavar="DIR",
        type=Path,
        help=f"npm install promptfoo@{promptfoo_npm.VERSION} and node@{promptfoo_npm.NODE} "
        "into DIR (unless there already) and time it",
    )
    parser.add_argument(
        "--inline-tests",
        type=int,
        default=2000,
        metavar="N",
        help="the inline-YAML scale case with N echo tests (default 2000; 0 skips it)",
    )
    parser.add_argument(
        "--no-model",
        action="store_true",
        help="skip the rounds on the embedded model (run only the inline-YAML case)",
    )
    parser.add_argument("--work", type=Path, help="keep every run and log here")
    parser.add_argument(
        "--wait-policy",
        choices=("ACTIVE", "PASSIVE"),
        help="force OMP_WAIT_POLICY on every case (by default none is forced: each case waits "
        "as a user's run would, skilleval choosing from the machine's state)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="after the rounds, profile one cold in-process run with cProfile",
    )
    parser.add_argument(
        "--batched",
        action="store_true",
        help="run the batched case and its ceiling instead (bench/batched.py)",
    )
    parser.add_argument("--sweep", action="store_true", help="with --batched: threads × width")
    parser.add_argument(
        "--parallel",
        type=int,
        metavar="N",
        help="run the in-process cases with model.parallel N (batched decoding at width N)",
    )
    args = parser.parse_args()
    if args.batched:
        import batched

        extra = ["--sweep"] if args.sweep else []
        extra += ["--work", str(args.work)] if args.work else []
        return batched.main(["--tests", str(args.tests), *extra])
    if args.install_promptfoo:
        args.promptfoo = str(promptfoo_npm.install(args.install_promptfoo.resolve()))
    if args.promptfoo and shutil.which(args.promptfoo) is None:
        parser.error(f"--promptfoo {args.promptfoo}: not found or not executable")
    if args.wait_policy:
        # Every child, the server included, inherits this; see README "Threads".
        os.environ["OMP_WAIT_POLICY"] = args.wait_policy
    work = args.work or Path(tempfile.mkdtemp(prefix="skilleval-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work directory: {work}")
    print(f"cores {os.cpu_count()}, load average {load_average()} (1, 5, 15 min)")
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}")
    if args.promptfoo:
        print(f"promptfoo {args.promptfoo} on node {promptfoo_npm.node_version(args.promptfoo)}")
    texts = []
    if args.inline_tests > 0:
        texts.append(
            inline_yaml.measure(
                work,
                args.inline_tests,
                args.repeat,
                args.promptfoo,
                promptfoo_npm.environment(args.promptfoo, work) if args.promptfoo else {},
            )
        )
        print(texts[-1], flush=True)
    if not args.no_model:
        runs = []
        for i in range(args.repeat):
            start = time.perf_counter()
            runs.append(
                one_round(args.tests, work / f"round-{i + 1}", args.promptfoo, args.parallel)
            )
            print(f"round {i + 1}/{args.repeat} done in {time.perf_counter() - start:.0f} s")
        texts.append(report(runs, args.tests))
    text = "\n\n".join(texts)
    print()
    print(text)
    (work / "report.txt").write_text(text + "\n", encoding="utf-8")
    if args.profile:
        print()
        print(profile(args.tests, work / "profile"))
    print(f"load average at the end {load_average()}")
    return 0


def profile(n: int, out: Path) -> str:
    """cProfile of one cold in-process run: where the time outside llama.cpp goes."""
    import io
    import pstats

    out.mkdir(parents=True, exist_ok=True)
    suite = copy_suite(out / "suite", n)
    stats_path = out / "a.pstats"
    report = out / "a.json"
    child = run_child(
        [PYTHON, CASE, "skilleval", str(suite), str(report), "--profile", str(stats_path)],
        {"SKILLEVAL_HOME": str(out / "home")},
        report,
    )
    check(child, "profiled run")
    buffer = io.StringIO()
    stats = pstats.Stats(str(stats_path), stream=buffer)
    stats.sort_stats("cumulative").print_stats(40)
    stats.sort_stats("tottime").print_stats(25)
    return f"profile written to {stats_path}\n{buffer.getvalue()}"


if __name__ == "__main__":
    raise SystemExit(main())
