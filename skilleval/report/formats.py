"""The built-in output formats for ``-o FILE``, registered like a plugin's.

Each one writes the typed run to ``dest``, as a plugin's format does; ``json``, ``html`` and
``markdown`` also write a run on several models side by side.
:func:`~skilleval.report.outputs.write_output` and :func:`~skilleval.report.outputs.write_matrix`
pick one by the file's extension and make the write atomic.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from skilleval.plugins.markers import reporter
from skilleval.util.home import home_dir
from skilleval.util.scrub import without_surrogates

if TYPE_CHECKING:
    from skilleval.results.matrix import Matrix
    from skilleval.results.model import Run

# Each format imports its renderer when it writes: registering the formats is part of every
# suite load (validate included), writing one is not.


def _write(dest: Path, text: str | Iterable[str]) -> None:
    # A lone surrogate from the suite's own text (a YAML "\\udc00" in a prompt) cannot be
    # written as UTF-8; it becomes U+FFFD, as it does in results.jsonl.
    with dest.open("w", encoding="utf-8", newline="") as fh:
        if isinstance(text, str):
            fh.write(without_surrogates(text))
        else:
            fh.writelines(without_surrogates(piece) for piece in text)


def write_json_matrix(matrix: Matrix, dest: Path) -> None:
    """``matrix.json``: the side-by-side document."""
    from skilleval.results.write import dumps_matrix  # lazy: start-up time

    _write(dest, dumps_matrix(matrix))


def write_html_matrix(matrix: Matrix, dest: Path) -> None:
    """The side-by-side table as one page."""
    from skilleval.report.matrix import render_matrix_html  # lazy: start-up time

    _write(dest, render_matrix_html(matrix))


def write_markdown_matrix(matrix: Matrix, dest: Path) -> None:
    """The side-by-side table in Markdown."""
    from skilleval.report.matrix import render_matrix_markdown  # lazy: start-up time

    _write(dest, render_matrix_markdown(matrix))


@reporter("json", suffix=".json", side_by_side=write_json_matrix)
def write_json(results: Run, dest: Path) -> None:
    """The whole results document (schemas/results.schema.json)."""
    from skilleval.results.write import iter_run  # lazy: start-up time

    _write(dest, iter_run(results))


@reporter("jsonl", suffix=".jsonl")
def write_jsonl(results: Run, dest: Path) -> None:
    """One record per line, as results.jsonl streams them."""
    from skilleval.results.write import iter_records  # lazy: start-up time

    _write(dest, iter_records(results))


@reporter("html", suffix=".html", side_by_side=write_html_matrix)
def write_html(results: Run, dest: Path) -> None:
    """A self-contained HTML report, with the suite's earlier runs from the runs folder."""
    from skilleval.report.history import SHOWN_IN_REPORT, collect  # lazy: start-up time
    from skilleval.report.html import render_html  # lazy: start-up time (jinja2 via html)

    suite = results.suite.path
    runs = home_dir() / "runs"
    past = collect(runs, suite, upto=results, limit=SHOWN_IN_REPORT) if suite else None
    _write(dest, render_html(results, past))


@reporter("junit", suffix=".xml")
def write_junit(results: Run, dest: Path) -> None:
    """JUnit XML, one testcase per test and arm, for CI test tabs."""
    from skilleval.report.junit import render_junit  # lazy: start-up time

    _write(dest, render_junit(results))


@reporter("markdown", suffix=".md", side_by_side=write_markdown_matrix)
def write_markdown(results: Run, dest: Path) -> None:
    """A Markdown summary, for pull-request comments."""
    from skilleval.report.markdown import render_markdown  # lazy: start-up time

    _write(dest, render_markdown(results))


@reporter("csv", suffix=".csv")
def write_csv(results: Run, dest: Path) -> None:
    """One row per test × arm, for spreadsheets."""
    from skilleval.report.csvout import render_csv  # lazy: start-up time

    _write(dest, render_csv(results))
