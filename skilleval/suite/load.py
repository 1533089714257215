"""Turn a suite file into a :class:`~skilleval.suite.model.Suite`, or every reason it can't be.

Loading is strict and never needs a model: schema violations, unknown assertion types,
values that cannot work (a regex that does not compile …), duplicate ids and missing files
are all collected and reported together, in file order, each at its ``file:line:col``. A
part the schema finds wrong is set aside (:mod:`skilleval.suite.recover`) and the rest is
still checked, so one ``validate`` reports every mistake.

The stages live in their own modules: prompts (:mod:`~skilleval.suite.prompts`), where tests
come from (:mod:`~skilleval.suite.sources`), vars (:mod:`~skilleval.suite.vars`), assertions
(:mod:`~skilleval.suite.assertion_config`), transforms (:mod:`~skilleval.suite.transforms`),
ids (:mod:`~skilleval.suite.ids`), and the suite-wide settings
(:mod:`~skilleval.suite.settings`). Paths written in a file are relative to that file's
folder; paths given on the command line, to the current directory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from skilleval.errors import Diagnostic, Location, PluginError, SuiteError
from skilleval.plugins.registry import Registry, default_registry
from skilleval.suite import agentic
from skilleval.suite import files as filerefs
from skilleval.suite.agent_config import AgentConfig
from skilleval.suite.assertion_config import compile_assertion as _assertion
from skilleval.suite.assertion_config import with_factuality, with_rubric_prompt
from skilleval.suite.columns import only_their_prompts, read_model, read_models
from skilleval.suite.context import Loader as _Loader
from skilleval.suite.context import Overrides
from skilleval.suite.ids import assign_ids
from skilleval.suite.model import (
    AssertionEntry,
    Prompt,
    Suite,
    TestCase,
)
from skilleval.suite.promptfoo_import import differences, is_promptfoo
from skilleval.suite.prompts import check_template_vars as _check_template_vars
from skilleval.suite.prompts import test_prompts, top_prompts
from skilleval.suite.recover import check_schema
from skilleval.suite.settings import assemble
from skilleval.suite.sources import raw_tests
from skilleval.suite.suite_schema import suite_schema
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
    loader.diags.extend(doc.problems)
    loader.registry = _registry(loader, doc)
    loader.schema = suite_schema(loader.registry)
    checked = check_schema(doc, loader.schema, loader.registry)
    loader.diags.extend(checked.problems)
    loader.top = doc.data
    loader.skipped = checked.skipped
    suite = _compile(loader, replace(doc, data=checked.usable))
    if loader.diags:
        raise SuiteError(loader.diags)
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
    raws = raw_tests(loader, doc)
    if not raws and not loader.diags:
        loader.error(
            doc.key_at(["tests"]) if "tests" in data else doc.at(),
            "suite has no tests" if "tests" in data else "suite has no `tests:`",
        )
    tests: list[TestCase] = []
    for raw in raws:
        tests.extend(_tests(loader, raw, default, default_doc, default_vars, prompts))
    assign_ids(loader, tests)
    models = read_models(loader, doc)
    tests = only_their_prompts(loader, models, tests)
    judge = None
    if "judge" in data or loader.overrides.judge is not None:
        judge = read_model(loader, doc, "judge", loader.overrides.judge)
    suite = assemble(loader, doc, tests, models.model, judge)
    return replace(
        suite,
        models=models.columns,
        column_prompts=models.prompts if models.columns else (),
        notes=tuple(_promptfoo_notes(doc)) + tuple(models.notes),
    )


def _tests(
    loader: _Loader,
    raw: filerefs.RawTest,
    default: Mapping[str, Any],
    default_doc: Document | None,
    default_vars: Mapping[str, Any] | None,
    prompts: list[Prompt],
) -> list[TestCase]:
    """One test as written: one TestCase per prompt it runs (none when it is invalid)."""
    doc = raw.doc
    if not isinstance(doc.data, dict):
        loader.error(doc.at(), "a test must be a mapping")
        return []
    data = merge_default(doc.data, default)
    base = raw.base_dir
    where = doc.at()
    own = resolve_vars(loader, doc.data.get("vars"), doc, base)
    vars_ = None if own is None or default_vars is None else {**default_vars, **own}
    options = data.get("options") or {}
    asserts: list[AssertionEntry] = []
    if default_doc is not None and not options.get("disableDefaultAsserts"):
        for i, entry in enumerate(default.get("assert") or []):
            if ("defaultTest", "assert", i) in loader.skipped:
                continue
            # Resolved once per test, so that their templates see this test's vars.
            compiled = _assertion(
                loader, entry, default_doc, ["assert", i], loader.base, vars_, from_default=True
            )
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
    out = []
    for prompt in prompts_run:
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


def _agent(
    loader: _Loader,
    doc: Document,
    default_doc: Document | None,
    base: Path,
    vars_: Mapping[str, Any],
) -> AgentConfig | None:
    def compile_assertion(entry: Any, at: Sequence[str | int]) -> AssertionEntry | None:
        return _assertion(loader, entry, doc, list(at), base, vars_)

    agent, diags = agentic.agent_config(
        doc, default_doc, base, _agent_sources(loader), compile_assertion
    )
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


def _promptfoo_notes(doc: Document) -> list[str]:
    """For a config written for promptfoo, every difference in meaning, as a warning."""
    if not is_promptfoo(doc.data):
        return []
    return [
        str(Diagnostic(d.where, d.message, severity="warning"))
        for d in differences(doc)
        if d.carried  # what is not carried over at all is an error of its own
    ]
