"""Turn a suite file into a :class:`~skilleval.suite.model.Suite`, or every reason it can't be.

Loading is strict and never needs a model: schema violations, unknown assertion types,
values that cannot work (a regex that does not compile …), duplicate ids and missing files
are all collected and reported together, in file order, each at its ``file:line:col``. A
part the schema finds wrong is set aside (:mod:`skilleval.suite.recover`) and the rest is
still checked, so one ``validate`` reports every mistake.

The stages live in their own modules: ``$ref`` to ``assertionTemplates``, followed before
the schema check (:mod:`~skilleval.suite.refs`), prompts (:mod:`~skilleval.suite.prompts`),
where tests come from, scenarios included (:mod:`~skilleval.suite.sources`), vars and their
expansion into one test per combination (:mod:`~skilleval.suite.vars`), assertions
(:mod:`~skilleval.suite.assertion_config`), transforms (:mod:`~skilleval.suite.transforms`),
ids (:mod:`~skilleval.suite.ids`), the judge, or promptfoo's graders as one
(:mod:`~skilleval.suite.judging`), derived metrics (:mod:`~skilleval.suite.derived`), and the
suite-wide settings (:mod:`~skilleval.suite.settings`). Paths written in a file are relative to that file's
folder; paths given on the command line, to the current directory.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from skilleval.errors import Diagnostic, Location, PluginError, SuiteError
from skilleval.plugins.registry import Registry, default_registry
from skilleval.promptfoo.config import is_promptfoo, reads_as_promptfoo
from skilleval.promptfoo.differences import warnings
from skilleval.promptfoo.rendering import NunjucksVars
from skilleval.suite import agentic, formats, template
from skilleval.suite import files as filerefs
from skilleval.suite import vars as vars_mod
from skilleval.suite.agent_config import AgentConfig
from skilleval.suite.assertion_config import compile_assertion as _assertion
from skilleval.suite.assertion_config import (
    value_vars_ok,
    with_factuality,
    with_parsed_reply,
    with_rubric_prompt,
)
from skilleval.suite.code_hooks import called_prompt, filter_names, read_filters
from skilleval.suite.columns import only_their_prompts, read_models
from skilleval.suite.context import Loader as _Loader
from skilleval.suite.context import Overrides
from skilleval.suite.derived import derived_metrics
from skilleval.suite.ids import assign_ids
from skilleval.suite.judging import read_judge, self_graded_note
from skilleval.suite.model import (
    AssertionEntry,
    Prompt,
    Suite,
    TestCase,
    with_provider_tools,
)
from skilleval.suite.prompts import check_template_vars as _check_template_vars
from skilleval.suite.prompts import test_prompts, top_prompts, with_affixes
from skilleval.suite.recover import check_schema
from skilleval.suite.refs import dereference
from skilleval.suite.settings import assemble
from skilleval.suite.sources import raw_tests, scenario_tests
from skilleval.suite.suite_schema import suite_schema
from skilleval.suite.template import is_template
from skilleval.suite.transforms import compile_transform
from skilleval.suite.vars import merge_default, resolve_vars
from skilleval.suite.yamlio import Document, load_yaml

__all__ = ["Overrides", "load_suite"]


def load_suite(path: Path, overrides: Overrides | None = None) -> tuple[Suite, Registry]:
    """Load, validate and resolve a suite file.

    Raises:
        SuiteError: with every problem found, in file order (a plugin folder that cannot be
            loaded is one of them).
    """
    enabled = gc.isenabled()
    # Loading builds many small objects and no cycles; collecting while it does costs a
    # third of the time of a large suite's load, and finds nothing.
    gc.disable()
    try:
        return _load(path, overrides)
    finally:
        if enabled:
            gc.enable()


def _load(path: Path, overrides: Overrides | None) -> tuple[Suite, Registry]:
    foreign = formats.read_folder(path) if path.is_dir() else None
    doc = foreign.doc if foreign is not None else load_yaml(path, strict=False)
    if foreign is None:
        foreign = formats.read_file(path, doc)
        doc = foreign.doc if foreign is not None else doc
    loader = _Loader(foreign.anchor if foreign is not None else path, overrides or Overrides())
    loader.reader.files.add(path.resolve())
    loader.foreign_notes = [] if foreign is None else [str(n) for n in foreign.notes]
    for read in foreign.files if foreign is not None else ():
        loader.reader.files.add(read.resolve())
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
    loader.diags.extend(doc.problems)
    ref_problems, unresolved = dereference(doc)
    loader.diags.extend(ref_problems)
    loader.registry = _registry(loader, doc)
    loader.schema = suite_schema(loader.registry)
    checked = check_schema(doc, loader.schema, loader.registry, tolerant=is_promptfoo(doc.data))
    # An unresolved $ref is reported already; the schema's view of it adds nothing.
    noise = {str(doc.at(p)) for p in unresolved} | {
        str(doc.key_at([*p, "$ref"])) for p in unresolved
    }
    loader.diags.extend(d for d in checked.problems if str(d.where) not in noise)
    loader.top = doc.data
    loader.skipped = checked.skipped
    loader.foreign_notes.extend(str(d) for d in checked.tolerated)
    loader.filters = read_filters(loader, doc)
    with template.known_filters(filter_names(doc)):
        suite = _compile(loader, replace(doc, data=checked.usable))
    if loader.diags:
        raise SuiteError(loader.diags)
    if path.is_dir():
        # A skill folder stands for its suite: runs are named after it and resumed from it.
        suite = replace(suite, path=path)
    return suite, loader.registry


def _registry(loader: _Loader, doc: Document) -> Registry:
    """The plugin manager: built-ins, installed plugins, then each plugin folder that loads."""
    folders: list[tuple[Path, Location | None]] = []
    listed = doc.data.get("plugins") or []
    for i, rel in enumerate(listed if isinstance(listed, list) else []):
        if isinstance(rel, str) and rel:  # anything else is a schema error, reported next
            folders.append((loader.base / rel, doc.at(["plugins", i])))
    folders.extend((p, None) for p in loader.overrides.plugin_dirs)
    run_code = loader.overrides.plugin_code
    registry = default_registry(
        entry_points=loader.overrides.entry_points and run_code, run_code=run_code
    )
    for folder, where in folders:
        try:
            registry.load_folder(folder, where=where, run_code=run_code)
        except PluginError as exc:
            # The other files are still checked; types this folder would have added are
            # not reported as unknown (see compile_assertion).
            loader.absorb(exc)
            loader.plugins_incomplete = True
            continue
        loader.reader.files.add(folder.resolve())
    return registry


def _compile(loader: _Loader, doc: Document) -> Suite:
    """Compile the usable part of the suite ``doc`` (schema errors are reported already)."""
    data: dict[str, Any] = doc.data
    prompts = top_prompts(loader, doc)
    default = data.get("defaultTest") or {}
    default_doc = doc.sub(["defaultTest"]) if "defaultTest" in data else None
    if default_doc is not None:
        default_doc = replace(default_doc, data=default)
    _shared_tools(loader, doc, default_doc)
    default_vars: dict[str, Any] | None = {}
    if ("defaultTest", "vars") in loader.skipped:
        default_vars = None
    elif default_doc is not None and "vars" in default:
        default_vars = resolve_vars(loader, default["vars"], default_doc, loader.base)
    if isinstance(default.get("options"), dict) and "provider" in default["options"]:
        where = doc.at(["defaultTest", "options", "provider"])
        loader.graders.append((default["options"]["provider"], where, loader.base))
    _check_templates(loader, doc)
    raws = raw_tests(loader, doc) + scenario_tests(loader, doc)
    if not raws and reads_as_promptfoo(data) and "tests" not in data and "scenarios" not in data:
        # promptfoo runs a config without `tests:` once, with no vars.
        raws = [filerefs.RawTest(replace(doc, data={}), loader.base)]
    if not raws and not loader.diags:
        loader.error(
            doc.key_at(["tests"]) if "tests" in data else doc.at(),
            "suite has no tests"
            if "tests" in data or "scenarios" in data
            else "suite has no `tests:`",
        )
    tests: list[TestCase] = []
    for raw in raws:
        tests.extend(_tests(loader, raw, default, default_doc, default_vars, prompts))
    assign_ids(loader, tests)
    models = read_models(loader, doc)
    tests = only_their_prompts(loader, models, tests)
    if not models.columns:  # several: each column's own, see Suite.columns
        tests = [with_provider_tools(t, models.model.tools) for t in tests]
    if reads_as_promptfoo(data) and all(m.provider.capabilities.data_replies for m in models.all()):
        # promptfoo hands checks an application's data reply as data, not text.
        tests = [replace(t, asserts=with_parsed_reply(t.asserts)) for t in tests]
    judge = read_judge(loader, doc)
    named = {a.metric for t in tests for a in t.every_assert if a.metric}
    derived = derived_metrics(loader, doc, named)
    suite = assemble(loader, doc, tests, models.model, judge)
    return replace(
        suite,
        models=models.columns,
        column_prompts=models.prompts if models.columns else (),
        notes=tuple(dict.fromkeys(loader.foreign_notes))
        + tuple(warnings(doc))
        + tuple(self_graded_note(doc, suite))
        + tuple(models.notes),
        derived_metrics=derived,
    )


def _check_templates(loader: _Loader, doc: Document) -> None:
    """Each of ``assertionTemplates`` checked once, used or not (its uses are copies)."""
    templates = doc.data.get("assertionTemplates")
    for name, entry in (templates or {}).items() if isinstance(templates, dict) else ():
        if ("assertionTemplates", name) not in loader.skipped:
            _assertion(loader, entry, doc, ["assertionTemplates", name], loader.base, None)


def _tests(
    loader: _Loader,
    raw: filerefs.RawTest,
    default: Mapping[str, Any],
    default_doc: Document | None,
    default_vars: Mapping[str, Any] | None,
    prompts: list[Prompt],
) -> list[TestCase]:
    """One test as written: one TestCase per prompt it runs and per combination of its vars.

    None when it is invalid. A var listing several strings (or a ``file://`` glob) stands for
    each in turn, as in promptfoo, unless ``options.disableVarExpansion`` is set.
    """
    doc = raw.doc
    if not isinstance(doc.data, dict):
        loader.error(doc.at(), "a test must be a mapping")
        return []
    data = merge_default(doc.data, default)
    own = resolve_vars(loader, doc.data.get("vars"), doc, raw.base_dir)
    vars_ = None if own is None or default_vars is None else {**default_vars, **own}
    options = data.get("options") or {}
    own_options = doc.data.get("options") or {}
    if isinstance(own_options, dict) and "provider" in own_options:
        loader.graders.append(
            (own_options["provider"], doc.at(["options", "provider"]), raw.base_dir)
        )
    if vars_ is None:
        combos: list[dict[str, Any] | None] = [None]
    elif options.get("disableVarExpansion"):
        combos = [vars_]
    else:
        globs = vars_mod.globbed(default.get("vars")) - set(own or {})
        globs |= vars_mod.globbed(doc.data.get("vars"))
        # Counted before anything is built: the product can be far past what fits in memory.
        count = vars_mod.combinations(vars_, globs)
        made = count * max(1, len(prompts))
        if count > 1:
            loader.expanded += made
        where = doc.at(["vars"]) if "vars" in doc.data else doc.at()
        what = f"these vars expand to {count:,} combinations × {len(prompts)} prompt(s)"
        if made > vars_mod.MAX_EXPANDED:
            loader.error(where, vars_mod.too_many(what, made))
            return []
        if loader.expanded > vars_mod.MAX_EXPANDED_TOTAL:
            what = f"{what}, and the suite's list vars so far"
            limit = vars_mod.MAX_EXPANDED_TOTAL
            loader.error(where, vars_mod.too_many(what, loader.expanded, limit))
            return []
        combos = list(vars_mod.expand(vars_, globs))
    out: list[TestCase] = []
    nunjucks = reads_as_promptfoo(loader.top)
    for n, combo in enumerate(combos):
        suffix = f"-{n + 1}" if len(combos) > 1 else ""
        if nunjucks and combo is not None:
            combo = NunjucksVars(combo)  # printed into prompts as promptfoo prints
            combo.filters = loader.filters
        out.extend(_variant(loader, raw, data, default_doc, default, combo, prompts, suffix))
    return out


def _variant(
    loader: _Loader,
    raw: filerefs.RawTest,
    data: Mapping[str, Any],
    default_doc: Document | None,
    default: Mapping[str, Any],
    vars_: Mapping[str, Any] | None,
    prompts: list[Prompt],
    id_suffix: str,
) -> list[TestCase]:
    """The test cases of one set of vars (None: the vars could not be read; only check)."""
    doc, base, where = raw.doc, raw.base_dir, raw.doc.at()
    options = data.get("options") or {}
    asserts: list[AssertionEntry] = []
    if default_doc is not None and not options.get("disableDefaultAsserts"):
        for i, entry in enumerate(default.get("assert") or []):
            if ("defaultTest", "assert", i) in loader.skipped:
                continue
            compiled = loader.default_asserts.get(i)
            if compiled is None:
                compiled = _default_assertion(loader, entry, default_doc, i, vars_)
            if compiled:
                asserts.append(compiled)
    for i, entry in enumerate(data.get("assert") or []):
        if (*doc.base, "assert", i) in loader.skipped:
            continue
        compiled = _assertion(loader, entry, doc, ["assert", i], base, vars_)
        if compiled:
            asserts.append(compiled)
    transform = compile_transform(
        loader, options.get("transform"), doc, ["options", "transform"], base
    )
    if options.get("rubricPrompt") is not None:
        asserts = with_rubric_prompt(loader, asserts, options["rubricPrompt"], doc, base)
    if options.get("factuality") is not None:
        asserts = with_factuality(asserts, options["factuality"])
    if vars_ is None:
        return []  # the vars could not be read: what needs them cannot be checked
    agent = _agent(loader, doc, default_doc, base, vars_)
    if agent is not None and agent.turns:
        prompts_run = _turn_prompts(loader, doc, agent, vars_)
    else:
        prompts_run = test_prompts(loader, data, doc, prompts)
        prompts_run = with_affixes(loader, prompts_run, options, doc)
    written_id = str(data.get("id", ""))
    out = []
    for prompt in prompts_run:
        if prompt.function is not None:
            called = called_prompt(loader, prompt, vars_, where)
            if called is None:
                continue
            prompt = called
        if agent is None or not agent.turns:
            _check_template_vars(loader, prompt, vars_, where)
        out.append(
            TestCase(
                id=written_id + id_suffix if written_id else "",
                description=str(data.get("description", "")),
                prompt=prompt,
                vars=vars_,
                asserts=with_parsed_reply(asserts) if prompt.parsed_reply else tuple(asserts),
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
                split=data.get("split"),
            )
        )
    return out


def _default_assertion(
    loader: _Loader,
    entry: Any,
    default_doc: Document,
    i: int,
    vars_: Mapping[str, Any] | None,
) -> AssertionEntry | None:
    """``defaultTest``'s assertion ``i`` for a test with ``vars_``; None when it is invalid.

    Without templates it is the same for every test, so it is compiled once. With templates,
    the first test compiles it; once that is clean, every further test checks only what
    depends on its vars: the templates' variables and the type's check of the rendered
    value. What comes out is the same: the assertion keeps its templates, rendered per test
    at run time. An assert-set (its members see the vars) and an assertion naming a grader
    are compiled per test, as before.
    """
    at: list[str | int] = ["assert", i]
    templated = loader.default_templated.get(i)
    if templated is not None:
        if templated.value is not None and not value_vars_ok(
            loader, templated.spec, templated.value, default_doc.at([*at, "value"]), vars_
        ):
            return None
        return templated
    before = len(loader.diags)
    compiled = _assertion(loader, entry, default_doc, at, loader.base, vars_, from_default=True)
    if compiled is None or len(loader.diags) != before:
        return compiled
    if not is_template(entry):
        loader.default_asserts[i] = compiled
    elif not compiled.children and "provider" not in entry:
        loader.default_templated[i] = compiled
    return compiled


# -- agentic tests: read by suite/agentic.py (docs/agentic.md) ------------------------------


def _agent_sources(loader: _Loader) -> agentic.AgentSources:
    folders = [loader.path.parent / rel for rel in loader.top.get("plugins") or []]
    return agentic.AgentSources(
        kinds=loader.registry.tool_kinds(),
        plugin_dirs=folders + list(loader.overrides.plugin_dirs),
        suite_dir=loader.path.parent,
        shared_tools=loader.shared_tools,
    )


def _shared_tools(loader: _Loader, doc: Document, default_doc: Document | None) -> None:
    tools, diags = agentic.shared_tools(doc, default_doc, _agent_sources(loader))
    loader.diags.extend(diags)
    loader.shared_tools = tools
    loader.agent_sources = _agent_sources(loader)  # the same for every test


def _agent(
    loader: _Loader,
    doc: Document,
    default_doc: Document | None,
    base: Path,
    vars_: Mapping[str, Any],
) -> AgentConfig | None:
    def compile_assertion(entry: Any, at: Sequence[str | int]) -> AssertionEntry | None:
        return _assertion(loader, entry, doc, list(at), base, vars_)

    sources = loader.agent_sources or _agent_sources(loader)
    agent, diags = agentic.agent_config(doc, default_doc, base, sources, compile_assertion)
    loader.diags.extend(diags)
    return agent


def _turn_prompts(
    loader: _Loader, doc: Document, agent: AgentConfig, vars_: Mapping[str, Any]
) -> list[Prompt]:
    prompt, diags = agentic.turn_prompt(doc, agent)
    loader.diags.extend(diags)
    for turn in agentic.turn_templates(agent):
        _check_template_vars(loader, turn, vars_, turn.where)
    return [prompt]
