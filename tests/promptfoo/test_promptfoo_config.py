"""promptfoo's config keys, read with promptfoo's meaning (or refused, with the alternative)."""

from __future__ import annotations

import json
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest
from fakes import FakeProvider

from skilleval import expr
from skilleval.cli import run_cli
from skilleval.engine.base import Message, Request
from skilleval.errors import DiagnosticsError, Location
from skilleval.results.records import Record
from skilleval.results.summary import summarize
from skilleval.runner.derived import with_derived
from skilleval.runner.providers import Paced
from skilleval.suite import template
from skilleval.suite.load import Overrides, load_suite
from skilleval.suite.model import DerivedMetric, Suite


def load(tmp_path: Path, text: str, **files: str) -> Suite:
    """Load ``text`` as suite.yaml beside ``files`` (``docs__a_txt`` is docs/a.txt)."""
    for name, content in files.items():
        path = name.replace("__", "/")
        if "." not in path:
            stem, _, ext = path.rpartition("_")
            path = f"{stem}.{ext}"
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(content), encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(text), encoding="utf-8")
    loaded, _ = load_suite(suite, Overrides(entry_points=False))
    return loaded


def problems(tmp_path: Path, text: str, **files: str) -> list[str]:
    with pytest.raises(DiagnosticsError) as caught:
        load(tmp_path, text, **files)
    return [str(d).replace(f"{tmp_path}/", "") for d in caught.value.diagnostics]


# -- array vars: the cartesian product ----------------------------------------------------------


def test_string_lists_expand_into_one_test_per_combination_first_var_slowest(
    tmp_path: Path,
) -> None:
    suite = load(
        tmp_path,
        """
        model: echo
        prompts: ["{{lang}}: {{word}}"]
        tests:
          - vars: {lang: [fr, de], word: [one, two, three]}
        """,
    )
    rendered = [template.render(t.prompt.text or "", t.vars) for t in suite.tests]
    assert rendered == ["fr: one", "fr: two", "fr: three", "de: one", "de: two", "de: three"]
    assert len({t.id for t in suite.tests}) == 6


def test_lists_of_other_values_stay_whole_and_expansion_can_be_turned_off(tmp_path: Path) -> None:
    suite = load(
        tmp_path,
        """
        model: echo
        prompts: ["{{items}}"]
        tests:
          - vars: {items: [1, 2]}
          - vars: {items: [{a: 1}, {a: 2}]}
          - vars: {items: [x, y]}
            options: {disableVarExpansion: true}
        """,
    )
    assert [t.vars["items"] for t in suite.tests] == [[1, 2], [{"a": 1}, {"a": 2}], ["x", "y"]]


def test_default_vars_expand_too_and_a_written_id_gets_a_number(tmp_path: Path) -> None:
    suite = load(
        tmp_path,
        """
        model: echo
        prompts: ["{{tone}} {{q}}"]
        defaultTest:
          vars: {tone: [calm, curt]}
        tests:
          - id: ask
            vars: {q: hi}
        """,
    )
    assert [(t.id, t.vars["tone"]) for t in suite.tests] == [("ask-1", "calm"), ("ask-2", "curt")]


def test_a_glob_var_gives_one_test_per_file(tmp_path: Path) -> None:
    suite = load(
        tmp_path,
        """
        model: echo
        prompts: ["Summarise: {{doc}}"]
        tests:
          - vars: {doc: file://docs/*.txt}
        """,
        docs__a_txt="alpha",
        docs__b_txt="beta",
    )
    assert sorted(t.vars["doc"] for t in suite.tests) == ["alpha", "beta"]


# -- prompt and test files named by bare strings ---------------------------------------------------


def test_prompt_files_by_bare_path_each_read_by_its_kind(tmp_path: Path) -> None:
    suite = load(
        tmp_path,
        """
        model: echo
        prompts:
          - prompts.txt
          - file://prompts.csv
          - notes.md
          - page.j2
          - chat.json
          - "Plain {{q}}"
        tests:
          - vars: {q: x}
        """,
        prompts_txt="A {{q}}\n---\nB {{q}}\n  ---  \nC {{q}}\n",
        prompts_csv='prompt,label\n"Say {{q}}, please",polite\n"Shout {{q}}",\n',
        notes_md="---\ntitle: kept\n---\nRead {{q}}\n",
        page_j2="{% if q %}J {{q}}{% endif %}\n---\nstill one\n",
        chat_json='[{"role": "user", "content": "{{q}}"}]',
    )
    got = [(t.prompt.label, t.prompt.text) for t in suite.tests]
    assert got[:3] == [("prompts-1", "A {{q}}"), ("prompts-2", "B {{q}}"), ("prompts-3", "C {{q}}")]
    assert got[3] == ("polite", "Say {{q}}, please")
    assert got[4] == ("prompts-2", "Shout {{q}}")  # a row without a label is numbered
    assert got[5] == ("notes", "---\ntitle: kept\n---\nRead {{q}}")
    assert got[6] == ("page", "{% if q %}J {{q}}{% endif %}\n---\nstill one")
    assert suite.tests[7].prompt.messages == (("user", "{{q}}"),)
    assert got[8][1] == "Plain {{q}}"


def test_a_csv_of_prompts_never_becomes_one_prompt_with_its_header(tmp_path: Path) -> None:
    suite = load(
        tmp_path,
        """
        model: echo
        prompts: file://one_column.csv
        tests:
          - vars: {q: x}
        """,
        one_column_csv="prompt\nFirst {{q}}\nSecond {{q}}\n",
    )
    assert [t.prompt.text for t in suite.tests] == ["First {{q}}", "Second {{q}}"]


def test_a_csv_of_prompts_without_a_prompt_column_is_refused(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        model: echo
        prompts: [file://p.csv]
        tests:
          - vars: {q: x}
        """,
        p_csv="text,label\nhi,a\n",
    )
    assert found == [
        "p.csv:1:1: error: a CSV of prompts needs a `prompt` column (and may have `label`);"
        " this header has 'text', 'label'"
    ]


def test_tests_files_by_bare_path_and_glob(tmp_path: Path) -> None:
    files = {
        "tests__a.yaml": "- vars: {q: a}\n",
        "tests__b.yaml": "- vars: {q: b}\n",
        "more.csv": "q\nc\n",
    }
    suite = load(tmp_path, "model: echo\nprompts: ['{{q}}']\ntests: tests/*.yaml\n", **files)
    assert [t.vars["q"] for t in suite.tests] == ["a", "b"]
    suite = load(
        tmp_path, "model: echo\nprompts: ['{{q}}']\ntests: [file://tests/a.yaml, more.csv]\n"
    )
    assert [t.vars["q"] for t in suite.tests] == ["a", "c"]


def test_tests_from_a_remote_source_are_refused(tmp_path: Path) -> None:
    found = problems(tmp_path, "model: echo\ntests: https://docs.google.com/x\n")
    assert "tests from https:// are not read" in found[0]


def test_csv_special_columns(tmp_path: Path) -> None:
    suite = load(
        tmp_path,
        "model: echo\nprompts: ['{{q}}']\ntests: t.csv\n",
        t_csv=(
            "q,__expected1,__expected2,__metric,__prefix,__suffix,__threshold,__description\n"
            'hi,"contains-any:a, b",icontains:H,greet,>> , <<,0.5,first\n'
        ),
    )
    (test,) = suite.tests
    assert test.prompt.text == ">> {{q}} <<"
    assert test.threshold == 0.5
    assert test.description == "first"
    assert [(a.type, a.value, a.metric) for a in test.asserts] == [
        ("contains-any", ["a", "b"], "greet"),
        ("icontains", "H", "greet"),
    ]


def test_prefix_on_a_chat_prompt_is_refused(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        model: echo
        prompts: [chat.json]
        tests:
          - vars: {q: x}
            options: {prefix: "Note: "}
        """,
        chat_json='[{"role": "user", "content": "{{q}}"}]',
    )
    assert found == [
        "suite.yaml:6:23: error: options.prefix applies to text prompts; prompt 'chat' is a"
        " chat: write the text into its messages instead"
    ]


# -- the grader: promptfoo's options.provider becomes judge: ----------------------------------------


GRADED = """
model: echo
prompts: ["{{q}}"]
defaultTest:
  options:
    provider: %s
tests:
  - vars: {q: hi}
    assert: [{type: llm-rubric, value: is friendly}]
"""


def test_default_test_provider_becomes_the_judge(tmp_path: Path) -> None:
    suite = load(tmp_path, GRADED % "echo")
    assert suite.judge is not None
    assert suite.judge.kind == "echo"


def test_an_openai_compatible_grader_becomes_an_openai_judge(tmp_path: Path) -> None:
    provider = "{id: 'openai:chat:qwen', config: {apiBaseUrl: 'http://127.0.0.1:8080/v1/', temperature: 0}}"
    suite = load(tmp_path, GRADED % provider)
    assert suite.judge is not None
    assert suite.judge.to_json()["provider"] == "openai"
    assert suite.judge.config.base_url == "http://127.0.0.1:8080/v1"
    assert suite.judge.config.model == "qwen"


@pytest.mark.parametrize(
    ("provider", "words"),
    [
        ("file://grader.js", "JavaScript provider, which skilleval does not run"),
        ("{id: 'openai:chat:m', config: {apiKey: sk-1, apiBaseUrl: 'http://h/v1'}}", "apiKeyEnvar"),
        ("{id: echo, config: {temperature: 0.7}}", "'temperature' is not carried over"),
    ],
)
def test_a_grader_skilleval_cannot_run_is_refused_at_its_line(
    tmp_path: Path, provider: str, words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    found = problems(tmp_path, GRADED % provider)
    assert len(found) == 1
    assert found[0].startswith("suite.yaml:6:15: error: ")
    assert words in found[0]


def test_two_different_graders_are_refused(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        model: echo
        prompts: ["{{q}}"]
        defaultTest:
          options: {provider: echo}
        tests:
          - vars: {q: hi}
            assert: [{type: llm-rubric, value: ok, provider: file://judge.gguf}]
        """,
    )
    assert found == [
        "suite.yaml:8:54: error: this grader differs from the one at suite.yaml:5:23, and"
        " skilleval grades a suite with one judge: use the same provider everywhere, or set"
        " `judge:` once"
    ]


def test_a_grader_beside_judge_is_refused_and_the_command_line_wins(tmp_path: Path) -> None:
    text = GRADED.replace("model: echo", "model: echo\njudge: echo") % "echo"
    assert "`judge:` (at suite.yaml:3:1) already names the judge" in problems(tmp_path, text)[0]
    suite = tmp_path / "suite.yaml"
    loaded, _ = load_suite(suite, Overrides(entry_points=False, judge="echo"))
    assert loaded.judge is not None
    assert loaded.judge.kind == "echo"


def test_a_provider_on_a_deterministic_assertion_is_refused(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        "model: echo\ntests:\n  - prompt: hi\n"
        "    assert: [{type: contains, value: h, provider: echo}]\n",
    )
    assert found == [
        "suite.yaml:4:41: error: 'provider' names a grader, and 'contains' is checked without"
        " a model: remove it"
    ]


# -- $ref to assertionTemplates ---------------------------------------------------------------


def test_ref_to_an_assertion_template_with_keys_beside_it(tmp_path: Path) -> None:
    suite = load(
        tmp_path,
        """
        model: echo
        assertionTemplates:
          polite: {type: icontains, value: please}
        tests:
          - prompt: say please
            assert:
              - $ref: "#/assertionTemplates/polite"
              - {$ref: "#/assertionTemplates/polite", weight: 2}
        """,
    )
    asserts = suite.tests[0].asserts
    assert [(a.type, a.value, a.weight) for a in asserts] == [
        ("icontains", "please", 1.0),
        ("icontains", "please", 2.0),
    ]


def test_a_template_mistake_is_reported_where_the_template_is_written(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        model: echo
        assertionTemplates:
          bad: {type: regex, value: "("}
        tests:
          - prompt: x
            assert: [{$ref: "#/assertionTemplates/bad"}]
        """,
    )
    assert len(found) == 1
    assert found[0].startswith("suite.yaml:4:29: error: ")


@pytest.mark.parametrize(
    ("ref", "words"),
    [
        ("#/assertionTemplates/nope", "names nothing in this file; assertionTemplates has ok"),
        ("other.yaml#/x", "only references inside this file are supported"),
        ("#/tests/0/assert/0", "refers back to itself"),
    ],
)
def test_a_ref_that_cannot_be_followed_is_one_positioned_error(
    tmp_path: Path, ref: str, words: str
) -> None:
    found = problems(
        tmp_path,
        f"""
        model: echo
        assertionTemplates:
          ok: {{type: contains, value: x}}
        tests:
          - prompt: x
            assert: [{{$ref: "{ref}"}}]
        """,
    )
    assert len(found) == 1
    assert found[0].startswith("suite.yaml:7:21: error: ")
    assert words in found[0]


# -- top-level run settings -------------------------------------------------------------------------


def test_output_path_evaluate_options_and_env_are_read(tmp_path: Path) -> None:
    suite = load(
        tmp_path,
        """
        model: echo
        outputPath: [out/results.json, out/report.html]
        evaluateOptions: {maxConcurrency: 3, delay: 250, cache: false, showProgressBar: false}
        env: {SOME_KEY: abc, FLAG: true, N: 2}
        tests:
          - prompt: hi
        """,
    )
    assert suite.outputs == (tmp_path / "out/results.json", tmp_path / "out/report.html")
    assert (suite.jobs, suite.delay_ms, suite.use_cache) == (3, 250, False)
    assert suite.env == {"SOME_KEY": "abc", "FLAG": "true", "N": "2"}
    assert "abc" not in repr(suite)


def test_repeat_is_trials_and_needs_sampling(tmp_path: Path) -> None:
    suite = load(
        tmp_path,
        "model: echo\ndecoding: {mode: distribution}\nevaluateOptions: {repeat: 3}\n"
        "tests:\n  - prompt: hi\n",
    )
    assert suite.trials == 3
    found = problems(
        tmp_path, "model: echo\nevaluateOptions: {repeat: 3}\ntests:\n  - prompt: hi\n"
    )
    assert found[0].startswith("suite.yaml:2:19: error: trials: 3 needs `decoding:")


def test_unsupported_evaluate_options_say_what_to_do(tmp_path: Path) -> None:
    found = problems(
        tmp_path, "model: echo\nevaluateOptions: {timeoutMs: 5}\ntests:\n  - prompt: hi\n"
    )
    assert found == [
        "suite.yaml:2:19: error: unsupported key 'timeoutMs': per-call time limits are the"
        " provider's: `timeout` on an openai `model:`"
    ]


def test_paced_provider_waits_after_each_call_only() -> None:

    inner = FakeProvider(default="ok")
    paced = Paced(inner, 0.05)
    assert paced.max_concurrency == 1
    assert paced.identity() == inner.identity()
    t0 = time.perf_counter()
    assert paced.complete(Request(messages=(Message("user", "hi"),))).text == "ok"
    assert time.perf_counter() - t0 >= 0.05


# -- scenarios ------------------------------------------------------------------------------------


def test_scenarios_cross_each_config_with_each_test(tmp_path: Path) -> None:
    suite = load(
        tmp_path,
        """
        model: echo
        prompts: ["{{input}} in {{language}}"]
        scenarios:
          - config:
              - vars: {language: French}
                assert: [{type: contains, value: French}]
              - vars: {language: German}
                metadata: {from: config}
            tests:
              - description: greet
                vars: {input: hello}
                assert: [{type: contains, value: hello}]
              - vars: {input: bye, language: Latin}
        """,
    )
    got = [
        (t.description, dict(t.vars), [a.value for a in t.asserts], dict(t.metadata))
        for t in suite.tests
    ]
    assert got == [
        ("greet", {"language": "French", "input": "hello"}, ["French", "hello"], {}),
        ("", {"language": "Latin", "input": "bye"}, ["French"], {}),
        ("greet", {"language": "German", "input": "hello"}, ["hello"], {"from": "config"}),
        ("", {"language": "Latin", "input": "bye"}, [], {"from": "config"}),
    ]


def test_a_mistake_in_a_scenario_is_reported_where_it_is_written(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        model: echo
        scenarios:
          - config:
              - assert: [{type: containz, value: x}]
            tests:
              - prompt: hi
        """,
    )
    assert found == [
        "suite.yaml:5:25: error: unknown assertion type 'containz'; did you mean 'contains'?"
    ]


# -- derived metrics ------------------------------------------------------------------------------


def test_derived_metric_formulas_are_checked_at_load(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        model: echo
        derivedMetrics:
          - {name: rate, value: hits / __count}
          - {name: js, value: "function(namedScores) { return namedScores.hits }"}
          - {name: broken, value: "namedScores.hits / ;"}
          - {name: typo, value: hitz + 1}
        tests:
          - prompt: hi
            assert: [{type: contains, value: h, metric: hits}]
        """,
    )
    assert len(found) == 2
    assert "derived metric 'broken': JavaScript syntax error" in found[0]
    assert "reads 'hitz'" in found[1]
    assert "did you mean 'hits'?" in found[1]


def test_javascript_derived_metrics_run_in_the_sandbox(tmp_path: Path) -> None:

    suite = tmp_path / "s.yaml"
    suite.write_text(
        textwrap.dedent(
            """
            model: echo
            derivedMetrics:
              - {name: share, value: "function (namedScores, ctx) { return namedScores.greets / ctx.count; }"}
              - {name: twice, value: "greets * 2"}
              - {name: arrow, value: "(s, c) => s.greets + c.__count"}
              - {name: loops, value: "function () { while (true) {} }"}
            tests:
              - prompt: Say hello
                assert: [{type: icontains, value: hello, metric: greets}]
              - prompt: Say bye
                assert: [{type: icontains, value: hello, metric: greets}]
            """
        ),
        encoding="utf-8",
    )
    out = tmp_path / "r.json"
    assert run_cli(["run", str(suite), "-q", "-o", str(out)]) == 1
    metrics = json.loads(out.read_text(encoding="utf-8"))["summary"]["arms"]["default"]["metrics"]
    assert metrics["share"] == 0.5
    assert metrics["twice"] == 2.0
    assert metrics["arrow"] == 3.0
    # A formula that runs away is stopped by the sandbox's limit and left out.
    assert "loops" not in metrics


def test_derived_metrics_are_computed_from_each_arms_totals() -> None:

    def metric(name: str, source: str) -> DerivedMetric:
        return DerivedMetric(name, source, "expr", expr.compile_expr(source), Location("s"))

    def record(test_id: str, hits: float) -> Record:
        failed = Record.failed((test_id, "default", 0), "", "")
        return replace(failed, status="pass", error=None, metrics={"hits": hits})

    records = [record("a", 1.0), record("b", 0.0)]
    summary = with_derived(
        summarize(records, ["default"]),
        records,
        [metric("rate", "hits / count"), metric("twice", "rate * 2"), metric("bad", "hits / 0")],
    )
    assert summary.arms["default"].metrics == {"hits": 0.5, "rate": 0.5, "twice": 1.0}


def test_a_var_read_only_through_default_may_be_left_out(tmp_path: Path) -> None:
    suite = load(
        tmp_path,
        """
        model: echo
        prompts: ["{{ q }}{{ tone | default(' (plain)') }}"]
        tests:
          - vars: {q: hi}
        """,
    )
    (test,) = suite.tests
    assert template.render(test.prompt.text or "", test.vars) == "hi (plain)"


# -- a prompt's response_format -------------------------------------------------------------------


def test_a_prompts_response_format_holds_its_replies_to_the_schema(tmp_path: Path) -> None:

    suite = tmp_path / "s.yaml"
    suite.write_text(
        textwrap.dedent(
            """
            model: echo
            prompts:
              - label: structured
                raw: "Solve {{problem}}"
                config:
                  response_format:
                    type: json_schema
                    json_schema:
                      name: answer
                      schema:
                        type: object
                        properties: {final_answer: {type: string}}
                        required: [final_answer]
              - label: plain
                raw: "Solve {{problem}}"
            tests:
              - vars: {problem: "x + 1 = 2"}
                assert: [{type: is-json}]
            """
        ),
        encoding="utf-8",
    )
    out = tmp_path / "r.json"
    assert run_cli(["run", str(suite), "-q", "-o", str(out)]) == 1
    records = {r["test_id"]: r for r in json.loads(out.read_text(encoding="utf-8"))["records"]}
    structured = next(r for k, r in records.items() if "structured" in k)
    plain = next(r for k, r in records.items() if "plain" in k)
    assert json.loads(structured["output"]) == {"final_answer": ""}
    assert structured["status"] == "pass"
    assert plain["status"] == "fail"


def test_other_provider_settings_on_a_prompt_are_refused(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        model: echo
        prompts:
          - raw: "hi {{x}}"
            config: {temperature: 0.3}
          - raw: "yo {{x}}"
            config: {response_format: {type: json_schema, json_schema: {schema: {type: nope}}}}
        tests:
          - vars: {x: 1}
        """,
    )
    assert "may only hold `response_format`" in found[0]
    assert "invalid JSON Schema" in found[1]
