"""``skilleval lint``: every check flags its broken suite at the right line, and nothing else."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from skilleval import stats
from skilleval.cli import run_cli
from skilleval.errors import Location
from skilleval.lint import LintCheck, find_check, lint_findings, lint_suite, registered_checks
from skilleval.lint.assertions import always
from skilleval.lint.ngrams import Source, common_run, normalise, similarity, words
from skilleval.lint.view import LintAssert
from skilleval.plugins import PluginManager

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "lint"
BROKEN = sorted(DATA.glob("SE*.yaml"))
MARK = re.compile(r"#\s*expect-next-line:\s*(SE\d{3})")
OVERFITTED = ROOT / "examples" / "overfitted" / "suite.yaml"
CLEAN = sorted(
    [p for p in ROOT.glob("examples/*/suite.yaml") if p != OVERFITTED] + [DATA / "clean.yaml"]
)


@pytest.fixture(autouse=True)
def _in_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Positions are printed relative to the working directory, as users see them."""
    monkeypatch.chdir(ROOT)


def expected(path: Path) -> set[tuple[str, int]]:
    """(check id, line) for every `# expect-next-line: SEnnn` marker in ``path``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return {
        (m.group(1), number + 2)
        for number, line in enumerate(lines)
        if (m := MARK.search(line)) is not None
    }


def active(path: Path) -> set[tuple[str, int]]:
    return {(f.check.id, f.where.line) for f in lint_findings(path) if f.silenced is None}


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_each_broken_suite_gives_exactly_its_findings(path: Path) -> None:
    marks = expected(path)
    assert marks, f"{path.name} has no expect-next-line marker"
    assert {code for code, _ in marks} == {path.stem[:5]}
    assert active(path) == marks


def builtin_checks() -> list[LintCheck]:
    manager = PluginManager()
    manager.load_builtins()
    return registered_checks(manager)


CHECKS = builtin_checks()


def test_every_check_has_a_broken_suite() -> None:
    assert {p.stem[:5] for p in BROKEN} == {c.id for c in CHECKS}


def test_every_check_has_a_docs_entry() -> None:
    docs = (ROOT / "docs" / "lint.md").read_text(encoding="utf-8")
    for check in CHECKS:
        assert f"## {check.id} {check.name}" in docs


@pytest.mark.parametrize("path", CLEAN, ids=lambda p: str(p.relative_to(ROOT)))
def test_clean_suites_give_no_finding(path: Path) -> None:
    assert lint_findings(path) == []


@pytest.mark.parametrize(
    "path", sorted(ROOT.glob("suites/*/suite.yaml")), ids=lambda p: str(p.relative_to(ROOT))
)
def test_shipped_suites_give_no_finding_they_do_not_silence(path: Path) -> None:
    """A shipped suite may silence a check, as the benchmark does SE102, but only with a reason."""
    assert [f for f in lint_findings(path) if f.silenced is None] == []


def test_the_overfitted_example_is_flagged() -> None:
    codes = {f.check.id for f in lint_findings(OVERFITTED)}
    assert codes == {"SE101", "SE102", "SE201", "SE202", "SE203"}


def test_lint_suite_gives_diagnostics_coded_by_check_id() -> None:
    (diag,) = lint_suite(DATA / "SE103-duplicate-prompt.yaml")
    assert diag.code == "SE103"
    assert diag.severity == "error"
    assert str(diag).startswith("tests/data/lint/SE103-duplicate-prompt.yaml:16:5: error: ")


def test_the_shared_phrase_is_shown() -> None:
    (finding,) = lint_findings(DATA / "SE202-prompt-echoes-skill.yaml")
    assert "'turn a list of merged changes into'" in finding.message


def test_a_rubric_cut_short_says_what_the_judge_sees() -> None:
    first = lint_findings(DATA / "SE402-rubric-cut-by-comment.yaml")[0]
    assert "'Lists the login fix under a heading for fixes'" in first.message
    assert first.where.col == 59


# -- silencing -----------------------------------------------------------------------------


def test_silenced_findings_show_with_their_reason() -> None:
    findings = lint_findings(DATA / "SE101-too-few-tests.yaml")
    (silenced,) = [f for f in findings if f.silenced is not None]
    assert silenced.check.id == "SE103"
    assert silenced.severity == "note"
    diag = silenced.diagnostic()
    assert diag.severity == "note"
    assert diag.message.endswith(
        "(silenced: this file shows that a repeated prompt is not counted as a distinct test)"
    )


def copy_with_ignore(tmp_path: Path, name: str, ignore: str) -> Path:
    shutil.copytree(DATA / "skill", tmp_path / "skill")
    text = (DATA / name).read_text(encoding="utf-8") + ignore
    target = tmp_path / name
    target.write_text(text, encoding="utf-8")
    return target


def test_a_silenced_error_no_longer_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ignore = "lint:\n  ignore:\n    - id: SE102\n      reason: trigger-only suite kept elsewhere\n"
    path = copy_with_ignore(tmp_path, "SE102-no-negative-controls.yaml", ignore)
    assert run_cli(["lint", str(path)]) == 0
    err = capsys.readouterr().err
    assert "note: no test has `should_trigger: false`" in err
    assert "(silenced: trigger-only suite kept elsewhere) [SE102 no-negative-controls]" in err
    assert "0 errors, 0 warnings, 1 silenced" in err


def test_a_check_is_silenced_by_name_too(tmp_path: Path) -> None:
    ignore = "lint:\n  ignore:\n    - id: no-negative-controls\n      reason: kept elsewhere\n"
    path = copy_with_ignore(tmp_path, "SE102-no-negative-controls.yaml", ignore)
    (finding,) = lint_findings(path)
    assert finding.silenced == "kept elsewhere"


def test_invalid_suites_cannot_be_silenced(tmp_path: Path) -> None:
    ignore = "lint:\n  ignore:\n    - id: SE400\n      reason: wishful\n"
    path = copy_with_ignore(tmp_path, "SE400-invalid-suite.yaml", ignore)
    findings = {(f.check.id, f.severity) for f in lint_findings(path)}
    assert findings == {("SE400", "error"), ("SE001", "warning")}


# -- the command ---------------------------------------------------------------------------


def test_exit_code_is_4_on_errors_and_0_on_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["lint", str(DATA / "SE103-duplicate-prompt.yaml")]) == 4
    assert run_cli(["lint", str(DATA / "SE104-near-duplicate-prompt.yaml")]) == 0
    assert run_cli(["lint", str(DATA / "clean.yaml")]) == 0
    err = capsys.readouterr().err
    assert "SE104-near-duplicate-prompt.yaml:16:5: warning: " in err
    assert "[SE104 near-duplicate-prompt]" in err


def test_strict_turns_warnings_into_failures() -> None:
    assert run_cli(["lint", "--strict", str(DATA / "SE104-near-duplicate-prompt.yaml")]) == 4
    assert run_cli(["lint", "--strict", str(DATA / "clean.yaml")]) == 0


def test_several_suites_fail_when_any_does() -> None:
    args = ["lint", str(DATA / "clean.yaml"), str(DATA / "SE303-unscored-test.yaml")]
    assert run_cli(args) == 4


def test_json_is_one_document_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code = run_cli(["lint", "--json", str(DATA / "SE101-too-few-tests.yaml")])
    out, err = capsys.readouterr()
    assert code == 4
    assert err == ""
    doc = json.loads(out)
    assert doc["ok"] is False
    (file,) = doc["files"]
    assert file["counts"] == {"error": 1, "warning": 0, "silenced": 1}
    first = file["findings"][0]
    assert first == {
        "path": "tests/data/lint/SE101-too-few-tests.yaml",
        "line": 7,
        "col": 1,
        "severity": "error",
        "code": "SE101",
        "name": "too-few-tests",
        "message": first["message"],
        "silenced": None,
    }
    assert file["findings"][1]["silenced"].startswith("this file shows")


# -- robustness ----------------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def test_unreadable_suites_are_findings_not_crashes(tmp_path: Path) -> None:
    missing = lint_findings(tmp_path / "nope.yaml")
    assert [f.check.id for f in missing] == ["SE401"]
    broken = write(tmp_path / "broken.yaml", "tests: [\n")
    assert [f.check.id for f in lint_findings(broken)] == ["SE400"]
    listing = write(tmp_path / "list.yaml", "- a\n- b\n")
    assert [f.check.id for f in lint_findings(listing)] == ["SE400"]


def test_checks_go_on_when_a_file_is_missing(tmp_path: Path) -> None:
    path = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        model: echo
        prompts: ["{{q}}"]
        tests:
          - vars: {q: "file://gone.txt"}
            assert: [{type: icontains, value: x}]
          - vars: {q: "What is 2+2?"}
            assert: [{type: contains, value: ""}]
        """,
    )
    assert {(f.check.id, f.where.line) for f in lint_findings(path)} == {
        ("SE401", 5),
        ("SE301", 8),
    }


def test_tests_from_files_are_checked_where_they_are_written(tmp_path: Path) -> None:
    shutil.copytree(DATA / "skill", tmp_path / "skill")
    write(
        tmp_path / "cases.yaml",
        """
        - id: echoing
          should_trigger: true
          vars:
            request: Turn a list of merged changes into notes for v9.
          assert:
            - type: llm-rubric
              value: Mentions v9 # and nothing else
        """,
    )
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        skill: skill/SKILL.md
        model: echo
        prompts: ["{{request}}"]
        tests: file://cases.yaml
        lint:
          ignore:
            - {id: SE101, reason: one test is enough to show the point}
            - {id: SE102, reason: one test is enough to show the point}
        """,
    )
    found = {
        (f.check.id, Path(f.where.path).name, f.where.line)
        for f in lint_findings(suite)
        if f.silenced is None
    }
    assert found == {("SE202", "cases.yaml", 4), ("SE402", "cases.yaml", 7)}


# -- helpers -------------------------------------------------------------------------------


def test_checks_are_found_by_id_or_name() -> None:
    assert find_check("se202", CHECKS) is find_check("prompt-echoes-skill", CHECKS)
    assert find_check("SE999", CHECKS) is None
    assert len({c.id for c in CHECKS}) == len(CHECKS)
    assert len({c.name for c in CHECKS}) == len(CHECKS)


def test_words_ignore_case_punctuation_and_hyphens() -> None:
    assert words("Commit-Message: «Fix» the_bug!") == ["commit", "message", "fix", "the", "bug"]
    assert normalise("What is  the capital of France?") == normalise(
        "what is the capital of france"
    )


def test_shared_runs_need_content_words() -> None:
    source = Source("Write a git commit message for a described code change.")
    assert source.longest_distinctive(words("a commit message for a friend"), 3) is None
    phrase = source.longest_distinctive(words("please write a git commit message for me"), 3)
    assert phrase is not None
    assert phrase.text == "write a git commit message for"
    assert source.contains(words("git commit"))
    assert not source.contains(words("commit git"))


def test_similarity_and_common_run() -> None:
    a, b = words("plan a trip to lisbon"), words("plan a trip to porto")
    assert similarity(a, b) == pytest.approx(0.8)
    assert similarity([], []) == 1.0
    assert common_run([a, b, words("we plan a trip soon")]) == ("plan", "a", "trip")


def entry(kind: str, value: object, threshold: float | None = None) -> LintAssert:
    base = kind.removeprefix("not-")
    return LintAssert(kind, base, base != kind, value, 1.0, threshold, ROOT_AT, "deterministic")


ROOT_AT = Location("suite.yaml", 1, 1)


@pytest.mark.parametrize(
    ("kind", "value", "outcome"),
    [
        ("contains", "", "pass"),
        ("icontains", "x", None),
        ("contains-any", ["a", ""], "pass"),
        ("contains-all", ["", ""], "pass"),
        ("contains-all", ["a", ""], None),
        ("regex", "(?m)^", "pass"),
        ("regex", "^$", None),
        ("not-regex", ".*", "fail"),
        ("min-length", 0, "pass"),
        ("max-length", 0, "fail"),
        ("not-max-length", 0, "pass"),
        ("max-tokens", 0, "fail"),
        ("word-count", 0, "fail"),
        ("word-count", {"min": 0}, "pass"),
        ("word-count", {"max": 0}, "fail"),
        ("word-count", {"min": 1, "max": 5}, None),
        ("expr", "1 + 1 == 2", "pass"),
        ("expr", "len(output) > 3", None),
        ("expr", "false", "fail"),
        ("latency", 0, "fail"),
    ],
)
def test_assertions_that_decide_nothing(kind: str, value: object, outcome: str | None) -> None:
    found = always(entry(kind, value))
    assert (found[0] if found else None) == outcome


def test_too_few_tests_states_the_two_sided_p_and_the_tests_needed() -> None:
    (finding,) = [f for f in lint_findings(DATA / "SE101-too-few-tests.yaml") if f.silenced is None]
    plan = stats.plan_power(3, win_rate=0.8, tie_rate=0.5)
    assert "4 wins out of 4 has p = 0.125 two-sided (0.0625 one-sided)" in finding.message
    assert f"about {plan.tests_needed} tests give an 80% chance of `helps`" in finding.message
