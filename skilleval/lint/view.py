"""What the checks look at: tests with their rendered prompts, assertions and positions.

A view is built from the loaded :class:`~skilleval.suite.model.Suite` when the suite loads,
so defaultTest merging, ``file://`` test files and ``prompts:`` × tests are exactly what a
run would see. When the suite does not load, lint still reports what it can: the view is
then built from the suite file's inline tests as written, best effort.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skilleval.errors import Location, SkillevalError
from skilleval.lint.ngrams import words
from skilleval.suite import template
from skilleval.suite.model import Suite, TestCase
from skilleval.suite.skills import Skill, load_skill
from skilleval.suite.yamlio import Document, PathKey, load_yaml
from skilleval.userfile import lookup_problem
from skilleval.util.fileref import is_ref
from skilleval.util.frozen import frozen

MODEL_TYPES = frozenset({"llm-rubric", "llm-assert"})
"""Judge-graded types whose values are criteria in plain language."""


@frozen
class LintAssert:
    """One assertion of one test."""

    type: str
    """As written, ``not-`` included."""
    base: str
    """The type without ``not-``."""
    negated: bool
    value: Any
    weight: float
    threshold: float | None
    where: Location
    tier: str
    """``deterministic`` or ``model``."""

    @property
    def criteria(self) -> list[str]:
        """The plain-language items of a judge-graded assertion (rubric items, statements)."""
        if self.tier != "model":
            return []
        if isinstance(self.value, str):
            return [self.value]
        if isinstance(self.value, list):
            return [v for v in self.value if isinstance(v, str)]
        return []


@frozen
class Piece:
    """A part of a prompt as written: the template itself, or one variable's value."""

    text: str
    where: Location


@frozen
class LintTest:
    """One test as a run would send it."""

    id: str
    where: Location
    prompt: str
    """The rendered user turn(s)."""
    pieces: tuple[Piece, ...]
    """Where the prompt's text is written, to point findings at the right line."""
    should_trigger: bool | None
    asserts: tuple[LintAssert, ...]
    threshold: float | None = None

    @property
    def is_negative(self) -> bool:
        return self.should_trigger is False

    def locate(self, phrase: Sequence[str]) -> Location:
        """Where the words of ``phrase`` are written: the var or template that holds them."""
        needle = f" {' '.join(phrase)} "
        for piece in self.pieces:
            if needle in f" {' '.join(words(piece.text))} ":
                return piece.where
        return self.pieces[0].where if self.pieces else self.where


@dataclass
class LintView:
    """A suite as lint sees it."""

    path: Path
    display: str
    doc: Document | None
    """The suite file as written; None when it is not even valid YAML."""
    tests: list[LintTest] = field(default_factory=list)
    skill: Skill | None = None
    skill_where: Location | None = None
    yaml_files: list[Path] = field(default_factory=list)
    """The suite and the YAML test files it reads, for the raw-text checks."""
    loaded: bool = False
    base: Path | None = None
    """The folder the suite's relative paths start from (for another tool's eval file, the
    folder of the suite it stands for); None: the suite file's folder."""


# -- from a loaded suite ----------------------------------------------------------------------


class _Positions:
    """Finds the raw node of a test in its file, to point at the var a phrase comes from."""

    def __init__(self) -> None:
        self._docs: dict[str, tuple[Document, dict[Location, PathKey]] | None] = {}

    def _index(self, file: Path) -> tuple[Document, dict[Location, PathKey]] | None:
        key = str(file)
        if key not in self._docs:
            entry: tuple[Document, dict[Location, PathKey]] | None = None
            if file.suffix.lower() in (".yaml", ".yml", ".json"):
                try:
                    doc = load_yaml(file)
                except SkillevalError:
                    doc = None
                if doc is not None:
                    reverse: dict[Location, PathKey] = {}
                    for path, loc in doc.values.items():
                        reverse.setdefault(loc, path)
                    entry = (doc, reverse)
            self._docs[key] = entry
        return self._docs[key]

    def var_at(self, file: Path, test_at: Location, name: str) -> Location | None:
        found = self._index(file)
        if found is None:
            return None
        doc, reverse = found
        path = reverse.get(test_at)
        if path is None:
            return None
        return doc.values.get((*path, "vars", name))


def _tier(entry_tier: str) -> str:
    return "model" if entry_tier == "model" else "deterministic"


def from_suite(suite: Suite, doc: Document, files: Iterable[Path]) -> LintView:
    """The view of a suite that loaded."""
    view = LintView(suite.path, suite.display, doc, loaded=True, skill=suite.skill)
    if "skill" in doc.data:
        view.skill_where = doc.at(["skill"])
    positions = _Positions()
    default_vars = (doc.data.get("defaultTest") or {}).get("vars")
    for test in suite.tests:
        view.tests.append(_test_from_case(suite, test, doc, positions, default_vars))
    view.yaml_files = [p for p in files if p.suffix.lower() in (".yaml", ".yml")]
    return view


def _test_from_case(
    suite: Suite, test: TestCase, doc: Document, positions: _Positions, default_vars: Any
) -> LintTest:
    prompt = test.prompt
    templates = (
        [prompt.text] if prompt.text is not None else [t for r, t in prompt.messages if r == "user"]
    )
    rendered: list[str] = []
    for text in templates:
        try:
            rendered.append(template.render(text, test.vars))
        except template.TemplateProblem:
            rendered.append(text)
    pieces: list[Piece] = []
    used: set[str] = set()
    for text in templates:
        with contextlib.suppress(template.TemplateProblem):
            used |= template.variables(text)
    test_file = _file_of(suite, test)
    for name in sorted(used):
        value = test.vars.get(name)
        if not isinstance(value, str):
            continue
        where = positions.var_at(test_file, test.where, name) if test_file else None
        if where is None and isinstance(default_vars, dict) and name in default_vars:
            where = doc.at(["defaultTest", "vars", name])
        pieces.append(Piece(value, where or test.where))
    pieces.extend(Piece(text, prompt.where) for text in templates)
    asserts = tuple(
        LintAssert(
            type=a.type,
            base=a.spec.name,
            negated=a.negated,
            value=a.value,
            weight=a.weight,
            threshold=a.threshold,
            where=a.where,
            tier=_tier(a.tier),
        )
        for a in test.asserts
    )
    return LintTest(
        id=test.id,
        where=test.where,
        prompt="\n".join(rendered),
        pieces=tuple(pieces),
        should_trigger=test.should_trigger,
        asserts=asserts,
        threshold=test.threshold,
    )


def _file_of(suite: Suite, test: TestCase) -> Path | None:
    shown = test.where.path
    if shown == suite.display:
        return suite.path
    candidate = Path(shown)
    return candidate if candidate.exists() else None


# -- from the file as written -----------------------------------------------------------------


def from_document(path: Path, doc: Document, known_tiers: Mapping[str, str]) -> LintView:
    """A best-effort view of a suite that did not load: its inline tests, as written."""
    view = LintView(path, doc.display, doc, yaml_files=[path])
    data = doc.data if isinstance(doc.data, dict) else {}
    if isinstance(data.get("skill"), str):
        view.skill_where = doc.at(["skill"])
        view.skill = _skill_near(path, data["skill"])
    prompts = _raw_prompts(doc)
    default: dict[str, Any] = (
        data["defaultTest"] if isinstance(data.get("defaultTest"), dict) else {}
    )
    default_asserts = _raw_asserts(doc, ["defaultTest", "assert"], known_tiers)
    tests = data.get("tests")
    if not isinstance(tests, list):
        return view
    for i, raw in enumerate(tests):
        if not isinstance(raw, dict):
            continue
        at: list[str | int] = ["tests", i]
        own_vars: dict[str, Any] = raw["vars"] if isinstance(raw.get("vars"), dict) else {}
        vars_ = dict(own_vars)
        if isinstance(default.get("vars"), dict):
            vars_ = {**default["vars"], **own_vars}
        own = [(str(raw["prompt"]), doc.at([*at, "prompt"]))] if "prompt" in raw else list(prompts)
        options: dict[str, Any] = raw["options"] if isinstance(raw.get("options"), dict) else {}
        asserts = [] if options.get("disableDefaultAsserts") else list(default_asserts)
        asserts += _raw_asserts(doc, [*at, "assert"], known_tiers)
        trigger = raw.get("should_trigger")
        for text, where in own:
            try:
                rendered = template.render(text, vars_)
            except template.TemplateProblem:
                rendered = text
            pieces = [
                Piece(v, doc.at([*at, "vars", k]))
                for k, v in own_vars.items()
                if isinstance(v, str) and not is_ref(v)
            ]
            pieces.append(Piece(text, where))
            view.tests.append(
                LintTest(
                    id=str(raw.get("id") or f"tests[{i}]"),
                    where=doc.at(at),
                    prompt=rendered,
                    pieces=tuple(pieces),
                    should_trigger=trigger if isinstance(trigger, bool) else None,
                    asserts=tuple(asserts),
                    threshold=_number(raw.get("threshold")),
                )
            )
    return view


def _skill_near(suite_path: Path, raw: str) -> Skill | None:
    path = suite_path.parent / raw
    if lookup_problem(path) is not None:
        return None  # the missing-file check reports it
    if path.is_dir():
        path = path / "SKILL.md"
    try:
        return load_skill(path)
    except SkillevalError:
        return None


def _raw_prompts(doc: Document) -> list[tuple[str, Location]]:
    raw = doc.data.get("prompts") if isinstance(doc.data, dict) else None
    if isinstance(raw, str):
        return [] if is_ref(raw) else [(raw, doc.at(["prompts"]))]
    out: list[tuple[str, Location]] = []
    for i, item in enumerate(raw if isinstance(raw, list) else []):
        text = item.get("raw") if isinstance(item, dict) else item
        if isinstance(text, str) and not is_ref(text):
            out.append((text, doc.at(["prompts", i])))
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _raw_asserts(
    doc: Document, at: list[str | int], known_tiers: Mapping[str, str]
) -> list[LintAssert]:
    node: Any = doc.data
    for part in at:
        if isinstance(node, dict) and isinstance(part, str):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return []
    if not isinstance(node, list):
        return []
    out: list[LintAssert] = []
    for i, entry in enumerate(node):
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            continue
        written = entry["type"]
        base = written.removeprefix("not-")
        tier = known_tiers.get(base) or ("model" if base.startswith("llm-") else "deterministic")
        weight = _number(entry.get("weight"))
        out.append(
            LintAssert(
                type=written,
                base=base,
                negated=written != base,
                value=entry.get("value"),
                weight=1.0 if weight is None else weight,
                threshold=_number(entry.get("threshold")),
                where=doc.at([*at, i]),
                tier=tier,
            )
        )
    return out
