"""SE305: each deliberate difference a promptfoo config depends on is warned about, at its
line, by `skilleval lint` and by `skilleval import promptfoo`; a config that depends on none
is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from skilleval.cli import run_cli

CONFIG = """providers:
  - id: echo
    config: {tools: [{type: function, function: {name: f, parameters: {type: object}}}]}
prompts: ['{{ q }}']
tests:
  - vars: {q: yes}
    assert:
      - {type: not-contains-json}
      - {type: contains-json, value: {type: number}}
      - {type: icontains, value: STRASSE}
      - {type: icontains-any, value: ['straße', 'road']}
      - {type: levenshtein, value: 'hi 👋', threshold: 2}
      - {type: contains, value: ''}
      - {type: starts-with, value: 42}
      - {type: equals, value: {a: -0.0}}
      - {type: is-sql, value: {databaseType: DB2}}
      - {type: is-valid-openai-tools-call}
      - type: assert-set
        assert:
          - {type: levenshtein, value: 7}
      - {type: meteor, value: the cat sat}
      - {type: skill-used, value: pdf}
      - {type: "trajectory:tool-used", value: search}
"""
# (line of the finding, what it names)
EXPECTED = [
    (8, "not-contains-json"),
    (9, "only a scalar"),
    (11, "folds otherwise"),
    (12, "Basic Multilingual Plane"),
    (13, "empty value"),
    (14, "starts-with"),
    (15, "-0"),
    (16, "no DB2 dialect"),
    (20, "levenshtein: promptfoo wants a text"),
    (21, "meteor: promptfoo 0.123.1 cannot load"),
    (22, "router decision"),
    (23, "agent loop steps"),
]

PLAIN = """providers: [echo]
prompts: ['{{ q }}']
tests:
  - vars: {q: yes}
    assert:
      - {type: contains-json, value: {type: object}}
      - {type: icontains, value: STREET}
      - {type: levenshtein, value: 'hello'}
      - {type: equals, value: {a: 0}}
      - {type: is-sql, value: {databaseType: PostgresQL}}
      - {type: is-valid-openai-tools-call, config: {tools: []}}
"""


def test_lint_warns_at_each_assertion_that_depends_on_a_difference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    run_cli(["lint", str(path)])
    err = capsys.readouterr().err
    found = [line for line in err.splitlines() if "SE305" in line]
    assert len(found) == len(EXPECTED), err
    for (line, what), finding in zip(EXPECTED, sorted(found, key=_line), strict=True):
        assert f"promptfooconfig.yaml:{line}:" in finding, finding
        assert what in finding, finding
        assert "deliberate differences" in finding


def _line(finding: str) -> int:
    return int(finding.split("promptfooconfig.yaml:", 1)[1].split(":", 1)[0])


def test_import_prints_the_same_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    run_cli(["import", "promptfoo", str(path)])
    err = capsys.readouterr().err
    for line, what in EXPECTED:
        assert any(f"promptfooconfig.yaml:{line}:" in w and what in w for w in err.splitlines()), (
            line,
            err,
        )


def test_a_config_that_depends_on_none_is_not_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(PLAIN, encoding="utf-8")
    run_cli(["lint", str(path)])
    assert "SE305" not in capsys.readouterr().err
