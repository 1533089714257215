"""Test ids: the ones written are checked for duplicates, the others are made from the test."""

from __future__ import annotations

import re
from dataclasses import replace

from skilleval.errors import Location
from skilleval.suite.context import Loader
from skilleval.suite.model import TestCase


def assign_ids(loader: Loader, tests: list[TestCase]) -> None:
    """Give every test its id, in place; a duplicate written id is an error at the second."""
    seen: dict[str, Location] = {}
    explicit = {t.id for t in tests if t.id}
    multi_prompt = len({t.prompt.label for t in tests if t.prompt.label != "prompt"}) > 1
    for i, test in enumerate(tests):
        tid = test.id
        if tid:
            if multi_prompt and test.prompt.label != "prompt":
                tid = f"{tid}[{test.prompt.label}]"
            if tid in seen:
                loader.error(test.where, f"duplicate test id '{tid}' (first at {seen[tid]})")
                continue
        else:
            stem = slug(_slug_source(test))
            if multi_prompt and test.prompt.label != "prompt":
                stem = f"{stem}[{test.prompt.label}]"
            tid, n = stem, 2
            while tid in seen or tid in explicit:
                tid, n = f"{stem}-{n}", n + 1
        seen[tid] = test.where
        tests[i] = replace(test, id=tid)


def _slug_source(test: TestCase) -> str:
    if test.description:
        return test.description
    if test.prompt.label == "prompt" and test.prompt.text:
        return test.prompt.text
    return " ".join(str(v) for v in test.vars.values()) or "test"


_WORD = re.compile(r"[a-z0-9]+")


def slug(text: str) -> str:
    """Lower-case words joined by ``-``, at most 48 characters; ``test`` when none are left."""
    words = _WORD.findall(text.lower())
    made = "-".join(words)[:48].strip("-")
    return made or "test"
