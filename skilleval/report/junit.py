"""JUnit XML for CI test tabs: one ``<testsuite>`` per arm, one ``<testcase>`` per test × arm.

A test × arm whose trials all passed is a plain testcase. One with an errored trial gets an
``<error>``, since its verdict is incomplete; otherwise a failed trial gives a ``<failure>``
whose message is the first reason and whose text lists them all. Each case's outputs go to
``<system-out>`` so the CI page shows what the model said.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import PurePath

from skilleval.report import view
from skilleval.report.view import Row
from skilleval.results.model import ModelInfo, Run

# Characters XML 1.0 cannot carry at all, not even escaped; models do emit them (ANSI escapes).
_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(text: str) -> str:
    return _ILLEGAL_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _seconds(row: Row) -> str:
    return f"{row.latency_ms / 1000:.3f}"


def _suite_stem(run: Run) -> str:
    path = run.suite.path
    return PurePath(path).stem if path else str(run.run_id or "skilleval")


def _failure_text(row: Row) -> str:
    lines = []
    if row.trials > 1:
        lines.append(f"{row.passed}/{row.trials} trials passed")
    for record in row.records:
        reasons = view.record_reasons(record)
        if not reasons:
            continue
        prefix = f"trial {record.trial}: " if row.trials > 1 else ""
        lines.extend(prefix + r for r in reasons)
    return "\n".join(lines)


def _system_out(row: Row) -> str:
    if row.trials == 1:
        return row.records[0].output
    return "\n".join(f"--- trial {r.trial} ({r.status}) ---\n{r.output}" for r in row.records)


def _testcase(parent: ET.Element, row: Row, classname: str) -> None:
    case = ET.SubElement(
        parent, "testcase", name=_clean(row.test_id), classname=classname, time=_seconds(row)
    )
    if row.status != "pass":
        reasons = row.reasons()
        first = reasons[0] if reasons else row.status
        tag = "error" if row.status == "error" else "failure"
        kind = "error" if row.status == "error" else "assertion"
        node = ET.SubElement(case, tag, message=_clean(first), type=kind)
        node.text = _clean(_failure_text(row))
    out = ET.SubElement(case, "system-out")
    out.text = _clean(_system_out(row))


def _properties(parent: ET.Element, run: Run, arm: str) -> None:
    model = run.environment.model if run.environment is not None else None
    props = {
        "run_id": run.run_id,
        "arm": arm,
        "model": view.model_label(model),
        "model_sha256": model.sha256 if isinstance(model, ModelInfo) else None,
        "decoding": view.decoding_label(run),
        "verdict": view.verdict(run).headline,
        "judge_fitness": view.judge_fitness_line(run),
        "skill": run.skill.name if run.skill is not None else None,
    }
    node = ET.SubElement(parent, "properties")
    for name, value in props.items():
        if value is not None:
            ET.SubElement(node, "property", name=name, value=_clean(str(value)))


def _count(rows: Sequence[Row], status: str) -> str:
    return str(sum(1 for r in rows if r.status == status))


def render_junit(run: Run) -> str:
    """Render a run as JUnit XML.

    Args:
        run: The run's results.

    Returns:
        The XML text, with declaration.
    """
    all_rows = view.rows(run)
    stem = _suite_stem(run)
    timing = run.timing
    root = ET.Element(
        "testsuites",
        name=f"skilleval {stem}",
        tests=str(len(all_rows)),
        failures=_count(all_rows, "fail"),
        errors=_count(all_rows, "error"),
        time=f"{float(timing.duration_s or 0):.3f}",
    )
    for arm in view.arms(run):
        mine = [r for r in all_rows if r.arm == arm]
        attrs = {
            "name": f"{stem} [{arm}]",
            "tests": str(len(mine)),
            "failures": _count(mine, "fail"),
            "errors": _count(mine, "error"),
            "skipped": "0",
            "time": f"{sum(float(_seconds(r)) for r in mine):.3f}",
        }
        if timing.started_at:
            attrs["timestamp"] = timing.started_at
        suite = ET.SubElement(root, "testsuite", attrs)
        _properties(suite, run, arm)
        for row in mine:
            _testcase(suite, row, f"{stem}.{arm}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
