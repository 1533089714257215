"""Other tools' eval files, read as written: each format's variants, the folder, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skilleval.cli import run_cli
from skilleval.errors import SuiteError
from skilleval.suite.load import load_suite
from tests.suite.formats_support import (
    EVALS,
    PAI_SUITE,
    PAI_TASK,
    PAI_TASK_NO_PROMPT,
    TRIGGERS_CASES,
    TRIGGERS_LIST,
    TRIGGERS_QUERIES,
    VALLY,
    VALLY_OLD,
    shape,
    skill_folder,
    write_json,
    write_yaml,
)


def _errors(path: Path) -> list[str]:
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    return [str(d) for d in caught.value.diagnostics]


# --- skill-creator evals --------------------------------------------------------------------


def test_skill_creator_evals_give_one_test_per_eval_and_one_check_per_expectation(
    tmp_path: Path,
) -> None:
    folder = skill_folder(tmp_path / "csv-summary")
    path = write_json(folder / "evals" / "evals.json", EVALS)
    suite, _ = load_suite(path)
    assert suite.skill is not None
    assert suite.skill.name == "csv-summary"
    assert suite.type == "capability"  # none of these tools gates on a pass rate
    first, second = shape(suite)
    assert first["id"] == "eval-1"
    assert first["prompt"] == "How many rows are in people.csv?"
    rubric, script = first["asserts"]
    assert rubric[:2] == ("llm-rubric", "The reply says there are 2 rows")
    assert rubric[5] == {"reference": "Two rows."}
    assert script[0] == "unavailable"
    assert "ran" in script[1]["reason"]
    assert first["files"] == [("people.csv", "evals/files/people.csv")]
    assert first["tools"] == ["read_file"]
    assert second["prompt"] == "List the columns of a CSV with name and age."
    assert [(a[0], a[1], a[4]) for a in second["asserts"]] == [
        ("llm-rubric", "Names both columns", "cols"),
        ("llm-rubric", "Is at most three sentences", "short"),
        ("llm-rubric", "Mentions age", None),
        ("regex", "name", None),
        ("regex", "age", None),
        ("not-regex", "(?i)error", None),
    ]
    assert second["files"] is None
    detected = [n for n in suite.notes if "read as skill-creator evals" in n]
    assert detected
    assert "texts" in detected[0]
    assert "{name, check}" in detected[0]


def test_a_bare_list_of_evals_is_read_too(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "s")
    path = write_json(folder / "evals" / "evals.json", EVALS["evals"][1:])
    suite, _ = load_suite(path)
    assert len(suite.tests) == 1
    assert any("a list of evals" in n for n in suite.notes)


def test_an_eval_prompt_with_braces_is_sent_as_written(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "s")
    data = {"evals": [{"id": 1, "prompt": "Fill {{name}} in", "expectations": ["ok {% x"]}]}
    suite, _ = load_suite(write_json(folder / "evals" / "evals.json", data))
    from skilleval.suite import template

    assert template.render(suite.tests[0].prompt.text or "", {}) == "Fill {{name}} in"


def test_evals_json_mistakes_are_reported_at_their_line_and_column(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "s")
    path = folder / "evals" / "evals.json"
    path.write_text(
        '{"evals": [\n  {"id": 1, "prompt": "hi", "expectations": [3]},\n  {"id": 2}\n]}\n',
        encoding="utf-8",
    )
    errors = _errors(path)
    shown = path.as_posix()
    assert any(e.startswith(f"{shown}:2:46: error: ") and "text" in e for e in errors), errors
    assert any(e.startswith(f"{shown}:3:3: error: ") and "no `prompt`" in e for e in errors)


def test_broken_json_is_a_positioned_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skill_folder(tmp_path / "s")
    path = folder / "evals" / "evals.json"
    path.write_text('{"evals": [\n  {"id": 1, "prompt": "hi",, }\n]}\n', encoding="utf-8")
    assert run_cli(["validate", str(path)]) == 4
    err = capsys.readouterr().err
    assert f"{path.as_posix()}:2:" in err
    assert "Traceback" not in err


def test_a_missing_input_file_makes_the_eval_an_error_not_the_file(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "s")
    data = {"evals": [{"id": 1, "prompt": "hi", "files": ["nope.csv"], "expectations": ["x"]}]}
    path = write_json(folder / "evals" / "evals.json", data)
    suite, _ = load_suite(path)
    assert any(":7:9: warning: input file not found: nope.csv" in n for n in suite.notes)
    assert [a.type for a in suite.tests[0].asserts] == ["llm-rubric", "unavailable"]
    assert suite.tests[0].agent is None  # no workspace to set up


def test_an_eval_with_only_an_expected_output_is_judged_against_it(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "s")
    data = {
        "skill_name": "csv-summary",
        "version": "0.1.0",
        "description": "Sample prompts",
        "evals": [{"id": 1, "prompt": "hi", "expected_output": "A greeting back."}],
    }
    suite, _ = load_suite(write_json(folder / "evals" / "evals.json", data))
    assert suite.description == "Sample prompts"
    ((kind, value, *_),) = shape(suite)[0]["asserts"]
    assert (kind, value) == ("llm-rubric", "A greeting back.")


# --- trigger sets ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "variant"),
    [
        (TRIGGERS_LIST, "a list of queries"),
        (TRIGGERS_QUERIES, "{skill_name, queries}"),
        (TRIGGERS_CASES, "{cases: [{expected: trigger | do_not_trigger}]}"),
    ],
)
def test_each_trigger_set_wrapping_gives_should_trigger_tests(
    tmp_path: Path, data: object, variant: str
) -> None:
    folder = skill_folder(tmp_path / "s")
    suite, _ = load_suite(write_json(folder / "evals" / "trigger_eval.json", data))
    assert [(t["prompt"], t["should_trigger"]) for t in shape(suite)] == [
        ("what columns does this csv have", True),
        ("write me a poem about the sea", False),
    ]
    assert any(f"read as trigger set ({variant})" in n for n in suite.notes)


def test_a_trigger_set_without_a_skill_beside_it_is_refused(tmp_path: Path) -> None:
    path = write_json(tmp_path / "a" / "b" / "c" / "triggers.json", TRIGGERS_LIST)
    errors = _errors(path)
    assert errors[0].startswith(f"{path.as_posix()}:1:1: error: ")
    assert "no SKILL.md was found" in errors[0]


def test_a_bad_trigger_label_is_reported_where_it_is(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "s")
    path = folder / "triggers.json"
    path.write_text(
        '{"cases": [\n {"query": "a", "expected": "trigger"},\n'
        ' {"query": "b", "expected": "maybe"}]}\n',
        encoding="utf-8",
    )
    errors = _errors(path)
    assert errors == [
        f"{path.as_posix()}:3:29: error: `expected` must be `trigger` or `do_not_trigger`"
    ]


def test_a_bad_should_trigger_value_is_positioned(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "s")
    path = folder / "triggers.json"
    path.write_text(
        '[\n {"query": "a", "should_trigger": true},\n {"query": "b", "should_trigger": "yes"}\n]\n',
        encoding="utf-8",
    )
    errors = _errors(path)
    assert errors == [
        f"{path.as_posix()}:3:35: error: `should_trigger` must be true or false (or a skill's name)"
    ]


# --- Vally ----------------------------------------------------------------------------------


def test_a_vally_spec_maps_stimuli_graders_and_defaults(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "s")
    (folder / "fixtures").mkdir()
    (folder / "fixtures" / "people.csv").write_text("name\nann\n", encoding="utf-8")
    path = write_yaml(folder / "eval.yaml", VALLY)
    suite, _ = load_suite(path)
    assert suite.trials == 3
    assert suite.type == "capability"
    count, haiku = shape(suite)
    assert [a[:2] for a in count["asserts"]] == [
        ("contains", "rows"),
        ("regex", "\\b2\\b"),
        ("file-exists", "data/people.csv"),
        ("finish-reason", "stop"),
        ("side-by-side", ["States the row count", "Does not invent columns"]),
        (
            "unavailable",
            {"text": "tool bash is called", "reason": count["asserts"][5][1]["reason"]},
        ),
    ]
    assert count["files"] == [("people.csv", "data/people.csv")]
    assert haiku["should_trigger"] is False
    assert haiku["asserts"] == [("not-contains", "CSV", 1.0, None, None, {})]
    notes = "\n".join(suite.notes)
    assert "read as Vally spec (stimuli/graders, `defaults:`)" in notes
    assert "`timeout` is not enforced" in notes
    assert "`reject_tools` is not checked" in notes


def test_an_older_vally_spec_with_scenarios_and_config(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "s")
    suite, _ = load_suite(write_yaml(folder / "tests" / "eval.yaml", VALLY_OLD))
    (test,) = shape(suite)
    assert [a[:2] for a in test["asserts"]] == [
        ("contains", "rows"),
        ("finish-reason", "stop"),
        ("side-by-side", ["States the row count"]),
    ]
    (command,) = test["commands"]
    assert command[4:] == ("people.csv", "name,age\nann,3\n")
    assert any("scenarios/assertions (older), `config:`" in n for n in suite.notes)


def test_a_vally_rubric_without_a_skill_is_judged_item_by_item_with_a_warning(
    tmp_path: Path,
) -> None:
    path = write_yaml(tmp_path / "eval.yaml", VALLY_OLD)
    suite, _ = load_suite(path)
    assert [a.type for a in suite.tests[0].asserts][-1] == "llm-rubric"
    assert any(":17:7: warning: Vally judges the rubric side by side" in n for n in suite.notes)


def test_vally_config_and_defaults_together_are_refused(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "s")
    path = write_yaml(folder / "eval.yaml", "defaults: {runs: 1}\n" + VALLY_OLD)
    assert _errors(path) == [
        f"{path.as_posix()}:1:1: error: `config:` and `defaults:` are the same block: keep one"
    ]


def test_a_vally_grader_with_no_config_is_an_error_not_a_silent_pass(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "s")
    text = "stimuli:\n  - prompt: hi\n    graders:\n      - type: output-matches\n        config:\n"
    errors = _errors(write_yaml(folder / "eval.yaml", text))
    assert errors == [
        f"{(folder / 'eval.yaml').as_posix()}:5:9: error: this output-matches grader's "
        "`config` is empty: it would check nothing"
    ]


def test_an_unknown_vally_grader_is_unavailable_and_linted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skill_folder(tmp_path / "s")
    text = "stimuli:\n  - prompt: hi\n    graders:\n      - type: screenshot-diff\n"
    path = write_yaml(folder / "eval.yaml", text)
    suite, _ = load_suite(path)
    assert suite.tests[0].asserts[0].type == "unavailable"
    run_cli(["lint", str(path)])
    assert f"{path.as_posix()}:4:9: warning: 'screenshot-diff' cannot be checked" in (
        capsys.readouterr().err
    )


# --- PAI ------------------------------------------------------------------------------------


def test_a_pai_suite_maps_cases_graders_and_pass_threshold(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "s")
    suite, _ = load_suite(write_yaml(folder / "evals" / "suite.yaml", PAI_SUITE))
    count, joke = shape(suite)
    assert count["id"] == "count-rows"
    assert count["threshold"] == 0.6
    assert [(a[0], a[1], a[2]) for a in count["asserts"]] == [
        ("llm-rubric", "Says there are two data rows", 0.6),
        ("llm-assert", ["The reply gives a number"], 0.4),
    ]
    assert joke["should_trigger"] is False
    assert [a[0] for a in joke["asserts"]] == ["contains", "unavailable", "unavailable"]
    assert any("read as PAI suite (cases suite)" in n for n in suite.notes)


def test_a_pai_task_file_with_a_prompt_runs_as_one_test(tmp_path: Path) -> None:
    suite, _ = load_suite(write_yaml(tmp_path / "route-001.yaml", PAI_TASK))
    (test,) = shape(suite)
    assert test["prompt"] == "What are the columns of people.csv?"
    assert test["threshold"] == 0.9
    assert suite.type == "regression"
    assert suite.skill is None
    assert any("no SKILL.md was found beside this file" in n for n in suite.notes)
    assert test["asserts"][0][:2] == ("llm-assert", ["The reply lists the columns"])


def test_a_pai_task_file_with_no_prompt_is_refused_naming_the_prompt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_yaml(tmp_path / "hook-001.yaml", PAI_TASK_NO_PROMPT)
    assert run_cli(["validate", str(path)]) == 4
    err = capsys.readouterr().err
    assert f"{path.as_posix()}:2:3: error: task 'hook-001' has no prompt" in err
    assert "Add `prompt: ...`" in err
    assert "Traceback" not in err


# --- a skill folder -------------------------------------------------------------------------


def test_a_skill_folder_runs_every_eval_file_in_it_as_one_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = skill_folder(tmp_path / "csv-summary")
    write_json(folder / "evals" / "evals.json", EVALS)
    write_json(folder / "evals" / "trigger_eval.json", TRIGGERS_LIST)
    (folder / "evals" / "notes.json").write_text('{"unrelated": true}\n', encoding="utf-8")
    suite, _ = load_suite(folder)
    assert [t.id for t in suite.tests][:2] == ["eval-1", "eval-2"]
    assert [t.should_trigger for t in suite.tests] == [None, None, True, False]
    assert suite.path == folder  # runs are named after the folder, and resumed from it
    assert run_cli(["validate", str(folder)]) == 0
    err = capsys.readouterr().err
    assert "read as skill-creator evals" in err
    assert "read as trigger set" in err
    assert "ok (4 tests)" in err


def test_a_folder_without_a_skill_or_evals_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(["validate", str(tmp_path)]) == 4
    assert "no SKILL.md in this folder" in capsys.readouterr().err
    skill_folder(tmp_path / "s")
    assert run_cli(["validate", str(tmp_path / "s")]) == 4
    assert "no eval file found" in capsys.readouterr().err


def test_a_skilleval_suite_is_not_mistaken_for_another_format(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(
        json.dumps({"version": 1, "model": "echo", "tests": [{"prompt": "hi"}]}), "utf-8"
    )
    suite, _ = load_suite(path)
    assert not any("read as" in n for n in suite.notes)


def test_a_check_the_local_run_cannot_make_is_an_error_verdict_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = skill_folder(tmp_path / "s")
    data = {
        "evals": [
            {
                "id": 1,
                "prompt": "Count the rows of people.csv",
                "expectations": ["Ran scripts/count.py on the file"],
                "must_have": ["rows"],
            }
        ]
    }
    write_json(folder / "evals" / "evals.json", data)
    out = tmp_path / "results.json"
    assert run_cli(["run", str(folder), "--model", "echo", "-q", "-o", str(out)]) == 3
    records = json.loads(out.read_text(encoding="utf-8"))["records"]
    assert {r["arm"] for r in records} == {"off", "on"}
    for record in records:
        assert record["status"] == "error"
        by_type = {a["type"]: a for a in record["asserts"]}
        assert by_type["regex"]["status"] == "pass"
        assert by_type["unavailable"]["status"] == "error"
        assert "the judge sees only the reply" in by_type["unavailable"]["reason"]


def test_a_negative_pai_case_without_a_skill_runs_with_a_warning(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "suite.yaml", PAI_SUITE)
    suite, _ = load_suite(path)
    assert [t.should_trigger for t in suite.tests] == [None, None]
    assert any(":19:5: warning: `negative: true` marks a case" in n for n in suite.notes)


def test_a_skill_name_that_differs_from_the_skill_md_is_a_warning(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "s")
    data = {**EVALS, "skill_name": "other-skill"}
    suite, _ = load_suite(write_json(folder / "evals" / "evals.json", data))
    assert any("skill_name 'other-skill' differs" in n for n in suite.notes)


def test_keys_a_format_does_not_use_are_warnings(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "s")
    path = write_yaml(folder / "eval.yaml", "moderation: {threshold: 1}\n" + VALLY_OLD)
    suite, _ = load_suite(path)
    assert any(":1:1: warning: `moderation` is not read" in n for n in suite.notes)


def test_a_broken_file_in_a_skill_folder_is_reported_only_when_it_looks_like_evals(
    tmp_path: Path,
) -> None:
    folder = skill_folder(tmp_path / "s")
    write_json(folder / "evals" / "trigger_eval.json", TRIGGERS_LIST)
    (folder / "notes.yaml").write_text("a: [unclosed\n", encoding="utf-8")
    suite, _ = load_suite(folder)
    assert len(suite.tests) == 2
    (folder / "evals" / "more.json").write_text('{"evals": [,]}\n', encoding="utf-8")
    errors = _errors(folder)
    assert len(errors) == 1
    assert errors[0].startswith(f"{(folder / 'evals' / 'more.json').as_posix()}:1:")


@pytest.mark.parametrize(
    ("text", "lacking"),
    [
        ("Used the script scripts/count.py", True),
        ("Ran scripts/fill_form.py on the input", True),
        ("Uses fill_form.py to fill the fields", True),
        ("The agent executed the validation command", True),
        ("Creates a file named summary.md", True),
        ("Saved the result to report.csv", True),
        ("The reply explains how to run the command", False),
        ("The output mentions the file name", False),
        ("Uses a table for the columns", False),
        ("Lists the columns of the CSV file", False),
        ("Produces a short summary", False),
    ],
)
def test_an_expectation_about_what_the_agent_ran_or_wrote_is_not_judged(
    text: str, lacking: bool
) -> None:
    from skilleval.suite.formats.reading import needs_more_than_reply

    assert (needs_more_than_reply(text) is not None) == lacking


def test_watch_runs_a_skill_folder_and_knows_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = skill_folder(tmp_path / "s")
    write_json(folder / "evals" / "evals.json", {"evals": [{"prompt": "hi", "must_have": ["hi"]}]})
    assert run_cli(["watch", "--once", str(folder), "--model", "echo"]) == 0
    assert "Traceback" not in capsys.readouterr().err
    suite, _ = load_suite(folder)
    # What watch re-runs on when saved: the eval file and the skill.
    assert {p.name for p in suite.files} >= {"evals.json", "SKILL.md"}


def test_an_older_vally_spec_copies_its_test_files_and_checks_globs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = skill_folder(tmp_path / "s")
    (folder / "proj").mkdir()
    (folder / "proj" / "app.csproj").write_text(
        "<IsAotCompatible>true</IsAotCompatible>\n", "utf-8"
    )
    spec = """\
    scenarios:
      - name: Mark the project
        prompt: Make the project AOT compatible.
        setup:
          copy_test_files: true
          commands: ["touch made.txt"]
        assertions:
          - type: file_contains
            path: "**/*.csproj"
            value: IsAotCompatible
          - type: file_exists
            path: "**/*.md"
          - type: file_exists
            path: made.txt
        expect_tools: [bash]
    """
    write_yaml(folder / "eval.yaml", spec)
    out = tmp_path / "results.json"
    run_cli(["run", str(folder / "eval.yaml"), "--model", "echo", "-q", "-o", str(out)])
    record = json.loads(out.read_text(encoding="utf-8"))["records"][0]
    statuses = [(a["type"], a["status"]) for a in record["asserts"]]
    assert statuses == [
        ("run-command", "pass"),  # some .csproj in the workspace holds the text
        ("run-command", "fail"),  # no .md was copied: the skill and the spec stay out
        ("file-exists", "pass"),  # made by the set-up command
        ("unavailable", "error"),  # bash is the original agent's tool
    ]


def test_pai_graders_written_without_params_and_rubrics_in_files(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "review.md").write_text("Names the missing check\n", "utf-8")
    task = """\
    task:
      id: fix-auth
      desc: Fix the empty-password bypass
      prompt: Why does an empty password log in?
      graders:
        - type: llm_rubric
          rubric: prompts/review.md
          weight: 0.5
        - type: llm_rubric
          rubric: prompts/gone.md
        - type: tool_calls
          required:
            - {tool: read_file, params: {path: "src/auth/*"}}
          weight: 0.2
      pass_threshold: 0.75
    """
    suite, _ = load_suite(write_yaml(tmp_path / "fix-auth.yaml", task))
    (test,) = shape(suite)
    assert [(a[0], a[1], a[2]) for a in test["asserts"]] == [
        ("llm-rubric", "Names the missing check\n", 0.5),
        ("unavailable", {"text": "rubric prompts/gone.md", "reason": "its file is missing"}, 1.0),
        ("unavailable", test["asserts"][2][1], 1.0),
    ]
    assert "read_file" in test["asserts"][2][1]["text"]
    assert suite.tests[0].description == "Fix the empty-password bypass"
    assert any(":10:15: warning: rubric file not found" in n for n in suite.notes), suite.notes


def test_expect_and_fail_lists_are_checks_that_must_and_must_not_hold(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "s")
    data = [
        {
            "id": "count",
            "prompt": "Count the rows",
            "expect": ["Gives a number"],
            "fail": ["Refuses to answer"],
        }
    ]
    suite, _ = load_suite(write_json(folder / "evals" / "evals.json", data))
    assert [(a.type, a.negated, a.value) for a in suite.tests[0].asserts] == [
        ("llm-rubric", False, "Gives a number"),
        ("not-llm-rubric", True, "Refuses to answer"),
    ]
    assert any("`fail` (must not happen)" in n for n in suite.notes)


def test_a_skill_md_skilleval_cannot_read_leaves_the_evals_running_without_it(
    tmp_path: Path,
) -> None:
    folder = skill_folder(tmp_path / "s")
    (folder / "SKILL.md").write_text(
        "---\nname: CSV-Summary\ndescription: Summarise a CSV.\n---\nCount rows.\n", "utf-8"
    )
    path = write_json(folder / "evals" / "evals.json", EVALS)
    suite, _ = load_suite(path)
    assert suite.skill is None
    warning = next(n for n in suite.notes if "is not used as the skill under test" in n)
    assert warning.startswith(f"{(folder / 'SKILL.md').as_posix()}:2:")
    assert (folder / "SKILL.md").resolve() in suite.files  # watched, so a fix brings it in


def test_a_trigger_set_with_its_own_version_and_notes_is_still_a_trigger_set(
    tmp_path: Path,
) -> None:
    folder = skill_folder(tmp_path / "s")
    data = {
        "version": 1,
        "skill": "csv-summary",
        "cases": [
            {"id": "a", "prompt": "columns of this csv?", "should_trigger": True, "reason": "csv"},
            {"id": "b", "prompt": "a poem", "should_trigger": False, "category": "negative"},
        ],
    }
    suite, _ = load_suite(write_json(folder / "evals" / "triggers.json", data))
    assert [(t.id, t.should_trigger) for t in suite.tests] == [
        ("trigger-a", True),
        ("trigger-b", False),
    ]
    assert not any("is not read" in n for n in suite.notes)  # notes for readers stay quiet


def test_a_trigger_set_for_several_skills_labels_this_skills_queries(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path / "s")
    data = {
        "skills_tested": ["tools:csv-summary", "tools:chart"],
        "evals": [
            {"id": 1, "query": "columns of this csv?", "should_trigger": "tools:csv-summary"},
            {"id": 2, "query": "draw a bar chart", "should_trigger": "tools:chart"},
        ],
    }
    suite, _ = load_suite(write_json(folder / "evals" / "trigger-evals.json", data))
    assert [t.should_trigger for t in suite.tests] == [True, False]
