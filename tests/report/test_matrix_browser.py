"""The side-by-side report in a real headless Chromium: clean load, a column per model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_html_browser import driver  # noqa: F401  (the shared Chromium fixture)

from skilleval.cli import run_cli

pytestmark = pytest.mark.browser

SUITE = """\
version: 1
models:
  - echo
  - {provider: scripted, default: "<script>document.title='owned'</script> fix: x"}
tests:
  - id: says-fix
    prompt: "fix: the parser"
    assert: [{type: contains, value: "fix"}]
  - id: says-hello
    prompt: "hello"
    assert: [{type: contains, value: "hello"}]
"""


def test_matrix_page_shows_a_column_per_model(driver: Any, tmp_path: Path) -> None:  # noqa: F811
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    page, data = tmp_path / "m.html", tmp_path / "m.json"
    assert run_cli(["run", str(suite), "-q", "-o", str(page), "-o", str(data)]) == 1
    matrix = json.loads(data.read_text(encoding="utf-8"))
    driver.get(page.as_uri())
    assert driver.title != "owned"
    heads = [th.text for th in driver.find_elements("css selector", "#figures th.model")]
    assert heads == [c["label"] for c in matrix["columns"]]
    cells = {
        row.find_element("css selector", "td.test").text: [
            td.text for td in row.find_elements("css selector", "td.cell")
        ]
        for row in driver.find_elements("css selector", "#tests tbody tr")
    }
    assert cells == {"says-fix": ["PASS", "PASS"], "says-hello": ["PASS", "FAIL"]}
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors
