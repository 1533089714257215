"""Templates: checked when the suite loads, and limited when they render."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli
from skilleval.errors import SkillevalError, TemplateProblem
from skilleval.promptfoo import rendering
from skilleval.suite import template


def test_template_problems_sit_in_the_error_tree() -> None:
    assert issubclass(TemplateProblem, SkillevalError)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("{{ x | jsonparse }}", 1, "unknown filter 'jsonparse'"),
        ("{% block a %}{% endblock %}{% block a %}{% endblock %}", 1, "defined twice"),
        ("{% if x is shiny %}y{% endif %}", 1, "unknown test 'shiny'"),
        ("a\n{% include 'other.txt' %}", 2, "`include` is not supported"),
        ("{% import 'm.j2' as m %}", 1, "`import` is not supported"),
        ("{% from 'm.j2' import f %}", 1, "`from ... import` is not supported"),
        ("{% extends 'base.j2' %}", 1, "`extends` is not supported"),
        ("a\nb\n{{ x ", 3, "template syntax error"),
    ],
)
def test_a_template_that_cannot_render_is_refused_when_checked(
    text: str, line: int, words: str
) -> None:
    with pytest.raises(TemplateProblem) as caught:
        template.check(text)
    assert words in caught.value.message
    assert caught.value.line == line


def test_checking_returns_the_variables_read() -> None:
    assert template.check("{{ a }}{% for b in c %}{{ b | upper }}{% endfor %}") == {"a", "c"}
    assert template.check("plain text") == frozenset()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{{ range(100000000) | list }}", "Range too big"),
        (
            "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
            "loops ran past",
        ),
        ("{% for a in range(2000) %}{{ 'x' * 1000 }}{% endfor %}", "output passed"),
        ("{{ 'x' * 100000000 }}", "`*` would build"),
        ("{{ [1] * 100000000 }}", "`*` would build"),
        ("{{ 9 ** 100000000 }}", "`**` would build"),
        ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "template error"),
    ],
)
def test_rendering_stops_at_its_limits(text: str, words: str) -> None:
    started = time.process_time()
    with pytest.raises(TemplateProblem) as caught:
        template.render(text, {})
    assert words in caught.value.message
    assert time.process_time() - started < 5


def test_rendering_within_the_limits_is_unchanged() -> None:
    text = "{% for i in range(3) %}{{ i }}{% endfor %} {{ 'ab' * 2 }} {{ 2 ** 10 }} {{ x }}"
    assert template.render(text, {"x": "y"}) == "012 abab 1024 y"
    assert (
        template.render(
            "{% for a in xs %}{% for b in xs %}.{% endfor %}{% endfor %}", {"xs": [1, 2]}
        )
        == "...."
    )


def test_the_loop_budget_is_per_render() -> None:
    text = "{% for a in range(100000) %}{% endfor %}"
    for _ in range(20):  # 2,000,000 steps in all, each render under the limit
        assert template.render(text, {}) == ""


def test_a_template_over_a_limit_is_an_error_verdict_and_the_run_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        textwrap.dedent(
            """
            version: 1
            model: echo
            tests:
              - id: huge
                prompt: "{{ range(100000000) | list }}"
              - id: loops
                prompt: "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
              - id: fine
                prompt: "hello"
                assert: [{type: contains, value: hello}]
            """
        ),
        encoding="utf-8",
    )
    import json

    code = run_cli(["run", str(suite), "--json"])
    doc = json.loads(capsys.readouterr().out)
    status = {r["test_id"]: r["status"] for r in doc["records"]}
    assert status == {"huge": "error", "loops": "error", "fine": "pass"}
    assert code == 3


# -- Nunjucks' filters, as promptfoo configs use them ----------------------------------------


def test_load_parses_json_and_dump_writes_it_compactly() -> None:
    vars_ = {"x": '{"a": [1, "é"]}'}
    assert template.render("{{ (x | load).a[1] }}", vars_) == "é"
    assert template.render("{{ x | load | dump }}", vars_) == '{"a":[1,"é"]}'
    assert template.render("{{ y | dump(2) }}", {"y": {"a": 1}}) == '{\n  "a": 1\n}'


def test_load_of_text_that_is_not_json_is_a_template_problem() -> None:
    with pytest.raises(TemplateProblem, match="load: not valid JSON"):
        template.render("{{ x | load }}", {"x": "nope"})


def test_a_variable_read_only_through_default_is_optional() -> None:
    assert template.check("{{ z | default }} {{ w | d('q') }} {{ v }}") == {"v"}
    assert template.check("{{ z | default }} {{ z }}") == {"z"}
    assert template.render("[{{ z | default }}][{{ z | default('q') }}]", {}) == "[][q]"


def test_validate_reports_a_template_the_compiler_refuses_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text(
        "model: echo\ntests:\n  - vars: {x: '1'}\n"
        "    prompt: '{% block a %}{% endblock %}{% block a %}{% endblock %}'\n",
        encoding="utf-8",
    )
    assert run_cli(["validate", str(suite), "--no-entry-points"]) == 4
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert ":4:13: error: template syntax error: block 'a' defined twice" in err


def test_two_loop_names_walk_a_mappings_entries_as_nunjucks_does() -> None:
    vars_ = {"d": {"a": 1, "b": 2}, "pairs": [[1, 2], [3, 4]]}
    assert template.render("{% for k, v in d %}{{k}}={{v}};{% endfor %}", vars_) == "a=1;b=2;"
    assert template.render("{% for k, v in pairs %}{{k}}{{v}};{% endfor %}", vars_) == "12;34;"
    assert template.render("{% for k in d %}{{k}}{% endfor %}", vars_) == "ab"


@pytest.mark.parametrize(
    "text", ["{% for a, b in 'xyz' %}{% endfor %}", "{{ 1 + 'a' }}", "{{ d['a'] + 'x' }}"]
)
def test_a_value_of_the_wrong_kind_is_a_template_problem_not_a_crash(text: str) -> None:
    with pytest.raises(TemplateProblem, match="template error: "):
        template.render(text, {"d": {"a": 1}})


# promptfoo's renderings, pinned from promptfoo 0.123.1 (tests/data/promptfoo/var-rendering
# holds the config they came from; the compatibility test runs it end to end).
NUNJUCKS_PRINTS = [
    (True, "true"),
    (False, "false"),
    (None, ""),
    (1.0, "1"),
    (1e3, "1000"),
    (0.1, "0.1"),
    (1.5e-7, "1.5e-7"),
    (1e22, "1e+22"),
    ([1, 2.0, 3.5], "1,2,3.5"),
    ({"k": "v"}, "[object Object]"),
]


@pytest.mark.parametrize(("value", "printed"), NUNJUCKS_PRINTS)
def test_a_promptfoo_configs_vars_print_as_nunjucks_prints_them(value: Any, printed: str) -> None:
    assert template.render("[{{ v }}]", rendering.NunjucksVars(v=value)) == f"[{printed}]"


def test_skillevals_own_vars_keep_pythons_text() -> None:
    assert template.render("{{ a }} {{ b }} {{ c }}", {"a": True, "b": None, "c": 1.0}) == (
        "True None 1.0"
    )


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (-2.5, "-2.5"),
        (-0.0, "0"),
        (2**70, "1.1805916207174113e+21"),
        (123.456, "123.456"),
    ],
)
def test_numbers_are_written_as_javascript_writes_them(number: float, text: str) -> None:
    assert rendering.js_number(number) == text


def test_json_is_written_as_json_stringify_writes_it() -> None:
    assert rendering.js_json({"a": [1.0, None, True], "b": "é"}) == '{"a":[1,null,true],"b":"é"}'
