"""is-html and contains-html on outputs chosen for promptfoo's edge cases."""

from __future__ import annotations

from typing import Any

import pytest

from skilleval.api import Check, Verdict
from skilleval.assertions.builtin.html_checks import (
    ELEMENT_NAMES,
    HTML_ELEMENTS,
    contains_html,
    html_problem,
    is_html,
)


def run(fn: Any, output: str, value: Any = None) -> Verdict:
    verdict = fn(Check(output=output, value=value))
    assert isinstance(verdict, Verdict)
    return verdict


def test_the_element_names_are_read_from_their_data_file() -> None:
    listed = [
        line
        for line in ELEMENT_NAMES.read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    ]
    assert len(listed) == len(set(listed)) == len(HTML_ELEMENTS) == 113
    assert {"html", "template", "h6", "svg"} <= HTML_ELEMENTS
    assert all(name.isalnum() and name == name.lower() for name in HTML_ELEMENTS)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("<p>Hello <b>you</b></p>", None),
        ("<my-card>x</my-card>", None),
        ("<!DOCTYPE html><html><body>loose text is fine here</body></html>", None),
        ("   ", "output is empty"),
        ("<?xml version='1.0'?><p/>", "output is XML, not HTML"),
        ("Hello <b>you</b>", "text 'Hello' stands outside any element"),
        ("<table>stray<tr><td>1</td></tr></table>", "text 'stray' stands outside any element"),
        ("text <body>x</body>", "text 'text x' stands outside any element"),
        ("<foo>bar</foo>", "output holds no known HTML element"),
        ("<html>", None),
        ("x<html>", "text 'x' stands outside any element"),
        ("<noscript>inside</noscript>", None),
    ],
)
def test_html_problems(text: str, problem: str | None) -> None:
    assert html_problem(text) == problem


def test_is_html_reason() -> None:
    assert run(is_html, "<p>x</p>").reason == "output is HTML"
    assert run(is_html, "<foo/>").reason == "output is not HTML: output holds no known HTML element"


@pytest.mark.parametrize(
    ("text", "passed"),
    [
        ("<b>bold</b>", True),  # opening and closing tags
        ("<br/>", True),  # a self-closing tag and a common tag
        ("x &amp; y", False),  # one sign only
        ("a < b and c > d", False),
        ("<x-y>", False),  # an opening tag only
        ("<!-- note --> &nbsp;", True),
    ],
)
def test_contains_html_counts_signs(text: str, passed: bool) -> None:
    verdict = run(contains_html, text)
    assert verdict.passed is passed
    assert "needed)" in verdict.reason
