"""SE305: a promptfoo config's regex that JavaScript reads otherwise is warned about, by lint
and by `skilleval import promptfoo`; skilleval's own suites are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from skilleval.cli import run_cli

CONFIG = """providers: [echo]
prompts: ['{{ q }}']
tests:
  - vars: {q: yes}
    assert:
      - {type: regex, value: '(?i)^yes'}
      - {type: regex, value: '(?<name>y)es'}
      - {type: not-regex, value: '\\p{Lu}'}
"""


def test_lint_warns_at_each_pattern_javascript_reads_otherwise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    code = run_cli(["lint", str(path)])
    err = capsys.readouterr().err
    assert code == 0
    found = [line for line in err.splitlines() if "SE305" in line]
    assert len(found) == 2, err
    assert "promptfooconfig.yaml:6:" in found[0]
    assert "inline flag" in found[0]
    assert "promptfooconfig.yaml:8:" in found[1]
    assert "Unicode property" in found[1]


def test_import_warns_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    run_cli(["import", "promptfoo", str(path)])
    err = capsys.readouterr().err
    assert "promptfooconfig.yaml:6:" in err
    assert "promptfoo's JavaScript reads otherwise" in err


def test_skillevals_own_suite_is_not_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text("version: 1\nmodel: {provider: echo}\n" + CONFIG.split("\n", 1)[1], "utf-8")
    run_cli(["lint", str(path)])
    assert "SE305" not in capsys.readouterr().err
