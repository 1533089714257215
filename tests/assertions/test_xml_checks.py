"""is-xml and contains-xml on outputs chosen for promptfoo's edge cases."""

from __future__ import annotations

from typing import Any

import pytest

from skilleval.api import Check, Verdict
from skilleval.assertions.builtin._xml_fragments import xml_candidates
from skilleval.assertions.builtin.xml_checks import (
    contains_xml,
    is_xml,
    required_paths,
    xml_problem,
)

DOC = "<order id='3'><item>pen</item><item>ink</item><note/></order>"


def run(fn: Any, output: str, value: Any = None) -> Verdict:
    verdict = fn(Check(output=output, value=value))
    assert isinstance(verdict, Verdict)
    return verdict


def test_required_paths_in_promptfoos_three_spellings() -> None:
    assert required_paths("a.b, c") == ["a.b", "c"]
    assert required_paths(["a.b", 3]) == ["a.b", "3"]
    assert required_paths({"requiredElements": ["x"]}) == ["x"]
    assert required_paths({}) == []
    assert required_paths(None) == []


@pytest.mark.parametrize(
    ("paths", "passed"),
    [
        ("order", True),
        ("order.@_id", True),
        ("order.item.0, order.item.1", True),
        ("order.item.2", False),
        ("order.note", True),  # an empty element is there, as an empty text
        ("order.note.x", False),
        ("order.item.text", False),
    ],
)
def test_is_xml_element_paths(paths: str, passed: bool) -> None:
    assert run(is_xml, DOC, paths).passed is passed


def test_is_xml_reasons() -> None:
    assert run(is_xml, DOC, "order.item").reason == "output is well-formed XML, with order.item"
    assert run(is_xml, DOC, "order.x, order.y").reason == "output XML lacks order.x, order.y"
    broken = run(is_xml, "<a><b></a>")
    assert not broken.passed
    assert broken.reason == "output is not well-formed XML: mismatched tag at line 1, column 9"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("<a/>", None),
        ("<?xml version='1.0'?>\n<a>x</a>", None),
        ("<a/><b/>", "junk after document element"),
        ("text <a/>", "syntax error"),
        ("<a>&x;</a>", "undefined entity"),
        ("<p:a>1</p:a>", "unbound prefix"),
        ("<!DOCTYPE a [<!ENTITY e 'v'>]><a>&e;</a>", "DTD internal subset"),
    ],
)
def test_xml_well_formedness(text: str, problem: str | None) -> None:
    found = xml_problem(text)
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem in found


def test_contains_xml_tries_sibling_runs_then_outermost_elements() -> None:
    text = "see <a>1</a> and <b x='2'/> then <c><d/></c>"
    spans = xml_candidates(text)
    assert spans[0] == (4, len(text))  # the three top-level elements together
    assert [text[s:e] for s, e in spans[1:]] == ["<a>1</a>", "<b x='2'/>", "<c><d/></c>"]


def test_contains_xml_skips_what_a_well_formed_run_already_covered() -> None:
    # The run of both items is well-formed but has a list of items, so "item.@_id" is
    # missing; promptfoo does not then try each item on its own.
    text = 'data: <item id="7"/> and <item id="8"/>'
    assert not run(contains_xml, text, "item.@_id").passed
    assert run(contains_xml, text, "item.1.@_id").passed


def test_contains_xml_is_as_lenient_as_promptfoos_parser() -> None:
    assert run(contains_xml, "x <m a=1 flag b='<'>Tom & Jerry &x;</m>", "m.@_flag").passed
    assert not run(contains_xml, "no tags here").passed
    assert run(contains_xml, "no tags here").reason == "output contains no XML elements"
    unbalanced = run(contains_xml, "<a><b>text</a>")
    assert not unbalanced.passed
