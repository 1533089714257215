"""The HTML report's template is compiled once per skilleval version and kept under the home."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jinja2
import pytest
from test_reports import run_doc, scripted_suite, typed

from skilleval.report import html


def _compiled(home: Path) -> list[Path]:
    return sorted((home / html.TEMPLATE_CACHE).glob("report-*.bin"))


@pytest.fixture
def run(tmp_path: Path) -> Any:
    return typed(run_doc(scripted_suite(tmp_path), None))


def test_a_second_process_reads_the_compiled_template(
    run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path(os.environ["SKILLEVAL_HOME"])
    html._environment.cache_clear()
    first = html.render_html(run)
    assert len(_compiled(home)) == 1
    # A new process starts with no template in memory; compiling again now would fail.
    html._environment.cache_clear()

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the template was compiled again")

    monkeypatch.setattr(jinja2.Environment, "compile", refuse)
    assert html.render_html(run) == first
    html._environment.cache_clear()


def test_a_damaged_or_unwritable_cache_only_costs_a_compile(
    run: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = Path(os.environ["SKILLEVAL_HOME"])
    html._environment.cache_clear()
    first = html.render_html(run)
    (cached,) = _compiled(home)
    cached.write_bytes(cached.read_bytes()[:40])
    html._environment.cache_clear()
    assert html.render_html(run) == first
    # A home that is a file, not a folder: nothing can be kept, the report is still written.
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("x", encoding="utf-8")
    monkeypatch.setenv("SKILLEVAL_HOME", str(blocked))
    html._environment.cache_clear()
    assert html.render_html(run) == first
    html._environment.cache_clear()
