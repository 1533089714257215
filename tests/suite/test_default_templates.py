"""A templated ``defaultTest`` assertion is compiled once, then checked against each test's
vars: what a test's vars break is reported exactly as if that test had been compiled first."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from skilleval.errors import SuiteError
from skilleval.suite.load import load_suite

SUITE = """\
version: 1
model: echo
prompts: ["Say {{{{word}}}}"]
defaultTest:
  assert:
    - type: contains
      value: "{{{{word}}}}"
    - type: regex
      value: "{{{{pattern}}}}"
tests:
{tests}"""


def _suite(path: Path, tests: list[dict[str, str]]) -> Path:
    rows = []
    for vars_ in tests:
        rows.append("  - vars:\n" + "".join(f"      {k}: {v!r}\n" for k, v in vars_.items()))
    path.write_text(SUITE.format(tests="".join(rows)), encoding="utf-8")
    return path


def _problems(path: Path) -> list[str]:
    with pytest.raises(SuiteError) as err:
        load_suite(path)
    return [f"{d.where.line}:{d.where.col}: {d.message}" for d in err.value.diagnostics]


GOOD = {"word": "hi", "pattern": "h+"}


@pytest.mark.parametrize(
    "bad",
    [
        {"pattern": "h+"},  # no `word`: the contains value and the prompt read it
        {"word": "hi"},  # no `pattern`
        {"word": "hi", "pattern": "("},  # a pattern that does not compile once rendered
    ],
)
def test_a_later_test_is_checked_as_the_first_one_is(tmp_path: Path, bad: dict[str, str]) -> None:
    first = _problems(_suite(tmp_path / "first.yaml", [bad, GOOD, GOOD]))
    later = _problems(_suite(tmp_path / "later.yaml", [GOOD, GOOD, bad]))
    assert first
    # The same messages at the same places in defaultTest; only the test's own lines differ.
    shared = [p for p in first if int(p.split(":")[0]) < 10]
    assert shared
    assert [p for p in later if int(p.split(":")[0]) < 10] == shared


def test_each_test_keeps_the_template_to_render_with_its_own_vars(tmp_path: Path) -> None:
    suite, _ = load_suite(_suite(tmp_path / "s.yaml", [GOOD, {"word": "yo", "pattern": "y"}, GOOD]))
    values = [[a.value for a in t.asserts] for t in suite.tests]
    assert values == [["{{word}}", "{{pattern}}"]] * 3
    assert [t.vars["word"] for t in suite.tests] == ["hi", "yo", "hi"]


def test_a_first_test_with_a_problem_does_not_stop_the_others_being_checked(
    tmp_path: Path,
) -> None:
    problems = _problems(
        _suite(tmp_path / "s.yaml", [{"word": "hi"}, GOOD, {"word": "x", "pattern": "("}])
    )
    assert sorted(p for p in problems if p.startswith("9:")) == [
        "9:14: bad regex: missing ), unterminated subpattern at position 0",
        "9:14: the 'regex' value uses 'pattern', which this test's vars do not define",
    ]


def test_an_assert_set_in_default_test_still_sees_each_tests_vars(tmp_path: Path) -> None:
    suite_file = tmp_path / "set.yaml"
    suite_file.write_text(
        textwrap.dedent(
            """\
            version: 1
            model: echo
            prompts: ["Say {{word}}"]
            defaultTest:
              assert:
                - type: assert-set
                  assert:
                    - type: contains
                      value: "{{word}}"
            tests:
              - vars: {word: hi}
              - vars: {other: x}
            """
        ),
        encoding="utf-8",
    )
    problems = _problems(suite_file)
    assert any("'word'" in p for p in problems)
