"""The human summary of a run, printed to stderr: a table of tests and the figures below it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tabulate import tabulate

_MARK = {"pass": "PASS", "fail": "FAIL", "error": "ERROR"}


def _pct(rate: float | None) -> str:
    return "—" if rate is None else f"{rate:.0%}"


def _trials_cell(row: Mapping[str, Any]) -> str:
    if row["trials"] == 1:
        status = "pass" if row["passed"] else "fail" if row["failed"] else "error"
        return _MARK[status]
    return f"{row['passed']}/{row['trials']}" + (f" ({row['errors']} err)" if row["errors"] else "")


def _reasons(records: list[Mapping[str, Any]], width: int = 70) -> str:
    seen: list[str] = []
    for rec in records:
        if rec["status"] == "error" and rec.get("error"):
            seen.append(f"error: {rec['error']}")
        for a in rec["asserts"]:
            if a["status"] != "pass" and a["weight"] > 0:
                text = f"{a['type']}: {a['reason']}"
                if a["status"] == "error":
                    text = f"{a['type']} error: {a['error']}"
                seen.append(text)
    unique = list(dict.fromkeys(seen))
    lines = [s if len(s) <= width else s[: width - 1] + "…" for s in unique[:3]]
    if len(unique) > 3:
        lines.append(f"… and {len(unique) - 3} more")
    return "\n".join(lines)


def decoding_line(doc: Mapping[str, Any]) -> str:
    """How the outputs were produced, printed beside every score."""
    env = doc["environment"]
    model = env["model"]
    dec = env["decoding"]
    name = model.get("file") or model.get("name") or "?"
    if dec["mode"] == "deterministic":
        how = f"greedy, seed {dec['seed']}"
    else:
        how = (
            f"sampled (temperature {dec['temperature']}, top_p {dec['top_p']}), "
            f"seed {dec['seed']}+trial"
        )
    return f"model {name} · {how} · trials {env['trials']} · max_tokens {dec['max_tokens']}"


def render(doc: Mapping[str, Any]) -> str:
    """The full terminal report for a results document."""
    records = doc["records"]
    by_key: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for rec in records:
        by_key.setdefault((rec["test_id"], rec["arm"]), []).append(rec)
    multi_arm = len(doc["arms"]) > 1
    rows = []
    for row in doc["summary"]["tests"]:
        recs = by_key[(row["test_id"], row["arm"])]
        cells = [row["test_id"]]
        if multi_arm:
            cells.append(row["arm"])
        cells += [_trials_cell(row), _reasons(recs)]
        rows.append(cells)
    headers = ["test", *(["arm"] if multi_arm else []), "result", "why not"]
    out = [tabulate(rows, headers=headers, tablefmt="simple")] if rows else []
    out.append("")
    for arm, s in doc["summary"]["arms"].items():
        label = f"[{arm}] " if multi_arm else ""
        tiers = s["tiers"]
        det, mod = tiers["deterministic"], tiers["model"]
        out.append(
            f"{label}pass rate {s['passed']}/{s['passed'] + s['failed']} ({_pct(s['pass_rate'])})"
            f" · deterministic tier {_pct(det['pass_rate'])} ({det['passed']}/{det['passed'] + det['failed']})"
            f" · model tier {_pct(mod['pass_rate'])} ({mod['passed']}/{mod['passed'] + mod['failed']})"
            + (f" · errors {s['errors']}" if s["errors"] else "")
        )
        if s["metrics"]:
            out.append("  metrics: " + ", ".join(f"{k} {v:.2f}" for k, v in s["metrics"].items()))
    out.append(decoding_line(doc))
    calls = doc["calls"]
    out.append(
        f"model calls {calls['model_calls']} · cache hits {calls['cache_hits']} · "
        f"tokens evaluated {calls['tokens_evaluated']} · generated {calls['completion_tokens']}"
        + (
            f" · {calls['generation_tokens_per_s']} tok/s"
            if calls.get("generation_tokens_per_s")
            else ""
        )
    )
    gate = doc["gate"]
    verdict = "PASSED" if gate["passed"] else "FAILED"
    if doc["status"] == "interrupted":
        verdict = "INTERRUPTED"
    detail = "; ".join(gate["reasons"])
    out.append(f"{gate['type']} gate {verdict}" + (f": {detail}" if detail else ""))
    return "\n".join(out)
