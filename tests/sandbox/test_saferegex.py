"""Users' regexes: one engine with a time limit, at every place a suite can supply one.

A backtracking pattern must end as an ``error`` verdict, never a hang. The tests lower the
time limit so that they stay fast; they assert what happens, not how long it takes.
"""

from __future__ import annotations

import ast
import re
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest
import regex as engine

from skilleval.api import Check, Verdict
from skilleval.assertions.builtin import regex, workspace
from skilleval.errors import ExprRuntimeError, RegexError, RegexTimeoutError
from skilleval.expr import compile_expr
from skilleval.sandbox import saferegex

ROOT = Path(__file__).resolve().parents[2]

# `regex` shortcuts (a+)+$ by itself; (a|aa)+$ it cannot, so only the time limit stops it.
CLASSIC = r"(a+)+$"
EXPONENTIAL = r"(a|aa)+$"
HOSTILE_TEXT = "a" * 50 + "b"


@pytest.fixture
def short_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(saferegex, "TIMEOUT_S", 0.05)


def test_the_classic_backtracking_pattern_finishes_without_a_match() -> None:
    assert saferegex.search(CLASSIC, HOSTILE_TEXT) is None


@pytest.mark.usefixtures("short_limit")
def test_a_pattern_past_the_time_limit_raises_and_names_itself() -> None:
    with pytest.raises(RegexTimeoutError, match=r"/\(a\|aa\)\+\$/ took longer than 0.05 s"):
        saferegex.search(EXPONENTIAL, HOSTILE_TEXT)


def test_a_pattern_that_does_not_compile_says_where() -> None:
    with pytest.raises(RegexError, match=r"missing \), unterminated subpattern at position 0"):
        saferegex.compile("(")


@pytest.mark.parametrize(
    ("pattern", "size"),
    [
        ("a{1000000}", 1_000_000),
        ("a{1000000,}", 1_000_000),  # an open repeat writes out its lower bound
        ("a{200000,300000}", 200_000),
        ("(?:ab){60000}", 120_000),
        ("(){1000000}", 1_000_000),  # an empty group still takes a node per copy
        ("(?>a{100}){10000}", 1_010_000),  # atomic group
        ("(?=a){1000000}", 2_000_000),  # lookahead
        ("(a)(?(1)b{1000}|c){1000}", 1_002_002),  # conditional group
        ("a{50001}|b{50000}", 100_002),  # alternatives add up
        ("((a{100}){100}){300}", 3_030_300),  # nested repeats multiply
    ],
)
def test_a_pattern_whose_repeats_write_out_too_much_is_refused_before_compiling(
    pattern: str, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the pattern reached the compiler")

    monkeypatch.setattr(engine, "compile", never)
    with pytest.raises(RegexError) as caught:
        saferegex.compile(pattern)
    assert str(caught.value) == (
        f"the pattern's repeats write out {size:,} items, over the limit of 100,000;"
        " use a smaller count, or + or * instead of {n}"
    )


@pytest.mark.parametrize(
    "pattern",
    [
        "a{100000}",  # exactly at the limit
        "a{0,1000000}",  # an upper bound is not written out
        "a{1,1000000}",
        "(?:a+){99999}",
        r"\d+(?:,\d{3})*",
    ],
)
def test_repeats_within_the_limit_compile(pattern: str) -> None:
    assert saferegex.compile(pattern).pattern == pattern


@pytest.mark.parametrize("depth", [500, 2000])
def test_groups_nested_too_deeply_are_refused(depth: int) -> None:
    with pytest.raises(RegexError, match=r"^the pattern nests groups too deeply$"):
        saferegex.compile("(" * depth + "a" + ")" * depth)


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (r"\p{L}", r"bad escape \p at position 0"),  # regex would accept it; re does not
        ("a{2,1}", "min repeat greater than max repeat at position 2"),
        ("(?<n>a)", "unknown extension ?<n at position 1"),  # regex reads it as (?P<n>a)
        (
            "(?P<n>a)(?P<n>b)",
            "redefinition of group name 'n' as group 2; was group 1 at position 12",
        ),
        ("a**", "multiple repeat at position 2"),
    ],
)
def test_syntax_and_error_messages_are_re_s(pattern: str, message: str) -> None:
    with pytest.raises(re.error) as expected:
        re.compile(pattern)
    assert str(expected.value) == message
    with pytest.raises(RegexError) as caught:
        saferegex.compile(pattern)
    assert str(caught.value) == message


def test_flags_passed_in_are_read_as_re_reads_them() -> None:
    # VERBOSE changes how the pattern parses; ASCII is numbered differently by re and regex.
    assert saferegex.compile("a b # note", engine.VERBOSE).search("ab") is not None
    assert saferegex.search(r"\w", "é", engine.ASCII) is None
    assert saferegex.search("^b", "a\nb", saferegex.MULTILINE) is not None


def test_a_nested_set_warning_from_re_does_not_reach_the_user() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert saferegex.compile("[[:alpha:]]").search("x]") is not None


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        (r"foo(?=bar)", "foobar", "foo"),  # lookahead: RE2 would refuse it
        (r"(?<!x)y", "ay", "y"),  # lookbehind
        (r"(\w)\1", "hello", "ll"),  # backreference
        (r"\bcafé\b", "un café noir", "café"),  # Unicode \b and \w: RE2's are ASCII
        (r"\d+", "\u0663\u0664", "\u0663\u0664"),  # Unicode digits, as in re
        (r"(?m)^total: \d+$", "x\ntotal: 42\ny", "total: 42"),
    ],
)
def test_python_re_syntax_and_meaning_are_kept(pattern: str, text: str, found: str) -> None:
    match = saferegex.search(pattern, text)
    assert match is not None
    assert match.group(0) == found


def _check(fn: Any, output: str, value: Any, **fields: Any) -> Verdict:
    verdict = fn(Check(output=output, value=value, **fields))
    assert isinstance(verdict, Verdict)
    return verdict


def test_regex_assertion_on_the_classic_pattern_is_a_plain_fail() -> None:
    verdict = _check(regex.regex, HOSTILE_TEXT, CLASSIC)
    assert (verdict.passed, verdict.error) == (False, None)


@pytest.mark.usefixtures("short_limit")
def test_regex_assertion_past_the_limit_is_an_error() -> None:
    verdict = _check(regex.regex, HOSTILE_TEXT, EXPONENTIAL)
    assert verdict.error is not None
    assert "took longer than" in verdict.error


@pytest.mark.usefixtures("short_limit")
def test_file_matches_past_the_limit_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text(HOSTILE_TEXT, encoding="utf-8")
    value = {"path": "out.txt", "pattern": EXPONENTIAL}
    verdict = _check(workspace.file_matches, "", value, workspace=tmp_path)
    assert verdict.error is not None
    assert verdict.error.startswith("out.txt: the regex /(a|aa)+$/ took longer than")


@pytest.mark.usefixtures("short_limit")
def test_expr_matches_past_the_limit_is_a_runtime_error() -> None:
    compiled = compile_expr(f"matches(output, '{EXPONENTIAL}')")
    with pytest.raises(ExprRuntimeError, match=r"^matches\(\): the regex .* took longer than"):
        compiled.evaluate({"output": HOSTILE_TEXT})


def test_expr_matches_on_a_pattern_built_at_run_time_checks_its_repeats() -> None:
    compiled = compile_expr("matches(output, vars.pattern)")
    with pytest.raises(
        ExprRuntimeError,
        match=r"^matches\(\): invalid regular expression: the pattern's repeats write out"
        r" 1,000,000 items",
    ):
        compiled.evaluate({"output": "a", "vars": {"pattern": "a{1000000}"}})


@pytest.mark.usefixtures("short_limit")
def test_a_transform_past_the_limit_errs_its_assertions_and_the_run_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from skilleval.cli import run_cli

    suite = tmp_path / "suite.yaml"
    suite.write_text(
        textwrap.dedent(
            f"""
            version: 1
            model:
              provider: scripted
              default: {HOSTILE_TEXT}
            tests:
              - id: hostile
                prompt: q
                options:
                  transform: >-
                    matches(output, '{EXPONENTIAL}')
                assert:
                  - type: equals
                    value: "false"
              - id: fine
                prompt: q
                assert:
                  - type: regex
                    value: '{CLASSIC}'
                  - type: contains
                    value: b
            """
        ),
        encoding="utf-8",
    )
    code = run_cli(["run", str(suite), "--json"])
    doc = json.loads(capsys.readouterr().out)
    statuses = {r["test_id"]: [a["status"] for a in r["asserts"]] for r in doc["records"]}
    assert statuses == {"hostile": ["error"], "fine": ["fail", "pass"]}
    hostile = doc["records"][0]["asserts"][0]
    assert "took longer than" in hostile["reason"]
    assert code != 0


# Every module where a suite's pattern meets a text; none may call `re` on it directly.
USER_PATTERN_SITES = [
    "skilleval/assertions/builtin/regex.py",
    "skilleval/assertions/builtin/workspace.py",
    "skilleval/expr/functions.py",
    "skilleval/expr/compiler.py",
    "skilleval/engine/testing.py",
]


@pytest.mark.parametrize("path", USER_PATTERN_SITES)
def test_user_patterns_never_reach_re_directly(path: str) -> None:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    } | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "re" not in imported
    assert "saferegex" in imported


# JavaScript's spellings, as promptfoo configs write them. Named groups are pinned against
# promptfoo 0.123.1 in tests/data/promptfoo/assertion-values; `\p{…}` is a deliberate
# difference (promptfoo builds its RegExp without the `u` flag, so there `\p{L}` is the text
# `p{L}`): skilleval gives it the Unicode meaning the writer meant.
@pytest.mark.parametrize(
    ("pattern", "output", "passed"),
    [
        (r"(?<name>[A-Z][a-z]+) (?<age>\d+)", "Ada 36", True),
        (r"(?<x>[a-z])\k<x>", "Ada", False),
        (r"(?<x>[a-z])\k<x>", "Anna", True),
        (r"(?<=A)da", "Ada", True),
        (r"(?<!A)da", "Ada", False),
        (r"\\(?<n>x)", "\\x", True),
        (r"^\p{L}+ \d+$", "Zoë 36", True),
        (r"^\P{L}", "Zoë", False),
        (r"[\p{Lu}]\pL", "Zoë", True),
    ],
)
def test_javascript_named_groups_and_unicode_properties(
    pattern: str, output: str, passed: bool
) -> None:
    assert regex.check_pattern(pattern) is None
    assert _check(regex.regex, output, pattern).passed is passed


def test_a_repeat_of_a_property_is_still_measured() -> None:
    with pytest.raises(RegexError, match="repeats write out"):
        saferegex.compile(r"(\p{L}{1000}){1000}", javascript=True)


def test_javascripts_spellings_are_only_read_where_asked() -> None:
    with pytest.raises(RegexError, match="unknown extension"):
        saferegex.compile("(?<n>a)")
    assert saferegex.search("(?<n>a)", "a", javascript=True) is not None
