"""The judge's token cost and fitness, on the judge-fitness set, for one checkout.

    .venv/bin/python bench/judge_tokens.py REPORT.json [--limit N] [--tree DIR] [--reasons]

Runs ``skilleval judge-check --no-cache --json`` in this process with every call that
reaches the in-process model counted (tokens generated, tokens evaluated, seconds), and writes
one JSON report: those counts (``generated`` is the engine's own count of sampled tokens,
``completion_tokens`` what the replies report, which for a choice is the chosen option's
length though nothing is sampled), the calls by kind, the check's figures and each pair's two
verdicts. ``--tree``
runs another checkout's ``skilleval`` package instead (its folder first on ``sys.path``), so
two commits can be compared pair by pair with ``bench/judge_tokens.py --compare A B``.
``--reasons`` makes the judge write the reasons of failing scored verdicts, as a run's judge
does (``judge-check`` reads verdicts only), to show what a run's grading costs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def measure(report: Path, limit: int | None, reasons: bool = False) -> int:
    import os

    from skilleval.cli import judge_check_cmd, run_cli
    from skilleval.engine import llama

    if reasons:
        # As a run grades: a scored verdict that fails gets its reason written.
        made = judge_check_cmd._client

        def client(*args: Any) -> Any:
            judge = made(*args)
            judge.reasons = True
            return judge

        judge_check_cmd._client = client  # type: ignore[assignment]

    counts = {
        "calls": 0,
        "completion_tokens": 0,
        "generated": 0,
        "tokens_evaluated": 0,
        "prompt_tokens": 0,
    }
    by_kind: dict[str, dict[str, int]] = {}
    original = llama.LlamaProvider.complete

    def complete(self: Any, request: Any) -> Any:
        before = self.engine_busy()[0]
        out = original(self, request)
        counts["generated"] += self.engine_busy()[0] - before
        counts["calls"] += 1
        counts["completion_tokens"] += out.completion_tokens
        counts["tokens_evaluated"] += out.tokens_evaluated
        counts["prompt_tokens"] += out.prompt_tokens
        kind = by_kind.setdefault(_kind(request), {"calls": 0, "completion_tokens": 0})
        kind["calls"] += 1
        kind["completion_tokens"] += out.completion_tokens
        return out

    llama.LlamaProvider.complete = complete  # type: ignore[method-assign]
    os.environ.setdefault("SKILLEVAL_HOME", tempfile.mkdtemp(prefix="skilleval-judge-tokens-"))
    argv = ["judge-check", "--no-cache", "--json"]
    if limit is not None:
        argv += ["--limit", str(limit)]
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = run_cli(argv)
    seconds = time.perf_counter() - start
    document = json.loads(out.getvalue())
    report.write_text(
        json.dumps(
            {
                "exit_code": code,
                "seconds": round(seconds, 3),
                **counts,
                "by_kind": by_kind,
                **document,
            }
        ),
        encoding="utf-8",
    )
    return 0


def _kind(request: Any) -> str:
    """What a call asked for: a choice among options, or a reply with these JSON keys."""
    if request.choices is not None:
        return "choice"
    schema = request.json_schema
    if schema is None:
        return "text"
    return "json:" + ",".join(schema.get("properties", {}))


def _verdicts(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (r["id"], side): r[side] for r in document.get("results", []) for side in ("good", "bad")
    }


def compare(before: Path, after: Path) -> str:
    """Two reports side by side, and the pairs whose verdicts changed."""
    a = json.loads(before.read_text(encoding="utf-8"))
    b = json.loads(after.read_text(encoding="utf-8"))
    lines = ["| | before | after | after ÷ before |", "|---|---|---|---|"]
    for key in ("completion_tokens", "generated", "tokens_evaluated", "calls", "seconds"):
        if key not in a or key not in b:
            continue
        x, y = float(a[key]), float(b[key])
        lines.append(
            f"| {key} | {x:g} | {y:g} | {y / x:.3f} |" if x else f"| {key} | {x} | {y} | |"
        )
    for key in ("accuracy", "discrimination", "error_rate"):
        lines.append(f"| {key} | {a.get(key)} | {b.get(key)} | |")
    va, vb = _verdicts(a), _verdicts(b)
    right = {"good": "pass", "bad": "fail"}
    gained = lost = same = 0
    for key in va.keys() & vb.keys():
        was = va[key]["status"] == right[key[1]]
        now = vb[key]["status"] == right[key[1]]
        gained += now and not was
        lost += was and not now
        same += was == now
    lines.append("")
    lines.append(
        f"paired, {len(va.keys() & vb.keys())} outputs: {same} graded alike, "
        f"{gained} right only after, {lost} right only before; "
        f"McNemar's exact test, two-sided: p = {mcnemar_exact(gained, lost):.3f}"
    )
    return "\n".join(lines)


def mcnemar_exact(gained: int, lost: int) -> float:
    """McNemar's exact two-sided p-value: the chance, were each changed verdict equally likely
    to go either way, of a split at least as uneven as ``gained`` against ``lost`` (a binomial
    test on the discordant pairs, p = 1/2; scipy's ``binomtest(k, n).pvalue`` agrees)."""
    changed = gained + lost
    if changed == 0:
        return 1.0
    tail = sum(math.comb(changed, k) for k in range(min(gained, lost) + 1)) / 2**changed
    return min(1.0, 2 * tail)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, nargs="?")
    parser.add_argument("--limit", type=int, help="only the first N pairs")
    parser.add_argument("--tree", type=Path, help="run this checkout's skilleval package")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument(
        "--reasons",
        action="store_true",
        help="write the reasons of failing scored verdicts, as a run does (judge-check does not)",
    )
    args = parser.parse_args(argv)
    if args.compare is not None:
        print(compare(*args.compare))
        return 0
    if args.report is None:
        parser.error("REPORT is required unless --compare is given")
    if args.tree is not None:
        sys.path.insert(0, str(args.tree.resolve()))
    return measure(args.report, args.limit, args.reasons)


if __name__ == "__main__":
    raise SystemExit(main())
