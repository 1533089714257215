"""The HTML report in a real headless Chromium: it loads cleanly, shows the right numbers,
filters, and never runs model text.

Needs Debian's ``chromium`` and ``chromium-driver`` and the ``selenium`` package. Without them
these tests are skipped, unless ``SKILLEVAL_REQUIRE_BROWSER=1`` (CI), where that is a failure.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_reports import skill_doc, typed

from skilleval.report import view
from skilleval.report.outputs import builtin_formats, write_output

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = os.environ.get("SKILLEVAL_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("SKILLEVAL_CHROMEDRIVER", "/usr/bin/chromedriver")


def _missing() -> str | None:
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed (pip install selenium)"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (Path(path).is_file() or shutil.which(path)):
            return f"{path} not found (apt-get install chromium chromium-driver)"
    return None


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    reason = _missing()
    if reason:
        if os.environ.get("SKILLEVAL_REQUIRE_BROWSER") == "1":
            pytest.fail(f"SKILLEVAL_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--hide-scrollbars",
        "--window-size=1280,900",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """A real skill run (three arms, three trials, a planted <script>) rendered to disk."""
    folder = tmp_path_factory.mktemp("browser-run")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SKILLEVAL_HOME", str(folder / "home"))
        doc = skill_doc(folder, None)
    path = folder / "report.html"
    write_output(typed(doc), path, None, builtin_formats())
    return doc, path


@pytest.fixture
def page(driver: Any, report: tuple[dict[str, Any], Path]) -> Any:
    driver.get(report[1].as_uri())
    driver.get_log("browser")  # drop anything left from the previous page
    driver.get(report[1].as_uri())
    return driver


def _rows(page: Any) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(page.find_elements(By.CSS_SELECTOR, "#tests tbody tr.row"))


def _lookup(doc: dict[str, Any], metric: str) -> Any:
    head, *rest = metric.split(".")
    node: Any = doc["summary"]["arms"] if head == "arms" else doc[head]
    for key in rest:
        node = node[key]
    return node


def test_page_loads_without_console_errors(page: Any) -> None:
    errors = [e for e in page.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    assert page.execute_script("return document.readyState") == "complete"


def test_summary_numbers_equal_the_results(page: Any, report: tuple[dict[str, Any], Path]) -> None:
    from selenium.webdriver.common.by import By

    doc = report[0]
    shown = page.find_elements(By.CSS_SELECTOR, "[data-metric]")
    metrics = {el.get_attribute("data-metric"): el for el in shown}
    assert {"arms.on.pass_rate", "arms.off.tiers.deterministic.pass_rate", "lift.lift"} <= set(
        metrics
    )
    assert "trigger.accuracy" in metrics
    for name, el in metrics.items():
        expected = _lookup(doc, name)
        raw = el.get_attribute("data-value")
        if expected is None:
            assert raw == ""
            continue
        assert float(raw) == pytest.approx(expected), name
        text = el.text.strip()
        if name.endswith((".passed", ".errors")):
            assert text == str(expected)
        elif name == "lift.lift":
            assert text == view.signed_pct(expected)
        else:
            assert text == view.pct(expected, 1), name
    assert page.find_element(By.ID, "verdict").text == view.verdict(typed(doc)).headline
    on = doc["summary"]["arms"]["on"]
    assert metrics["arms.on.passed"].text == str(on["passed"])


def test_failed_only_hides_passing_rows(page: Any, report: tuple[dict[str, Any], Path]) -> None:
    from selenium.webdriver.common.by import By

    rows = _rows(page)
    statuses = [r.get_attribute("data-status") for r in rows]
    assert "pass" in statuses
    assert all(r.is_displayed() for r in rows)
    page.find_element(By.ID, "f-failed").click()
    visible = [r for r in rows if r.is_displayed()]
    failing = view.failing(view.rows(typed(report[0])))
    assert len(visible) == len(failing)
    assert all(r.get_attribute("data-status") != "pass" for r in visible)
    assert page.find_element(By.ID, "shown-count").text == str(len(failing))
    hidden = [r for r in rows if r.get_attribute("data-status") == "pass"]
    assert not any(r.is_displayed() for r in hidden)


def test_arm_filter_and_row_expansion(page: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(page.find_element(By.ID, "f-arm")).select_by_value("routed")
    visible = [r for r in _rows(page) if r.is_displayed()]
    assert visible
    assert {r.get_attribute("data-arm") for r in visible} == {"routed"}
    first = visible[0]
    detail = page.find_element(By.ID, first.get_attribute("id") + "-detail")
    assert not detail.is_displayed()
    first.click()
    assert detail.is_displayed()
    assert "transcript" in detail.text.lower()


def test_planted_script_in_an_output_does_not_run(
    page: Any, report: tuple[dict[str, Any], Path]
) -> None:
    from selenium.webdriver.common.by import By

    assert page.execute_script("return window.__pwned === undefined")
    assert page.title != "pwned"
    row = next(
        r
        for r in _rows(page)
        if (r.get_attribute("data-test"), r.get_attribute("data-arm")) == ("change-2", "on")
    )
    row.click()
    detail = page.find_element(By.ID, row.get_attribute("id") + "-detail")
    outputs = [el.text for el in detail.find_elements(By.CSS_SELECTOR, "pre.model-output")]
    assert "<script>document.title='pwned';window.__pwned=1</script>" in "\n".join(outputs)
    assert page.execute_script("return window.__pwned === undefined")
    assert page.title != "pwned"


@pytest.fixture(scope="module")
def history_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of the third of three real runs of one suite, written by `skilleval run`."""
    folder = tmp_path_factory.mktemp("browser-history")
    home = folder / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SKILLEVAL_HOME", str(home))
        for _ in range(3):
            skill_doc(folder, None)
    return home / "runs" / "latest" / "report.html"


def test_history_chart_draws_every_run(driver: Any, history_report: Path) -> None:
    from selenium.webdriver.common.by import By

    driver.get(history_report.as_uri())
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    chart = driver.find_element(By.ID, "history-chart")
    assert chart.is_displayed()
    assert chart.size["width"] > 300
    assert chart.size["height"] > 80
    for arm in ("off", "on", "routed"):
        group = chart.find_element(By.CSS_SELECTOR, f'g[data-arm="{arm}"]')
        points = group.find_elements(By.TAG_NAME, "circle")
        assert len(points) == 3
        assert all(p.size["width"] > 0 for p in points)
        line = group.find_element(By.TAG_NAME, "polyline")
        assert driver.execute_script("return getComputedStyle(arguments[0]).fill", line) == "none"
    rows = driver.find_elements(By.CSS_SELECTOR, "#history-runs tbody tr")
    assert len(rows) == 3
    assert rows[0].get_attribute("class") == "current"  # newest first in the table


def test_screenshot_for_people_to_look_at(page: Any) -> None:
    from selenium.webdriver.common.by import By

    page.find_element(By.ID, "f-failed").click()
    next(r for r in _rows(page) if r.is_displayed()).click()
    height = page.execute_script("return document.documentElement.scrollHeight")
    page.set_window_size(1280, min(int(height) + 40, 7000))
    page.execute_script("document.activeElement.blur(); window.scrollTo(0, 0)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    target = ARTIFACTS / "report.png"
    assert page.save_screenshot(str(target))
    assert target.stat().st_size > 10_000
    page.set_window_size(1280, 900)


# -- reports that scale: 20,000 tests, and one 50 MB output ---------------------------------


def _synthetic(folder: Path, tests: int, big_output: int = 0) -> tuple[Any, Path]:
    """A real three-test run, its records repeated to ``tests`` through the typed model."""
    import dataclasses

    from test_reports import run_doc, scripted_suite

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SKILLEVAL_HOME", str(folder / "home"))
        run = typed(run_doc(scripted_suite(folder), None))
    records = []
    for i in range(tests):
        record = run.records[i % len(run.records)]
        changes: dict[str, Any] = {"test_id": f"t{i:05d}"}
        if i == 1 and big_output:
            changes["output"] = "y" * big_output
        records.append(dataclasses.replace(record, **changes))
    run = dataclasses.replace(run, records=tuple(records))
    path = folder / "report.html"
    write_output(run, path, None, builtin_formats())
    return run, path


def _timed_open(driver: Any, path: Path) -> float:
    """Milliseconds from navigation start until the page is usable: its table drawn (the
    mark a large report's script sets), or else the end of the load event."""
    driver.get(path.as_uri())
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    return float(
        driver.execute_script(
            """
            var drawn = performance.getEntriesByName('skilleval-table-drawn');
            if (drawn.length) { return drawn[0].startTime; }
            return performance.getEntriesByType('navigation')[0].loadEventEnd;
            """
        )
    )


def _budget_ms() -> float:
    """Two seconds, stretched by how oversubscribed the machine's cores are right now: on a
    shared runner the browser gets a share of a core, and this checks the page, not the load."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return 2000.0 * max(1.0, os.getloadavg()[0] / max(1, cores or 1))


def test_a_20000_test_report_opens_and_filters_within_two_seconds(
    driver: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    run, path = _synthetic(tmp_path, 20_000)
    opened = _timed_open(driver, path)
    rows = _rows(driver)
    assert 0 < len(rows) < 1000  # drawn a page at a time, not all 20,000
    assert driver.find_element(By.ID, "shown-count").text == "20000"
    failing = view.failing(view.rows(run))
    filtered = driver.execute_script(
        """
        var start = performance.now();
        var box = document.getElementById('f-failed');
        box.checked = true;
        box.dispatchEvent(new Event('change'));
        document.body.getBoundingClientRect();  // include the layout of the new rows
        return [performance.now() - start, document.getElementById('shown-count').textContent];
        """
    )
    assert filtered[1] == str(len(failing))
    visible = [r for r in _rows(driver) if r.is_displayed()]
    assert visible
    assert all(r.get_attribute("data-status") != "pass" for r in visible)
    # Opening a row builds its transcript; model text is text, never markup.
    visible[0].click()
    detail = driver.find_element(By.ID, visible[0].get_attribute("id") + "-detail")
    assert "transcript" in detail.text.lower()
    assert driver.execute_script("return window.__pwned === undefined")
    budget = _budget_ms()
    print(
        f"20,000 tests: opened in {opened:.0f} ms, failed-only filter in {filtered[0]:.0f} ms "
        f"(budget {budget:.0f} ms)"
    )
    assert opened < budget
    assert filtered[0] < budget


def test_a_planted_script_in_a_large_report_does_not_run(driver: Any, tmp_path: Path) -> None:
    import dataclasses

    from selenium.webdriver.common.by import By
    from test_reports import PLANTED

    run, path = _synthetic(tmp_path, 1_500)
    records = list(run.records)
    records[4] = dataclasses.replace(
        records[4], output=PLANTED + "</script><script>window.__pwned=3</script>"
    )
    path.unlink()
    write_output(dataclasses.replace(run, records=tuple(records)), path, None, builtin_formats())
    driver.get(path.as_uri())
    row = driver.find_element(By.ID, "t4")
    row.click()
    output = driver.find_element(By.CSS_SELECTOR, "#t4-detail pre.model-output").text
    assert PLANTED in output
    assert driver.execute_script("return window.__pwned === undefined")
    assert driver.title != "pwned"


def test_a_50_mb_output_gives_a_small_report_that_opens(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    _, path = _synthetic(tmp_path, 3, big_output=50 * 2**20)
    assert path.stat().st_size < 1 * 2**20
    opened = _timed_open(driver, path)
    assert opened < _budget_ms()
    row = driver.find_element(By.ID, "t1")
    row.click()
    detail = driver.find_element(By.ID, "t1-detail")
    assert "results.jsonl" in detail.text
    assert f"{50 * 2**20:,}" in detail.text


ROUTED_SUITE = """
version: 1
type: capability
skill: skill/SKILL.md
trigger: {calibrate: true}
model:
  provider: scripted
  responses:
    - {arm: router, id: "(content-free)", scores: {commit-message: -1.0, none: -0.2}}
    - {arm: router, id: p1, scores: {commit-message: -0.5, none: -0.9}}
    - {arm: router, id: p2, scores: {commit-message: -0.8, none: -0.6}}
    - {arm: router, id: p3, scores: {commit-message: -0.7, none: -0.4}}
    - {arm: router, id: n1, scores: {commit-message: -2.0, none: -0.1}}
    - {arm: router, id: n2, scores: {commit-message: -1.5, none: -0.5}}
    - {output: "feat: x"}
tests:
  - {id: p1, prompt: "Write a commit message for the parser fix", should_trigger: true}
  - {id: p2, prompt: "Commit message for renaming a module", should_trigger: true}
  - {id: p3, prompt: "Commit message please: bump deps", should_trigger: true}
  - {id: n1, prompt: "What is 2 plus 2?", should_trigger: false}
  - {id: n2, prompt: "Name a colour", should_trigger: false}
"""

UNQUALIFIED = {
    "checked": True,
    "qualified": False,
    "reasons": ["the accuracy interval [0.38, 0.62] reaches the chance level 0.50"],
    "accuracy": 0.5,
    "accuracy_ci95": [0.38, 0.62],
    "chance": 0.5,
    "auroc": 0.55,
    "auroc_ci95": [0.41, 0.69],
    "cases": 64,
    "checked_at": "2026-12-01T00:00:00+00:00",
}


@pytest.fixture(scope="module")
def trigger_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """A run whose router scores its options, calibrated, with an unqualified router verdict."""
    from test_reports import SKILL, run_doc, write

    folder = tmp_path_factory.mktemp("browser-trigger")
    write(folder / "skill" / "SKILL.md", SKILL)
    suite = write(folder / "suite.yaml", ROUTED_SUITE)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SKILLEVAL_HOME", str(folder / "home"))
        doc = run_doc(suite, None)
    doc["trigger"]["router"] = UNQUALIFIED
    path = folder / "trigger.html"
    write_output(typed(doc), path, None, builtin_formats())
    return doc, path


def test_the_trigger_card_shows_auroc_calibration_and_the_router(
    driver: Any, trigger_report: tuple[dict[str, Any], Path]
) -> None:
    from selenium.webdriver.common.by import By

    doc, path = trigger_report
    driver.get(path.as_uri())
    assert [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")] == []
    auroc = driver.find_element(By.ID, "trigger-auroc")
    assert auroc.is_displayed()
    assert auroc.text == f"{doc['trigger']['auroc']['value']:.2f}" == "1.00"
    assert "95% Newcombe interval" in driver.find_element(By.ID, "trigger-auroc-note").text
    calibrated = driver.find_element(By.ID, "trigger-calibrated")
    assert calibrated.is_displayed()
    recall = calibrated.find_element(By.CSS_SELECTOR, '[data-metric="trigger.calibrated.recall"]')
    assert recall.text == view.pct(doc["trigger"]["calibrated"]["recall"], 1) == "100.0%"
    raw = driver.find_element(By.CSS_SELECTOR, '[data-metric="trigger.recall"]')
    assert raw.text == view.pct(doc["trigger"]["recall"], 1)  # the raw figure stays
    router = driver.find_element(By.ID, "router-fitness")
    assert router.is_displayed()
    assert "router unqualified" in router.text
    assert "reaches the chance level 0.50" in router.text
