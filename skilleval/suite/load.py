"""Turn a suite file into a :class:`~skilleval.suite.model.Suite`, or every reason it can't be.

Loading is strict and never needs a model: schema violations, unknown assertion types,
values that cannot work (a regex that does not compile …), duplicate ids and missing files
are all collected and reported together, in file order, each at its ``file:line:col``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError

from skilleval import expr
from skilleval.assertions.registry import UNSUPPORTED, Registry, default_registry
from skilleval.errors import (
    Diagnostic,
    DiagnosticsError,
    Location,
    PluginError,
    SuiteError,
    missing_file,
)
from skilleval.skills import Skill, load_skill
from skilleval.suite import files as filerefs
from skilleval.suite import template
from skilleval.suite.gate import parse_gate
from skilleval.suite.model import (
    DEFAULT_MAX_STEPS,
    AgentSpec,
    AssertionEntry,
    LiftConfig,
    Prompt,
    Suite,
    TestCase,
    Transform,
    Turn,
)
from skilleval.suite.model_config import ModelSpec, parse_decoding, parse_model
from skilleval.suite.schema import validate, validator_for
from skilleval.suite.suite_schema import suite_schema
from skilleval.suite.yamlio import Document, display_path, load_yaml
from skilleval.userfile import lookup_problem, read_text


@dataclass(frozen=True, slots=True)
class Overrides:
    """Settings from the command line that win over the suite file."""

    model: str | None = None
    judge: str | None = None
    trials: int | None = None
    seed: int | None = None
    plugin_dirs: tuple[Path, ...] = ()
    entry_points: bool = True


@dataclass
class _Loader:
    path: Path
    overrides: Overrides
    diags: list[Diagnostic] = field(default_factory=list)
    reader: filerefs.Reader = field(default_factory=filerefs.Reader)
    registry: Registry = field(default_factory=Registry)
    schema: Mapping[str, Any] = field(default_factory=dict)
    """The suite schema for what ``registry`` holds."""
    top: dict[str, Any] = field(default_factory=dict)
    """The suite's top-level mapping."""
    shared_tools: tuple[Any, ...] = ()
    """Tools from the top-level ``tools:`` and ``defaultTest.tools``, in that order."""

    def error(self, where: Location, message: str) -> None:
        self.diags.append(Diagnostic(where, message))

    def add(self, diagnostic: Diagnostic) -> None:
        self.diags.append(diagnostic)

    def absorb(self, exc: DiagnosticsError) -> None:
        self.diags.extend(exc.diagnostics)


def load_suite(path: Path, overrides: Overrides | None = None) -> tuple[Suite, Registry]:
    """Load, validate and resolve a suite file.

    Raises:
        SuiteError: with every problem found, in file order.
        PluginError: when a plugin folder cannot be loaded.
    """
    loader = _Loader(path, overrides or Overrides())
    doc = load_yaml(path, strict=False)
    loader.reader.files.add(path.resolve())
    if doc.data is None or doc.data == {}:
        raise SuiteError(
            [
                *doc.problems,
                Diagnostic(
                    Location(doc.display, 1, 1),
                    "suite is empty: expected a mapping with a `tests:` list",
                ),
            ]
        )
    if not isinstance(doc.data, dict):
        raise SuiteError(
            [*doc.problems, Diagnostic(doc.at(), "a suite must be a mapping of keys like `tests:`")]
        )
    loader.registry = _registry(loader, doc)
    loader.schema = suite_schema(loader.registry)
    problems = validate(doc, loader.schema, what="the suite")
    if problems:
        raise SuiteError([*doc.problems, *problems])
    loader.diags.extend(doc.problems)
    loader.top = doc.data
    suite = _compile(loader, doc)
    if loader.diags:
        raise SuiteError(loader.diags)
    return suite, loader.registry


def _registry(loader: _Loader, doc: Document) -> Registry:
    folders: list[tuple[Path, Location | None]] = []
    listed = doc.data.get("plugins") or []
    for i, rel in enumerate(listed if isinstance(listed, list) else []):
        if isinstance(rel, str) and rel:  # anything else is a schema error, reported next
            folders.append((loader.path.parent / rel, doc.at(["plugins", i])))
    folders.extend((p, None) for p in loader.overrides.plugin_dirs)
    registry = default_registry(folders, entry_points=loader.overrides.entry_points)
    for folder, _ in folders:
        if folder.is_dir():
            loader.reader.files.add(folder.resolve())
    return registry


def _compile(loader: _Loader, doc: Document) -> Suite:
    data: dict[str, Any] = doc.data
    base = loader.path.parent
    prompts = _prompts(loader, doc)
    default = data.get("defaultTest") or {}
    default_doc = doc.sub(["defaultTest"]) if "defaultTest" in data else None
    _shared_tools(loader, doc, default_doc)
    raw_tests = _raw_tests(loader, doc)
    if not raw_tests and not loader.diags:
        loader.error(
            doc.key_at(["tests"]) if "tests" in data else doc.at(),
            "suite has no tests" if "tests" in data else "suite has no `tests:`",
        )
    tests: list[TestCase] = []
    for raw in raw_tests:
        tests.extend(_tests(loader, raw, default, default_doc, prompts))
    _assign_ids(loader, tests)
    model = _model_spec(loader, doc, "model", loader.overrides.model)
    judge = None
    if "judge" in data or loader.overrides.judge is not None:
        judge = _model_spec(loader, doc, "judge", loader.overrides.judge)
    decoding, diags = parse_decoding(doc, loader.overrides.seed)
    loader.diags.extend(diags)
    trials = loader.overrides.trials or int(data.get("trials", 1))
    if trials > 1 and decoding.mode == "deterministic":
        where = doc.key_at(["trials"]) if "trials" in data else doc.at()
        loader.error(
            where,
            f"trials: {trials} needs `decoding: {{mode: distribution}}`; "
            "greedy decoding gives the same answer every trial",
        )
    skill, distractors = _skills(loader, doc)
    arms = _arms(loader, doc, skill)
    if skill is None and "skill" not in data:
        for test in tests:
            if test.should_trigger is not None:
                loader.error(
                    test.should_trigger_at or test.where,
                    "`should_trigger` needs a skill: add `skill: path/to/SKILL.md`",
                )
                break
    lift_raw = data.get("lift") or {}
    lift = LiftConfig(
        alpha=float(lift_raw.get("alpha", 0.05)),
        min_lift=float(lift_raw.get("min_lift", 0.0)),
        sidedness=lift_raw.get("sidedness", "two-sided"),
    )
    gate_cfg = parse_gate(doc, data.get("gate"), "skill" in data, loader.error)
    plugin_dirs = tuple((base / p).resolve() for p in data.get("plugins") or [])
    files = set(loader.reader.files) | {Path(s).resolve() for s in loader.registry.sources}
    return Suite(
        path=loader.path,
        display=doc.display,
        description=str(data.get("description", "")),
        type=data.get("type", "regression"),
        tests=tuple(tests),
        model=model,
        decoding=decoding,
        trials=trials,
        threshold=float(data.get("threshold", 1.0)),
        plugin_dirs=plugin_dirs + loader.overrides.plugin_dirs,
        judge=judge,
        skill=skill,
        distractors=distractors,
        arms=arms,
        lift=lift,
        gate=gate_cfg,
        files=frozenset(files),
        metadata=dict(data.get("metadata") or {}),
        registry_listing=tuple(loader.registry.listing()),
    )


# -- skills --------------------------------------------------------------------------------


def _skill_file(loader: _Loader, raw: str, where: Location) -> Skill | None:
    path = loader.path.parent / raw
    unreadable = lookup_problem(path)
    if unreadable is not None:
        loader.error(where, unreadable)
        return None
    if path.is_dir():
        path = path / "SKILL.md"
    if not path.exists():
        loader.add(
            missing_file(
                where, f"skill not found: {raw} (looked for {display_path(path)})", str(path)
            )
        )
        return None
    try:
        skill = load_skill(path, where)
    except DiagnosticsError as exc:
        loader.absorb(exc)
        return None
    loader.reader.files.add(path.resolve())
    return skill


def _skills(loader: _Loader, doc: Document) -> tuple[Skill | None, tuple[Skill, ...]]:
    data = doc.data
    skill = _skill_file(loader, data["skill"], doc.at(["skill"])) if "skill" in data else None
    others: list[Skill] = []
    for i, raw in enumerate(data.get("skills") or []):
        found = _skill_file(loader, raw, doc.at(["skills", i]))
        if found is None:
            continue
        names = [s.name for s in others] + ([skill.name] if skill else [])
        if found.name in names:
            loader.error(doc.at(["skills", i]), f"two skills are named '{found.name}'")
            continue
        others.append(found)
    if others and skill is None and "skill" not in data:
        loader.error(
            doc.key_at(["skills"]), "`skills:` lists distractors for routing; set `skill:` too"
        )
    return skill, tuple(others)


def _arms(loader: _Loader, doc: Document, skill: Skill | None) -> tuple[str, ...]:
    raw = doc.data.get("arms")
    if skill is None and "skill" not in doc.data:
        if raw is not None:
            loader.error(
                doc.key_at(["arms"]), "`arms:` needs a skill: add `skill: path/to/SKILL.md`"
            )
        return ("default",)
    if raw is None:
        return ("off", "on")
    if skill is None:
        return ("default",)
    order = {"off": 0, "on": 1, "routed": 2}
    return tuple(sorted(raw, key=lambda a: order[a]))


# -- prompts -------------------------------------------------------------------------------


def _prompts(loader: _Loader, doc: Document) -> list[Prompt]:
    raw = doc.data.get("prompts")
    if raw is None:
        return []
    base = loader.path.parent
    items: list[tuple[Any, list[str | int]]] = []
    if isinstance(raw, str):
        items.append((raw, ["prompts"]))
    elif isinstance(raw, dict):
        # promptfoo's older map form: the keys are file paths, without file://.
        for k, v in raw.items():
            ref = (
                k
                if filerefs.is_ref(k) or not re.search(r"\.(txt|md|j2|json|ya?ml)$", k)
                else f"file://{k}"
            )
            items.append(({"raw": ref, "label": v}, ["prompts", k]))
    else:
        items.extend((item, ["prompts", i]) for i, item in enumerate(raw))
    prompts: list[Prompt] = []
    for item, at in items:
        where = doc.at(at)
        label = None
        if isinstance(item, dict):
            label = item.get("label")
            item = item.get("raw") or item.get("id") or ""
        try:
            prompts.extend(_prompt_item(loader, str(item), base, where, label))
        except DiagnosticsError as exc:
            loader.absorb(exc)
    for i, p in enumerate(prompts):
        if not p.label:
            prompts[i] = Prompt(f"p{i + 1}", p.text, p.messages, p.where)
    return prompts


def _prompt_item(
    loader: _Loader, item: str, base: Path, where: Location, label: str | None
) -> list[Prompt]:
    if not filerefs.is_ref(item):
        return [Prompt(label or "", text=item, where=where)]
    out: list[Prompt] = []
    for path in loader.reader.paths(item, base, where):
        shown = display_path(path)
        if path.suffix.lower() in filerefs.DATA_SUFFIXES:
            pdoc = load_yaml(path, where=where)
            out.append(_chat_prompt(loader, pdoc, label or path.stem))
            continue
        text = read_text(path, where=where)
        # promptfoo's convention: several prompts in one text file, split by a `---` line.
        parts = [p.strip("\n") for p in re.split(r"^---\s*$", text, flags=re.M)]
        parts = [p for p in parts if p.strip()]
        for n, part in enumerate(parts):
            name = label or path.stem
            out.append(
                Prompt(
                    name if len(parts) == 1 else f"{name}-{n + 1}",
                    text=part,
                    where=Location(shown, 1, 1),
                )
            )
    return out


def _chat_prompt(loader: _Loader, pdoc: Document, label: str) -> Prompt:
    data = pdoc.data
    if not isinstance(data, list) or not data:
        raise SuiteError(
            [
                Diagnostic(
                    pdoc.at(), "a chat prompt file must hold a list of {role, content} messages"
                )
            ]
        )
    messages: list[tuple[str, str]] = []
    for i, msg in enumerate(data):
        if (
            not isinstance(msg, dict)
            or not isinstance(msg.get("role"), str)
            or not isinstance(msg.get("content"), str)
        ):
            raise SuiteError(
                [Diagnostic(pdoc.at([i]), "each message needs a string `role` and `content`")]
            )
        if msg["role"] not in ("system", "user", "assistant"):
            raise SuiteError(
                [
                    Diagnostic(
                        pdoc.at([i, "role"]),
                        f"role must be system, user or assistant, not {msg['role']!r}",
                    )
                ]
            )
        messages.append((msg["role"], msg["content"]))
    return Prompt(label, messages=tuple(messages), where=pdoc.at())


# -- tests ---------------------------------------------------------------------------------


def _is_type(loader: _Loader, name: str) -> bool:
    base = name.removeprefix("not-")
    return base in loader.registry or base in UNSUPPORTED


def _raw_tests(loader: _Loader, doc: Document) -> list[filerefs.RawTest]:
    raw = doc.data.get("tests")
    if raw is None:
        return []
    base = loader.path.parent
    entries: list[tuple[Any, list[str | int]]] = (
        [(raw, ["tests"])]
        if isinstance(raw, str)
        else [(t, ["tests", i]) for i, t in enumerate(raw)]
    )
    out: list[filerefs.RawTest] = []
    test_schema = {"$defs": loader.schema["$defs"], "$ref": "#/$defs/test"}
    for item, at in entries:
        if not isinstance(item, str):
            out.append(filerefs.RawTest(doc.sub(at), base))
            continue
        try:
            for path in loader.reader.paths(item, base, doc.at(at)):
                for rt in filerefs.tests_from_file(path, doc.at(at), lambda n: _is_type(loader, n)):
                    problems = validate(rt.doc, test_schema, what="the test")
                    if problems:
                        loader.diags.extend(problems)
                    else:
                        out.append(rt)
        except DiagnosticsError as exc:
            loader.absorb(exc)
    return out


def _merge_default(test: dict[str, Any], default: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(test)
    if "vars" in default and isinstance(default["vars"], dict):
        merged["vars"] = {**default["vars"], **(test.get("vars") or {})}
    for key in ("threshold", "metadata", "prompt"):
        if key in default and key not in test:
            merged[key] = copy.deepcopy(default[key])
    options = {**(default.get("options") or {}), **(test.get("options") or {})}
    if options:
        merged["options"] = options
    return merged


def _tests(
    loader: _Loader,
    raw: filerefs.RawTest,
    default: Mapping[str, Any],
    default_doc: Document | None,
    prompts: list[Prompt],
) -> list[TestCase]:
    doc = raw.doc
    if not isinstance(doc.data, dict):
        loader.error(doc.at(), "a test must be a mapping")
        return []
    data = _merge_default(doc.data, default)
    base = raw.base_dir
    where = doc.at()
    vars_ = data.get("vars") or {}
    try:
        if filerefs.is_ref(vars_):
            vars_ = loader.reader.value(str(vars_), base, doc.at(["vars"]))
            if not isinstance(vars_, dict):
                raise SuiteError([Diagnostic(doc.at(["vars"]), "a vars file must hold a mapping")])
        vars_ = {k: loader.reader.resolve(v, base, doc, ["vars", k]) for k, v in vars_.items()}
    except DiagnosticsError as exc:
        loader.absorb(exc)
        return []
    options = data.get("options") or {}
    asserts: list[AssertionEntry] = []
    if default_doc is not None and not options.get("disableDefaultAsserts"):
        for i, entry in enumerate(default.get("assert") or []):
            compiled = _assertion(
                loader, entry, default_doc, ["assert", i], loader.path.parent, vars_
            )
            if compiled:
                asserts.append(compiled)
    # Default assertions are resolved once per test so their templates see this test's vars.
    asserts = [_as_default(a) for a in asserts]
    for i, entry in enumerate(data.get("assert") or []):
        compiled = _assertion(loader, entry, doc, ["assert", i], base, vars_)
        if compiled:
            asserts.append(compiled)
    transform = _transform(loader, options.get("transform"), doc, ["options", "transform"])
    if options.get("rubricPrompt") is not None:
        asserts = _with_rubric_prompt(loader, asserts, options["rubricPrompt"], doc, base)
    agent = _agent(loader, doc, default, default_doc, base, vars_)
    if agent is not None and agent.turns:
        test_prompts = _turn_prompts(loader, doc, agent, vars_)
    else:
        test_prompts = _test_prompts(loader, data, doc, prompts)
    out = []
    for prompt in test_prompts:
        if agent is None or not agent.turns:
            _check_template_vars(loader, prompt, vars_, where)
        out.append(
            TestCase(
                id=str(data.get("id", "")),
                description=str(data.get("description", "")),
                prompt=prompt,
                vars=vars_,
                asserts=tuple(asserts),
                where=where,
                base_dir=base,
                should_trigger=data.get("should_trigger"),
                should_trigger_at=doc.key_at(["should_trigger"])
                if "should_trigger" in doc.data
                else None,
                threshold=data.get("threshold"),
                transform=transform,
                metadata=dict(data.get("metadata") or {}),
                options=dict(options),
                agent=agent,
            )
        )
    return out


# -- agentic tests (skilleval/agent, docs/agentic.md) ----------------------------------------


def _plugin_folders(loader: _Loader) -> list[Path]:
    folders = [loader.path.parent / rel for rel in loader.top.get("plugins") or []]
    return folders + list(loader.overrides.plugin_dirs)


def _shared_tools(loader: _Loader, doc: Document, default_doc: Document | None) -> None:
    """Parse the top-level and defaultTest tools once; every test gets them."""
    from skilleval.agent.tools import parse_tools

    shared: list[Any] = []
    sources = [(doc, loader.path.parent)] + (
        [(default_doc, loader.path.parent)] if default_doc else []
    )
    for source, base in sources:
        if "tools" in source.data:
            tools, diags = parse_tools(
                source,
                ["tools"],
                base_dir=base,
                plugin_dirs=_plugin_folders(loader),
                kinds=loader.registry.tool_kinds(),
            )
            loader.diags.extend(diags)
            shared.extend(tools)
    if default_doc is not None and "turns" in default_doc.data:
        loader.error(default_doc.key_at(["turns"]), "`turns` belongs on a test, not on defaultTest")
    loader.shared_tools = tuple(shared)


def _agent(
    loader: _Loader,
    doc: Document,
    default: Mapping[str, Any],
    default_doc: Document | None,
    base: Path,
    vars_: Mapping[str, Any],
) -> AgentSpec | None:
    """The test's agent settings, or None when it is a plain single-call test."""
    from skilleval.agent.tools import merge_tools, parse_tools
    from skilleval.agent.workspace import parse_environment

    data: dict[str, Any] = doc.data
    own: tuple[Any, ...] = ()
    if "tools" in data:
        own, diags = parse_tools(
            doc,
            ["tools"],
            base_dir=base,
            plugin_dirs=_plugin_folders(loader),
            kinds=loader.registry.tool_kinds(),
        )
        loader.diags.extend(diags)
    environment = None
    if "environment" in data:
        environment, diags = parse_environment(doc, ["environment"], base_dir=base)
        loader.diags.extend(diags)
    elif default_doc is not None and "environment" in default:
        environment, diags = parse_environment(
            default_doc, ["environment"], base_dir=loader.path.parent
        )
        loader.diags.extend(diags)
    turns: list[Turn] = []
    for i, raw in enumerate(data.get("turns") or []):
        entries = [
            _assertion(loader, entry, doc, ["turns", i, "assert", j], base, vars_)
            for j, entry in enumerate(raw.get("assert") or [])
        ]
        turns.append(
            Turn(str(raw["user"]), tuple(e for e in entries if e), doc.at(["turns", i, "user"]))
        )
    tools = merge_tools(loader.shared_tools, own)
    declared = (
        "environment" in data
        or "environment" in default
        or "max_steps" in data
        or "max_steps" in default
    )
    if not (tools or turns or declared):
        return None
    max_steps = int(data.get("max_steps", default.get("max_steps", DEFAULT_MAX_STEPS)))
    return AgentSpec(tools, environment, tuple(turns), max_steps)


def _turn_prompts(
    loader: _Loader, doc: Document, agent: AgentSpec, vars_: Mapping[str, Any]
) -> list[Prompt]:
    """A test with turns has no other prompt; its first turn stands in for routing and ids."""
    if "prompt" in doc.data:
        loader.error(doc.key_at(["prompt"]), "a test has `prompt:` or `turns:`, not both")
    for i, turn in enumerate(agent.turns, start=1):
        _check_template_vars(
            loader, Prompt(f"turn {i}", text=turn.user, where=turn.where), vars_, turn.where
        )
    first = agent.turns[0]
    return [Prompt("prompt", text=first.user, where=first.where)]


# -- end agentic ------------------------------------------------------------------------------


def _with_rubric_prompt(
    loader: _Loader, asserts: list[AssertionEntry], raw: Any, doc: Document, base: Path
) -> list[AssertionEntry]:
    """A test's ``options.rubricPrompt`` applies to its judge assertions that set none."""
    from dataclasses import replace

    try:
        prompt = loader.reader.resolve(raw, base, doc, ["options", "rubricPrompt"])
    except DiagnosticsError as exc:
        loader.absorb(exc)
        return asserts
    return [
        replace(a, options={**a.options, "rubricPrompt": prompt})
        if "rubricPrompt" in a.spec.options_schema and "rubricPrompt" not in a.options
        else a
        for a in asserts
    ]


def _as_default(entry: AssertionEntry) -> AssertionEntry:
    from dataclasses import replace

    return replace(entry, from_default=True)


def _test_prompts(
    loader: _Loader, data: Mapping[str, Any], doc: Document, prompts: list[Prompt]
) -> list[Prompt]:
    if "prompt" in data:
        text = data["prompt"]
        where = doc.at(["prompt"]) if "prompt" in doc.data else doc.at()
        return [Prompt("prompt", text=str(text), where=where)]
    if prompts:
        return prompts
    if "prompts" not in loader.top:
        # Without `prompts:` the test must bring its own; with it, a broken prompts file
        # has already been reported and saying more about every test would only be noise.
        loader.error(
            doc.at(), "test has no prompt: give it `prompt:`, or add a top-level `prompts:` list"
        )
    return []


def _check_template_vars(
    loader: _Loader, prompt: Prompt, vars_: Mapping[str, Any], where: Location
) -> None:
    texts = [prompt.text] if prompt.text is not None else [m[1] for m in prompt.messages]
    for text in texts:
        try:
            used = template.variables(text)
        except template.TemplateProblem as exc:
            w = prompt.where
            loader.error(Location(w.path, w.line + exc.line - 1, w.col), exc.message)
            continue
        missing = sorted(used - set(vars_))
        if missing:
            import difflib

            names = ", ".join(f"'{m}'" for m in missing)
            close = difflib.get_close_matches(missing[0], list(vars_), n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            loader.error(
                where,
                f"prompt '{prompt.label}' uses {names}, which this test's vars do not define{hint}",
            )


def _assign_ids(loader: _Loader, tests: list[TestCase]) -> None:
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
            stem = _slug(_slug_source(test))
            if multi_prompt and test.prompt.label != "prompt":
                stem = f"{stem}[{test.prompt.label}]"
            tid, n = stem, 2
            while tid in seen or tid in explicit:
                tid, n = f"{stem}-{n}", n + 1
        seen[tid] = test.where
        tests[i] = _with_id(test, tid)


def _slug_source(test: TestCase) -> str:
    if test.description:
        return test.description
    if test.prompt.label == "prompt" and test.prompt.text:
        return test.prompt.text
    return " ".join(str(v) for v in test.vars.values()) or "test"


def _slug(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    slug = "-".join(words)[:48].strip("-")
    return slug or "test"


def _with_id(test: TestCase, tid: str) -> TestCase:
    from dataclasses import replace

    return replace(test, id=tid)


# -- assertions ----------------------------------------------------------------------------

_COMMON_KEYS = {"type", "value", "threshold", "weight", "metric", "transform", "config"}


def _assertion(
    loader: _Loader,
    entry: Any,
    doc: Document,
    at: list[str | int],
    base: Path,
    vars_: Mapping[str, Any],
) -> AssertionEntry | None:
    where = doc.at(at)
    if not isinstance(entry, dict) or "type" not in entry:
        loader.error(where, "an assertion needs a `type:`")
        return None
    type_name = str(entry["type"])
    try:
        resolved = loader.registry.resolve(type_name, doc.at([*at, "type"]))
    except PluginError as exc:
        loader.absorb(exc)
        return None
    spec = resolved.spec
    options = {k: v for k, v in entry.items() if k not in _COMMON_KEYS}
    allowed_options = set(spec.options_schema)
    for key in sorted(set(options) - allowed_options):
        loader.error(doc.key_at([*at, key]), f"'{key}' does not apply to '{type_name}'")
    try:
        options = {k: loader.reader.resolve(v, base, doc, [*at, k]) for k, v in options.items()}
    except DiagnosticsError as exc:
        loader.absorb(exc)
        return None
    if not _options_ok(loader, spec, options, doc, at):
        return None
    value = entry.get("value")
    has_value = "value" in entry and value is not None
    if spec.uses_threshold and not has_value and "threshold" in entry:
        value, has_value = entry["threshold"], True
    if spec.value_required and not has_value:
        loader.error(where, f"'{type_name}' needs a `value:`")
        return None
    if spec.value_schema is None and has_value and not spec.uses_threshold:
        loader.error(doc.key_at([*at, "value"]), f"'{type_name}' takes no `value:`")
        return None
    if has_value:
        if spec.name != "python":
            try:
                value = loader.reader.resolve(value, base, doc, [*at, "value"])
            except DiagnosticsError as exc:
                loader.absorb(exc)
                return None
        elif filerefs.is_ref(value):
            try:
                loader.reader.paths(str(value), base, doc.at([*at, "value"]))
            except DiagnosticsError as exc:
                loader.absorb(exc)
                return None
        if not _value_ok(loader, spec, value, doc, [*at, "value"], vars_):
            return None
    transform = _transform(loader, entry.get("transform"), doc, [*at, "transform"])
    return AssertionEntry(
        type=type_name,
        spec=spec,
        negated=resolved.negated,
        value=value if has_value else None,
        where=where,
        base_dir=base,
        threshold=entry.get("threshold"),
        weight=float(entry.get("weight", 1.0)),
        metric=entry.get("metric"),
        transform=transform,
        config=dict(entry.get("config") or {}),
        options=options,
    )


def _options_ok(
    loader: _Loader, spec: Any, options: Mapping[str, Any], doc: Document, at: list[str | int]
) -> bool:
    """Type-specific keys (``reference``, ``require``, ``rubricPrompt`` …) against their schemas."""
    ok = True
    for key, value in options.items():
        schema = spec.options_schema.get(key)
        if not isinstance(schema, Mapping) or not schema:
            continue
        errors = list(validator_for(schema).iter_errors(value))
        if errors:
            loader.error(
                doc.at([*at, key]), f"invalid '{key}' for '{spec.name}': {errors[0].message}"
            )
            ok = False
    return ok


def _value_ok(
    loader: _Loader,
    spec: Any,
    value: Any,
    doc: Document,
    at: list[str | int],
    vars_: Mapping[str, Any],
) -> bool:
    where = doc.at(at)
    if spec.value_schema is not None:
        errors = sorted(
            validator_for(spec.value_schema).iter_errors(value),
            key=lambda e: list(e.absolute_path),
        )
        if errors:
            err = errors[0]
            inner = "".join(f"[{p!r}]" for p in err.absolute_path)
            loader.error(
                doc.at([*at, *err.absolute_path]) if err.absolute_path else where,
                f"invalid value for '{spec.name}'{inner}: {err.message}",
            )
            return False
    if spec.check_value is not None:
        rendered = value
        if _has_template(value):
            try:
                rendered = template.render_value(value, vars_)
            except template.TemplateProblem as exc:
                loader.error(where, exc.message)
                return False
        try:
            problem = spec.check_value(rendered)
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if problem:
            loader.error(where, problem)
            return False
    return True


def _has_template(value: Any) -> bool:
    if isinstance(value, str):
        return template.is_template(value)
    if isinstance(value, list):
        return any(_has_template(v) for v in value)
    if isinstance(value, dict):
        return any(_has_template(v) for v in value.values())
    return False


# Signs that a transform was written in JavaScript, as promptfoo's are: a method call
# (never valid in expr), an arrow, strict equality, JSON.*, a statement.
_JAVASCRIPT = re.compile(r"\.[A-Za-z_]\w*\s*\(|=>|===|!==|\bJSON\.|\bfunction\b|\breturn\b|;\s*$")


def _transform(loader: _Loader, raw: Any, doc: Document, at: list[str | int]) -> Transform | None:
    if raw is None:
        return None
    where = doc.at(at)
    if isinstance(raw, str):
        kind, source = "expr", raw
    else:
        kind, source = next(iter(raw.items()))
    if kind == "jmespath":
        try:
            jmespath.compile(source)
        except JMESPathError as exc:
            loader.error(where, f"transform is not a valid JMESPath query: {exc}")
            return None
        return Transform("jmespath", source, where)
    try:
        expr.compile_expr(source)
    except expr.ExprSyntaxError as exc:
        hint = ""
        if _JAVASCRIPT.search(source):
            hint = (
                "; JavaScript transforms are not supported:"
                " transforms are expr (docs/expr.md) or {jmespath: ...}"
            )
        loader.error(where, f"transform: {exc.message} at column {exc.col}{hint}")
        return None
    return Transform("expr", source, where)


# -- model settings (parsed in suite/model_config.py, by each provider's registration) -------


def _model_spec(loader: _Loader, doc: Document, key: str, override: str | None) -> ModelSpec:
    raw: Any = override if override is not None else doc.data.get(key)
    from_doc = key in doc.data and override is None
    spec, diags = parse_model(
        raw,
        key=key,
        where=doc.at([key]) if from_doc else Location("command line"),
        doc=doc if from_doc else None,
        manager=loader.registry,
        base_dir=loader.path.parent,
        reader=loader.reader,
    )
    loader.diags.extend(diags)
    if spec is not None:
        return spec
    # A placeholder keeps loading going so that every problem is reported; the diagnostics
    # above make the load fail before anything could run it.
    placeholder = loader.registry.provider("echo") or loader.registry.providers()[0]
    return ModelSpec(placeholder, label="invalid")
