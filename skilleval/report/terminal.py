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
    name = str(name).replace("\\", "/").rsplit("/", 1)[-1]
    if dec["mode"] == "deterministic":
        how = f"greedy, seed {dec['seed']}"
    else:
        how = (
            f"sampled (temperature {dec['temperature']}, top_p {dec['top_p']}), "
            f"seed {dec['seed']}+trial"
        )
    return f"model {name} · {how} · trials {env['trials']} · max_tokens {dec['max_tokens']}"


def _test_rows(doc: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    by_key: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for rec in doc["records"]:
        by_key.setdefault((rec["test_id"], rec["arm"]), []).append(rec)
    rows_by_test: dict[str, dict[str, Mapping[str, Any]]] = {}
    for row in doc["summary"]["tests"]:
        rows_by_test.setdefault(row["test_id"], {})[row["arm"]] = row
    arms = list(doc["arms"])
    primary = doc.get("primary_arm", arms[0])
    trigger = {t["test_id"]: t for t in (doc.get("trigger") or {}).get("tests", [])}
    headers = ["test"]
    if trigger:
        headers.append("routed to")
    headers += [a for a in arms] + [f"why not ({primary})" if len(arms) > 1 else "why not"]
    rows = []
    for test_id, per_arm in rows_by_test.items():
        cells = [test_id]
        if trigger:
            t = trigger.get(test_id)
            if t is None:
                cells.append("")
            else:
                mark = "" if t["correct"] is None else (" ✓" if t["correct"] else " ✗")
                expect = "skill" if t["expected"] else "none"
                cells.append(f"{t['chosen'] or 'error'} (want {expect}){mark}")
        for arm in arms:
            cells.append(_trials_cell(per_arm[arm]) if arm in per_arm else "")
        recs = by_key.get((test_id, primary)) or by_key.get((test_id, arms[0]), [])
        cells.append(_reasons(recs))
        rows.append(cells)
    return headers, rows


def _lift_line(lift: Mapping[str, Any]) -> str:
    value = lift.get("lift")
    shown = "n/a" if value is None else f"{value:+.2f}"
    ci = lift.get("ci95")
    interval = "no interval" if ci is None else f"95% CI [{ci[0]:+.2f}, {ci[1]:+.2f}]"
    return (
        f"lift {shown} over {lift['n']} tests (b={lift['b']} ON-only passes, c={lift['c']} OFF-only)"
        f" · exact McNemar p={lift['p_two_sided']:.3g} (two-sided), sign test p={lift['p_one_sided']:.3g}"
        f" (one-sided) · {interval} (Newcombe)\n"
        f"lift verdict: {lift['verdict'].upper()} ({lift['sidedness']}): {lift['reason']}"
    )


def _trigger_lines(trigger: Mapping[str, Any]) -> list[str]:
    def f(x: Any) -> str:
        return "—" if x is None else f"{x:.2f}"

    lines = [
        f"trigger accuracy {_pct(trigger.get('accuracy'))} ({trigger['tp'] + trigger['tn']}/{trigger['n']})"
        f" · precision {f(trigger.get('precision'))} · recall {f(trigger.get('recall'))}"
        f" · F1 {f(trigger.get('f1'))}"
    ]
    labels, matrix = trigger.get("labels") or [], trigger.get("matrix") or []
    if labels and matrix:
        table = [[f"want {lab}", *row] for lab, row in zip(labels, matrix, strict=False)]
        lines.append(
            tabulate(table, headers=["", *[f"chose {lab}" for lab in labels]], tablefmt="simple")
        )
    if trigger.get("misrouted"):
        lines.append("misrouted: " + ", ".join(trigger["misrouted"]))
    return lines


def render(doc: Mapping[str, Any]) -> str:
    """The full terminal report for a results document."""
    headers, rows = _test_rows(doc)
    out = [tabulate(rows, headers=headers, tablefmt="simple")] if rows else []
    out.append("")
    multi_arm = len(doc["arms"]) > 1
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
    if doc.get("lift"):
        out.append(_lift_line(doc["lift"]))
    if doc.get("trigger"):
        out.extend(_trigger_lines(doc["trigger"]))
    for arm, rel in (doc.get("reliability") or {}).items():
        points = rel.get("aggregate") or []
        shown = (
            " ".join(
                f"k={p['k']}: pass@k {p['pass_at_k']['value'] if isinstance(p['pass_at_k'], dict) else p['pass_at_k']}"
                for p in points[:3]
            )
            if points
            else ""
        )
        flaky = rel.get("flaky") or []
        out.append(
            f"[{arm}] reliability {shown}" + (f" · flaky: {', '.join(flaky)}" if flaky else "")
        )
    judge = doc.get("judge")
    if judge and judge.get("same_as_generator"):
        out.append(
            "warning: the judge is the generator model; set `judge:` to grade with another model"
        )
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
        + (
            f" · judge calls {calls.get('judge_calls', 0)}"
            f" (cache hits {calls.get('judge_cache_hits', 0)},"
            f" tokens evaluated {calls.get('judge_tokens_evaluated', 0)})"
            if doc.get("judge")
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
