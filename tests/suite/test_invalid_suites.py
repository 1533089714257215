"""Every invalid suite under tests/data/invalid yields its pinned diagnostics and exit code 4.

Each ``NAME.yaml`` sits beside ``NAME.expected``, the exact stderr of
``skilleval validate NAME.yaml``. Set ``SKILLEVAL_UPDATE_GOLDENS=1`` to rewrite them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skilleval.cli import run_cli

INVALID = Path(__file__).resolve().parents[1] / "data" / "invalid"
CASES = sorted(INVALID.glob("*.yaml"))


@pytest.mark.parametrize("suite", CASES, ids=lambda p: p.stem)
def test_invalid_suite_reports_pinned_diagnostics(
    suite: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(INVALID)
    code = run_cli(["validate", suite.name, "--no-entry-points"])
    err = capsys.readouterr().err
    golden = suite.with_suffix(".expected")
    if os.environ.get("SKILLEVAL_UPDATE_GOLDENS") == "1":
        golden.write_text(err, encoding="utf-8")
    assert code == 4
    assert "Traceback" not in err
    assert err == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("suite", CASES, ids=lambda p: p.stem)
def test_invalid_suite_never_runs(
    suite: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run` rejects the same files with the same exit code, before calling any model."""
    monkeypatch.chdir(INVALID)
    assert run_cli(["run", suite.name, "--no-entry-points", "--model", "echo"]) == 4
    assert "Traceback" not in capsys.readouterr().err


def test_every_diagnostic_has_a_position() -> None:
    for golden in INVALID.glob("*.expected"):
        for line in golden.read_text(encoding="utf-8").splitlines()[:-1]:
            path, line_no, col, *_ = line.split(":")
            assert path, (golden.name, line)
            assert line_no.isdigit(), (golden.name, line)
            assert col.isdigit(), (golden.name, line)


def test_json_output_lists_diagnostics(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    monkeypatch.chdir(INVALID)
    assert run_cli(["validate", "misspelled-type.yaml", "--json", "--no-entry-points"]) == 4
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False
    first = out["files"][0]["diagnostics"][0]
    assert (first["line"], first["col"]) == (5, 15)
    assert "did you mean 'contains'" in first["message"]


def test_seven_independent_mistakes_are_reported_by_one_validate(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    monkeypatch.chdir(INVALID)
    assert run_cli(["validate", "seven-mistakes.yaml", "--json", "--no-entry-points"]) == 4
    diags = json.loads(capsys.readouterr().out)["files"][0]["diagnostics"]
    lines = [d["line"] for d in diags]
    assert lines == sorted(lines)
    assert len(diags) == 7
    assert len(set(lines)) == 7


def test_schema_errors_set_aside_only_the_part_that_is_wrong(tmp_path: Path) -> None:
    """An unknown key, a bad weight and a bad test key each hide nothing else."""
    from skilleval.errors import SuiteError
    from skilleval.suite.load import load_suite

    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "version: 1\n"
        "unknown_key: 1\n"
        "defaultTest:\n"
        "  assert:\n"
        "    - {type: contains, value: a, weight: heavy}\n"
        "    - {type: regex, value: '('}\n"
        "tests:\n"
        "  - prompt: one\n"
        "    should_trigger: maybe\n"
        "    assert: [{type: regex, value: '[z'}]\n"
        "  - prompt: two\n"
        "    assert:\n"
        "      - {type: contains, value: b, weight: -1}\n"
        "      - {type: contians, value: c}\n",
        encoding="utf-8",
    )
    with pytest.raises(SuiteError) as caught:
        load_suite(suite)
    found = [(d.where.line, d.message.split(":")[0]) for d in caught.value.diagnostics]
    assert [line for line, _ in found] == [2, 5, 6, 9, 13, 14]
