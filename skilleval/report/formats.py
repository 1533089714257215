"""The built-in output formats for ``-o FILE``, registered like a plugin's.

Each one writes the results to ``dest``; :func:`~skilleval.report.outputs.write_output` picks
one by the file's extension and makes the write atomic.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skilleval.plugins.markers import reporter
from skilleval.report.csvout import render_csv
from skilleval.report.junit import render_junit
from skilleval.report.markdown import render_markdown


def _write(dest: Path, text: str) -> None:
    with dest.open("w", encoding="utf-8", newline="") as fh:
        fh.write(text)


@reporter("json", suffix=".json")
def write_json(results: Mapping[str, Any], dest: Path) -> None:
    """The whole results document (schemas/results.schema.json)."""
    _write(dest, json.dumps(results, ensure_ascii=False, indent=2) + "\n")


@reporter("jsonl", suffix=".jsonl")
def write_jsonl(results: Mapping[str, Any], dest: Path) -> None:
    """One record per line, as results.jsonl streams them."""
    _write(
        dest,
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in results.get("records") or ()),
    )


@reporter("html", suffix=".html")
def write_html(results: Mapping[str, Any], dest: Path) -> None:
    """A self-contained HTML report."""
    from skilleval.report.html import render_html  # lazy: start-up time (jinja2 via html)

    _write(dest, render_html(results))


@reporter("junit", suffix=".xml")
def write_junit(results: Mapping[str, Any], dest: Path) -> None:
    """JUnit XML, one testcase per test and arm, for CI test tabs."""
    _write(dest, render_junit(results))


@reporter("markdown", suffix=".md")
def write_markdown(results: Mapping[str, Any], dest: Path) -> None:
    """A Markdown summary, for pull-request comments."""
    _write(dest, render_markdown(results))


@reporter("csv", suffix=".csv")
def write_csv(results: Mapping[str, Any], dest: Path) -> None:
    """One row per test × arm, for spreadsheets."""
    _write(dest, render_csv(results))
