"""Reports: the results schema, every output format, loading runs back, compare and progress."""

from __future__ import annotations

import copy
import csv
import io
import json
import os
import re
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from fakes import COMMIT_SKILL

from skilleval.cli import run_cli
from skilleval.errors import SkillevalError, UsageError
from skilleval.report import view
from skilleval.report.compare import compare, render_text
from skilleval.report.csvout import render_csv
from skilleval.report.html import csp_hash, render_html
from skilleval.report.junit import render_junit
from skilleval.report.markdown import render_markdown
from skilleval.report.outputs import SUPPORTED, builtin_formats, write_output
from skilleval.report.progress import Tally, progress_reporter
from skilleval.results.codec import decode
from skilleval.results.load import (
    ReportWarning,
    load_run,
    rebuild_from_jsonl,
    validate_document,
)
from skilleval.results.model import Run
from skilleval.results.records import CallStats, Record
from skilleval.results.write import run_json
from skilleval.suite.schema import load_schema

ROOT = Path(__file__).resolve().parents[2]

PLANTED = "<script>document.title='pwned';window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">"

SCRIPTED = """
version: 1
model:
  provider: scripted
  responses:
    - id: paris
      output: "Paris is the capital of France."
    - id: madrid
      output: "{madrid}"
    - id: rome
      output: "Rome."
prompts: ["Capital of {{{{country}}}}?"]
tests:
  - id: paris
    vars: {{country: France}}
    assert:
      - type: icontains
        value: paris
  - id: madrid
    vars: {{country: Spain}}
    assert:
      - type: icontains
        value: madrid
      - type: not-regex
        value: "(?i)i think"
  - id: rome
    vars: {{country: Italy}}
    assert:
      - type: equals
        value: Rome.
"""

SKILL = COMMIT_SKILL

OTHER = """
---
name: haiku
description: Write a haiku about a topic.
---

Three lines, 5-7-5 syllables.
"""

SKILL_SUITE = """
version: 1
type: regression
threshold: 0.5
skill: skill/SKILL.md
skills: [other/SKILL.md]
arms: [off, on, routed]
decoding: {mode: distribution, temperature: 0.7, seed: 3}
trials: 3
model:
  provider: scripted
  responses:
    - arm: router
      match: "commit message for change [0-4]"
      output: commit-message
    - arm: router
      match: "haiku"
      output: haiku
    - arm: on
      id: change-2
      outputs: ["feat: add the thing", "PLANTED", "feat: add it"]
    - arm: on
      output: "feat: add the thing"
    - arm: routed
      output: "feat: add the thing"
    - arm: off
      outputs: ["Sure! Here is a message about your change.", "feat: maybe", "Sure!"]
tests:
  - {id: change-0, should_trigger: true, prompt: "Write a commit message for change 0", assert: [{type: regex, value: "^feat: "}]}
  - {id: change-1, should_trigger: true, prompt: "Write a commit message for change 1", assert: [{type: regex, value: "^feat: "}, {type: max-length, value: 40}]}
  - {id: change-2, should_trigger: true, prompt: "Write a commit message for change 2", assert: [{type: regex, value: "^feat: "}]}
  - {id: change-3, should_trigger: true, prompt: "Write a commit message for change 3", assert: [{type: regex, value: "^feat: "}]}
  - {id: change-4, should_trigger: true, prompt: "Write a commit message for change 4", assert: [{type: regex, value: "^feat: "}]}
  - {id: change-5, should_trigger: true, prompt: "Write a commit message for change 5", assert: [{type: regex, value: "^feat: "}]}
  - {id: control-0, should_trigger: false, prompt: "What is 1 plus 1?", assert: [{type: not-icontains, value: feat}]}
  - {id: control-1, should_trigger: false, prompt: "Write a haiku about rain"}
"""

OVERFIT = {
    "severity": "Moderate",
    "score": 0.42,
    "per_element": 0.5,
    "holistic": 0.25,
    "reason": "two checks reward copying the skill's wording",
    "unclassified": [],
    "items": [
        {
            "kind": "assertion",
            "index": 1,
            "test_id": "change-0",
            "text": "regex ^feat: <b>bold</b>",
            "label": "narrow",
            "reasoning": "the prefix is spelled out in SKILL.md",
        }
    ],
}


def typed(doc: dict[str, Any]) -> Run:
    """A results document (as a test built or changed it) as the typed run renderers take."""
    return decode(Run, doc)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def runs_dir() -> Path:
    return Path(os.environ["SKILLEVAL_HOME"]) / "runs"


def run_doc(suite: Path, capsys: pytest.CaptureFixture[str] | None, *extra: str) -> dict[str, Any]:
    """Run a suite in-process; its --json stdout, or (without capsys) its results.json."""
    run_cli(["run", str(suite), "--json", *extra])
    if capsys is None:
        text = (runs_dir() / "latest" / "results.json").read_text(encoding="utf-8")
    else:
        text = capsys.readouterr().out
    doc: dict[str, Any] = json.loads(text)
    return doc


def scripted_suite(
    folder: Path, madrid: str = "I think it is Madrid.", name: str = "suite"
) -> Path:
    return write(folder / f"{name}.yaml", SCRIPTED.format(madrid=madrid))


def skill_doc(folder: Path, capsys: pytest.CaptureFixture[str] | None) -> dict[str, Any]:
    """A real skill run (three arms, three trials) with an overfit and a judge block added."""
    write(folder / "skill" / "SKILL.md", SKILL)
    write(folder / "other" / "SKILL.md", OTHER)
    text = SKILL_SUITE.replace('"PLANTED"', json.dumps(PLANTED))
    suite = folder / "suite.yaml"
    suite.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    doc = run_doc(suite, capsys)
    doc["overfit"] = copy.deepcopy(OVERFIT)
    doc["judge"] = {
        "model": {
            "kind": "gguf",
            "name": "judge.gguf",
            "file": "/m/judge.gguf",
            "size": 10,
            "sha256": "ab" * 32,
        },
        "greedy": True,
        "seed": 0,
        "same_as_generator": True,
    }
    return doc


# --------------------------------------------------------------------------- schema


def test_results_schema_is_valid_draft_2020_12_and_ships_as_package_data() -> None:
    from jsonschema import Draft202012Validator

    schema = load_schema("results.schema.json")
    Draft202012Validator.check_schema(schema)
    on_disk = json.loads((ROOT / "schemas" / "results.schema.json").read_text(encoding="utf-8"))
    assert schema == on_disk


@pytest.mark.parametrize("example", ["quickstart", "plugins"])
def test_example_documents_validate(example: str, capsys) -> None:
    doc = run_doc(ROOT / "examples" / example / "suite.yaml", capsys)
    assert validate_document(doc) == []


def test_failing_run_document_validates(tmp_path: Path, capsys) -> None:
    doc = run_doc(scripted_suite(tmp_path), capsys)
    assert doc["gate"]["passed"] is False
    assert validate_document(doc) == []


def test_skill_document_with_every_block_validates(tmp_path: Path, capsys) -> None:
    doc = skill_doc(tmp_path, capsys)
    assert {"lift", "trigger", "reliability"} <= {k for k, v in doc.items() if v}
    assert set(doc["reliability"]) == {"off", "on", "routed"}
    assert validate_document(doc) == []


def test_judged_document_validates_and_reports_the_model_tier_apart(tmp_path: Path, capsys) -> None:
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        type: capability
        model: echo
        judge: echo
        prompts: ["{{q}}"]
        tests:
          - id: a
            vars: {q: Paris}
            assert:
              - {type: llm-rubric, value: Names Paris.}
              - {type: icontains, value: paris}
        """,
    )
    doc = run_doc(suite, capsys)
    assert doc["judge"]["same_as_generator"] is True
    assert validate_document(doc) == []
    tiers = doc["summary"]["arms"]["default"]["tiers"]
    html = render_html(typed(doc))
    for tier in ("deterministic", "model"):
        rate = tiers[tier]["pass_rate"]
        assert f'data-metric="arms.default.tiers.{tier}.pass_rate" data-value="{rate}"' in html
    assert "grades its own outputs" in html


def test_schema_rejects_a_document_that_drifted(tmp_path: Path, capsys) -> None:
    doc = skill_doc(tmp_path, capsys)
    doc["lift"]["verdict"] = "great"
    doc["records"][0]["stauts"] = "pass"
    problems = validate_document(doc)
    assert any(p.startswith("lift") for p in problems)
    assert any("stauts" in p for p in problems)


# --------------------------------------------------------------------------- output formats


@pytest.fixture
def failing_doc(tmp_path: Path, capsys) -> dict[str, Any]:
    return run_doc(scripted_suite(tmp_path / "s"), capsys)


def test_every_extension_writes_its_format(tmp_path: Path, failing_doc: dict[str, Any]) -> None:
    for ext in SUPPORTED:
        write_output(
            typed(failing_doc), tmp_path / "out" / f"results{ext}", None, builtin_formats()
        )
    out = tmp_path / "out"
    assert json.loads((out / "results.json").read_text(encoding="utf-8")) == failing_doc
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == failing_doc["records"]
    assert (out / "results.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert ET.parse(out / "results.xml").getroot().tag == "testsuites"
    assert "skilleval FAILED" in (out / "results.md").read_text(encoding="utf-8")
    with (out / "results.csv").open(encoding="utf-8", newline="") as fh:
        assert [r["test_id"] for r in csv.DictReader(fh)] == ["paris", "madrid", "rome"]


def test_jsonl_output_copies_the_streamed_file_byte_for_byte(tmp_path: Path, capsys) -> None:
    doc = run_doc(scripted_suite(tmp_path), capsys)
    source = runs_dir() / "latest" / "results.jsonl"
    write_output(typed(doc), tmp_path / "copy.jsonl", source, builtin_formats())
    assert (tmp_path / "copy.jsonl").read_bytes() == source.read_bytes()


def _empty_run(folder: Path) -> Run:
    (folder / "results.jsonl").write_text("", encoding="utf-8")
    return rebuild_from_jsonl(folder / "results.jsonl")


def test_unknown_extension_is_an_error_listing_the_supported_ones(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"\.json, \.jsonl, \.html, \.xml, \.md, \.csv") as err:
        write_output(_empty_run(tmp_path), tmp_path / "results.yaml", None, builtin_formats())
    assert isinstance(err.value, SkillevalError)
    assert not (tmp_path / "results.yaml").exists()


def test_junit_has_one_testcase_per_test_and_arm_with_failures_and_errors(
    failing_doc: dict[str, Any],
) -> None:
    doc = copy.deepcopy(failing_doc)
    rome = next(r for r in doc["records"] if r["test_id"] == "rome")
    rome.update(status="error", error="model timed out", asserts=[], output="")
    root = ET.fromstring(render_junit(typed(doc)))
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {"paris", "madrid", "rome"}
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "1", "1")
    failure = cases["madrid"].find("failure")
    assert failure is not None
    assert "not-regex" in (failure.text or "")
    error = cases["rome"].find("error")
    assert error is not None
    assert error.get("message") == "error: model timed out"
    assert cases["paris"].find("failure") is None


def test_junit_survives_control_characters_in_outputs(failing_doc: dict[str, Any]) -> None:
    doc = copy.deepcopy(failing_doc)
    doc["records"][0]["output"] = "coloured \x1b[31mred\x1b[0m \x00 text"
    root = ET.fromstring(render_junit(typed(doc)))
    out = next(root.iter("system-out")).text or ""
    assert "\\x1b[31mred" in out


def test_markdown_summarises_verdict_tiers_and_failing_tests(failing_doc: dict[str, Any]) -> None:
    doc = copy.deepcopy(failing_doc)
    md = render_markdown(typed(doc))
    assert md.startswith("## ❌ skilleval FAILED")
    assert "| default | 67% (2/3) | 67% (2/3) | — | 0 |" in md
    assert "### Not passing (1)" in md
    assert "`madrid`" in md


def test_markdown_escapes_model_text(failing_doc: dict[str, Any]) -> None:
    doc = copy.deepcopy(failing_doc)
    madrid = next(r for r in doc["records"] if r["test_id"] == "madrid")
    madrid["asserts"][1]["reason"] = "saw <script>x</script> | and a pipe"
    md = render_markdown(typed(doc))
    assert "<script>" not in md
    assert "&lt;script&gt;x&lt;/script&gt; \\| and a pipe" in md


def test_markdown_includes_lift_trigger_reliability_and_overfit(tmp_path: Path, capsys) -> None:
    md = render_markdown(typed(skill_doc(tmp_path, capsys)))
    assert "**Lift** (ON − OFF): +100.0 pp" in md
    assert "**Triggering**: accuracy 88%" in md
    assert "**Reliability** \\[on\\]" in md or "**Reliability** [on]" in md
    assert "**Overfitting**: Moderate" in md
    assert "grades its own outputs" in md


def test_csv_has_one_row_per_test_and_arm_and_defuses_formulas(tmp_path: Path, capsys) -> None:
    doc = skill_doc(tmp_path, capsys)
    doc["records"][0]["output"] = '=HYPERLINK("http://x")'
    rows = list(csv.DictReader(io.StringIO(render_csv(typed(doc)))))
    assert len(rows) == 8 * 3
    assert {(r["test_id"], r["arm"]) for r in rows} >= {("change-0", "off"), ("change-0", "routed")}
    first = next(r for r in rows if (r["test_id"], r["arm"]) == ("change-0", "off"))
    assert first["output"].startswith("'=HYPERLINK")
    assert (first["trials"], first["passed"], first["status"]) == ("3", "1", "fail")


# --------------------------------------------------------------------------- HTML


def test_html_escapes_model_text_and_allows_only_its_own_script(
    failing_doc: dict[str, Any],
) -> None:
    doc = copy.deepcopy(failing_doc)
    doc["records"][0]["output"] = PLANTED
    doc["records"][0]["messages"][0]["content"] = "</pre><script>alert(1)</script>"
    doc["records"][1]["asserts"][0]["reason"] = "<b onmouseover=alert(1)>x</b>"
    html = render_html(typed(doc))
    assert "document.title='pwned'" not in html
    assert "&lt;script&gt;document.title=&#39;pwned&#39;" in html
    assert "<b onmouseover" not in html
    scripts = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    assert len(scripts) == 1
    assert f"script-src {csp_hash(scripts[0])}" in html


def test_html_is_self_contained(tmp_path: Path, capsys) -> None:
    html = render_html(typed(skill_doc(tmp_path, capsys)))
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "@import" not in html
    assert "default-src 'none'" in html


def test_html_shows_the_skill_sections_only_when_present(
    tmp_path: Path, capsys, failing_doc
) -> None:
    full = render_html(typed(skill_doc(tmp_path, capsys)))
    for section in ("lift", "reliability", "trigger", "overfit"):
        assert f'id="{section}"' in full
    assert "grades its own outputs" in full
    plain = render_html(typed(failing_doc))
    for section in ("lift", "reliability", "trigger", "overfit"):
        assert f'id="{section}"' not in plain


def test_html_rows_carry_filter_attributes(failing_doc: dict[str, Any]) -> None:
    html = render_html(typed(failing_doc))
    row = re.search(r'<tr class="row[^"]*" id="t1"[^>]*>', html, flags=re.S)
    assert row is not None
    tag = row.group(0)
    assert 'data-test="madrid"' in tag
    assert 'data-status="fail"' in tag
    assert 'data-fail-types="not-regex"' in tag


# --------------------------------------------------------------------------- loading runs


def test_load_run_reads_the_latest_run_directory(tmp_path: Path, capsys) -> None:
    doc = run_doc(scripted_suite(tmp_path), capsys)
    assert run_json(load_run(runs_dir() / "latest")) == doc
    assert run_json(load_run(runs_dir())) == doc
    assert run_json(load_run(runs_dir() / "latest" / "results.jsonl")) == doc


def test_truncated_jsonl_is_rebuilt_as_an_incomplete_run(tmp_path: Path, capsys) -> None:
    run_doc(scripted_suite(tmp_path), capsys)
    run = (runs_dir() / "latest").resolve()
    (run / "results.json").unlink()
    lines = (run / "results.jsonl").read_text(encoding="utf-8").splitlines()
    broken = [lines[0], "{not json", lines[1], lines[2][: len(lines[2]) // 2]]
    (run / "results.jsonl").write_text("\n".join(broken), encoding="utf-8")

    with pytest.warns(ReportWarning) as caught:
        loaded = load_run(run)
    doc = run_json(loaded)
    messages = [str(w.message) for w in caught]
    assert any("results.jsonl:2: skipped a corrupt line" in m for m in messages)
    assert any("results.jsonl:4: skipped a corrupt line" in m for m in messages)
    assert doc["status"] == "incomplete"
    assert "did not finish" in doc["notes"][0]
    assert [r["test_id"] for r in doc["records"]] == ["paris", "madrid"]
    assert doc["summary"]["arms"]["default"]["passed"] == 1
    assert validate_document(doc) == []
    html = render_html(typed(doc))
    assert "This run is incomplete." in html
    assert "INCOMPLETE" in render_markdown(typed(doc))


def test_report_command_renders_an_incomplete_run_with_warnings(tmp_path: Path, capsys) -> None:
    run_doc(scripted_suite(tmp_path), capsys)
    run = (runs_dir() / "latest").resolve()
    (run / "results.json").unlink()
    with (run / "results.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"test_id": "rom')
    assert run_cli(["report", str(run)]) == 0
    err = capsys.readouterr().err
    assert "results.jsonl:4: skipped a corrupt line" in err
    assert (run / "report.html").is_file()


@pytest.mark.parametrize(
    ("version", "message"),
    [
        (2, "results format version 2, written by a newer skilleval"),
        ("1.0", "unknown results format version '1.0'"),
        (None, "unknown results format version None"),
    ],
)
def test_unknown_results_version_is_a_clear_error(
    tmp_path: Path, version: Any, message: str
) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"version": version, "records": []}), encoding="utf-8")
    with pytest.raises(SkillevalError, match=re.escape(message)):
        load_run(path)


def test_report_command_names_the_unknown_version_without_a_traceback(
    tmp_path: Path, capsys
) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"version": 9, "records": []}), encoding="utf-8")
    assert run_cli(["report", str(path)]) == 4
    err = capsys.readouterr().err
    assert "version 9" in err
    assert "Traceback" not in err


def test_missing_run_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SkillevalError, match="no run at"):
        load_run(tmp_path / "nowhere")


# --------------------------------------------------------------------------- report command


def test_report_command_writes_report_html_into_the_run_by_default(tmp_path: Path, capsys) -> None:
    run_doc(scripted_suite(tmp_path), capsys)
    code = run_cli(["report", str(runs_dir() / "latest"), "--json"])
    captured = capsys.readouterr()
    assert code == 0
    written = json.loads(captured.out)["written"]
    assert written == [str(runs_dir() / "latest" / "report.html")]
    assert "<!DOCTYPE html>" in Path(written[0]).read_text(encoding="utf-8")


def test_report_command_writes_each_output(tmp_path: Path, capsys) -> None:
    run_doc(scripted_suite(tmp_path), capsys)
    md, xml = tmp_path / "summary.md", tmp_path / "junit.xml"
    assert run_cli(["report", str(runs_dir() / "latest"), "-o", str(md), "-o", str(xml)]) == 0
    assert md.is_file()
    assert xml.is_file()


def test_report_command_rejects_an_unknown_extension_before_reading(tmp_path: Path, capsys) -> None:
    assert run_cli(["report", str(tmp_path), "-o", str(tmp_path / "r.pdf")]) == 2
    assert ".json, .jsonl, .html, .xml, .md, .csv" in capsys.readouterr().err


# --------------------------------------------------------------------------- compare


def two_runs(tmp_path: Path, capsys, before: str, after: str, **kw: str) -> tuple[Path, Path]:
    suite = scripted_suite(tmp_path, madrid=before, **kw)
    run_doc(suite, capsys)
    first = (runs_dir() / "latest").resolve()
    scripted_suite(tmp_path, madrid=after, **kw)
    run_doc(suite, capsys)
    return first, (runs_dir() / "latest").resolve()


def test_compare_catches_a_planted_regression(tmp_path: Path, capsys) -> None:
    a, b = two_runs(tmp_path, capsys, "Madrid.", "I think it is Madrid.")
    assert run_cli(["compare", str(a), str(b)]) == 1
    err = capsys.readouterr().err
    assert "newly failing (1):" in err
    assert "madrid [default] pass → fail" in err
    assert "REGRESSION" in err


def test_compare_json_reports_the_same_result(tmp_path: Path, capsys) -> None:
    a, b = two_runs(tmp_path, capsys, "Madrid.", "I think it is Madrid.")
    assert run_cli(["compare", str(a), str(b), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["regressed"] is True
    assert result["exit_code"] == 1
    assert result["counts"]["newly_failing"] == 1
    madrid = next(t for t in result["tests"] if t["test_id"] == "madrid")
    assert (madrid["change"], madrid["output_changed"]) == ("newly_failing", True)
    assert madrid["outputs_b"] == ["I think it is Madrid."]
    tests_tier = next(t for t in result["tiers"] if t["tier"] == "tests")
    assert tests_tier["change"] == pytest.approx(-1 / 3, abs=1e-5)


def test_compare_an_improvement_exits_zero(tmp_path: Path, capsys) -> None:
    a, b = two_runs(tmp_path, capsys, "I think it is Madrid.", "Madrid.")
    assert run_cli(["compare", str(a), str(b)]) == 0
    err = capsys.readouterr().err
    assert "newly passing (1):" in err
    assert "no regression" in err


def test_compare_a_capability_suite_reports_but_does_not_fail(tmp_path: Path, capsys) -> None:
    a = run_doc(scripted_suite(tmp_path, madrid="Madrid."), capsys)
    b = copy.deepcopy(a)
    next(r for r in b["records"] if r["test_id"] == "madrid")["status"] = "fail"
    a["suite"]["type"] = b["suite"]["type"] = "capability"
    result = compare(typed(a), typed(b))
    assert result.regressed
    assert not result.gating
    assert int(result.exit_code) == 0
    assert "reported only" in render_text(result)


def test_compare_different_suites_warns_and_compares_shared_tests(tmp_path: Path, capsys) -> None:
    a = run_doc(scripted_suite(tmp_path, madrid="Madrid.", name="one"), capsys)
    b_suite = write(
        tmp_path / "two.yaml",
        SCRIPTED.format(madrid="Madrid.").replace("  - id: rome\n", "  - id: lisbon\n"),
    )
    b = run_doc(b_suite, capsys)
    result = compare(typed(a), typed(b))
    assert any("different suites" in w and "2 test(s)" in w for w in result.warnings)
    assert result.shared_tests == 2
    assert {t.test_id for t in result.by_change("only_in_a")} == {"rome"}
    assert {t.test_id for t in result.by_change("only_in_b")} == {"lisbon"}
    assert not result.regressed


def test_compare_shows_lift_and_trigger_changes(tmp_path: Path, capsys) -> None:
    a = skill_doc(tmp_path, capsys)
    b = copy.deepcopy(a)
    b["lift"].update(lift=0.25, verdict="no evidence", ci95=[-0.1, 0.6])
    b["trigger"]["accuracy"] = 0.5
    ranked = {"value": 0.9, "ci95": [0.6, 0.98], "positives": 6, "negatives": 2}
    a["trigger"]["auroc"] = {**ranked, "unscored": [], "reason": None}
    result = compare(typed(a), typed(b))
    lift = {d.name: d for d in result.lift or []}
    assert lift["lift"].change == pytest.approx(-0.75)
    assert result.lift_verdicts == ("helps", "no evidence")
    trig = {d.name: d for d in result.trigger or []}
    assert trig["accuracy"].change == pytest.approx(0.5 - 0.875)
    assert (trig["auroc"].before, trig["auroc"].after) == (0.9, b["trigger"]["auroc"]["value"])
    text = render_text(result)
    assert "lift: verdict helps → no evidence" in text
    assert "accuracy" in text


# --------------------------------------------------------------------------- progress


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def _record(cached: bool, status: str = "pass", tokens: int = 10) -> Record:
    return Record(
        test_id="t",
        arm="default",
        trial=0,
        status=status,  # type: ignore[arg-type]
        score=1.0,
        error=None,
        prompt="",
        messages=(),
        output="",
        stats=CallStats(
            finish_reason="stop",
            prompt_tokens=0,
            completion_tokens=tokens,
            latency_ms=0.0,
            tokens_per_s=0.0,
            cached=cached,
            tokens_evaluated=0,
        ),
        tiers={},
        metrics={},
        asserts=(),
    )


def test_progress_draws_on_a_terminal() -> None:
    stream = FakeTTY()
    with progress_reporter(3, stream=stream) as advance:
        advance(_record(cached=True), 1, 3)
        advance(_record(cached=False, status="fail"), 2, 3)
        advance(_record(cached=False), 3, 3)
    drawn = stream.getvalue()
    assert "3/3" in drawn
    assert "1 cached" in drawn
    assert "tok/s" in drawn


@pytest.mark.parametrize(("stream", "enabled"), [(io.StringIO(), True), (FakeTTY(), False)])
def test_progress_prints_nothing_when_piped_or_quiet(stream: io.StringIO, enabled: bool) -> None:
    with progress_reporter(2, enabled, stream=stream) as advance:
        advance(_record(cached=False), 1, 2)
        advance(_record(cached=False), 2, 2)
    assert stream.getvalue() == ""


def test_progress_counts_cache_hits_and_generated_tokens_per_second() -> None:
    tally = Tally(started=100.0)
    tally.add(_record(cached=True, tokens=50))
    tally.add(_record(cached=False, tokens=30))
    tally.add(_record(cached=False, status="error", tokens=10))
    assert (tally.cache_hits, tally.generated, tally.errors) == (1, 40, 1)
    assert tally.tokens_per_s(now=102.0) == pytest.approx(20.0)
    assert tally.describe(now=102.0) == "1 cached · 20.0 tok/s · 1 errors"


# --------------------------------------------------------------------------- shared view


def test_a_row_with_any_errored_trial_is_an_error(failing_doc: dict[str, Any]) -> None:
    doc = copy.deepcopy(failing_doc)
    doc["records"][0]["status"] = "error"
    statuses = {r.test_id: r.status for r in view.rows(typed(doc))}
    assert statuses == {"paris": "error", "madrid": "fail", "rome": "pass"}
