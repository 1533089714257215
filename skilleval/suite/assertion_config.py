"""One assertion of a test: its type resolved, its options and value read and checked.

Everything that can be known before a model answers is checked here: the type exists, the
keys apply to it, ``file://`` values are read, the value fits the type's schema and its own
check (a regex compiles …), and every template in it compiles and reads only the test's vars.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from skilleval.api import AssertionType
from skilleval.errors import Diagnostic, DiagnosticsError, Location, PluginError, TemplateProblem
from skilleval.plugins.registry import UNSUPPORTED
from skilleval.promptfoo.config import UNSUPPORTED_KEYS, is_promptfoo, reads_as_promptfoo
from skilleval.promptfoo.values import as_promptfoo_reads, weightless
from skilleval.suite import template
from skilleval.suite.context import Loader
from skilleval.suite.defaults import written
from skilleval.suite.model import PARSED_REPLY, AssertionEntry
from skilleval.suite.schema import is_valid, validator_for
from skilleval.suite.transforms import JS_SUFFIXES, compile_transform, javascript_file_problem
from skilleval.suite.yamlio import Document, yaml_data
from skilleval.util import fileref

CODE_TYPES = frozenset({"python", "javascript"})
"""Types whose ``file://`` value names code to run, not a value to read."""
COMMON_KEYS = frozenset(
    {"type", "value", "threshold", "weight", "metric", "transform", "config", "provider"}
)
"""The keys every assertion may have; any other key is an option of its type."""


def compile_assertion(
    loader: Loader,
    entry: Any,
    doc: Document,
    at: list[str | int],
    base: Path,
    vars_: Mapping[str, Any] | None,
    *,
    from_default: bool = False,
) -> AssertionEntry | None:
    """The assertion written at ``at`` in ``doc``, or None after recording why it is invalid.

    ``vars_`` are the test's vars, which templates in the value may read; None when they
    could not be read (templates are then checked without them). ``from_default`` marks an
    assertion of ``defaultTest``.
    """
    where = doc.at(at)
    if not isinstance(entry, dict) or "type" not in entry:
        loader.error(where, "an assertion needs a `type:`")
        return None
    type_name = str(entry["type"])
    try:
        resolved = loader.registry.resolve(type_name, doc.at([*at, "type"]))
    except PluginError as exc:
        base_name = type_name.removeprefix("not-")
        if not loader.plugins_incomplete or base_name in UNSUPPORTED:
            loader.absorb(exc)
        # Otherwise the type may come from the plugin folder that failed to load.
        return None
    spec = resolved.spec
    if "provider" in entry:
        if spec.tier == "model":
            # promptfoo's per-assertion grader: it becomes the suite's judge (suite/judging.py).
            loader.graders.append((entry["provider"], doc.at([*at, "provider"]), base))
        else:
            loader.error(
                doc.key_at([*at, "provider"]),
                f"'provider' names a grader, and '{type_name}' is checked without a model:"
                " remove it",
            )
    options = {k: v for k, v in entry.items() if k not in COMMON_KEYS}
    allowed_options = set(spec.options_schema)
    for key in sorted(set(options) - allowed_options):
        message = f"'{key}' does not apply to '{type_name}'"
        if is_promptfoo(loader.top) and key not in UNSUPPORTED_KEYS:
            # promptfoo ignores a key it does not read: a warning (unless the schema gave
            # one), and the key is left out.
            where = doc.key_at([*at, key])
            if not any(n.startswith(f"{where}: warning: ") for n in loader.foreign_notes):
                message += ": promptfoo ignores it, and so does skilleval"
                loader.foreign_notes.append(str(Diagnostic(where, message, severity="warning")))
            del options[key]
            continue
        loader.error(doc.key_at([*at, key]), message)
    # Read as assertions and as a transform below, not as option values.
    members = options.pop("assert", None) if "assert" in allowed_options else None
    raw_context = options.pop("contextTransform", None)
    try:
        options = {k: loader.reader.resolve(v, base, doc, [*at, k]) for k, v in options.items()}
    except DiagnosticsError as exc:
        loader.absorb(exc)
        return None
    if not options_ok(loader, spec, options, doc, at):
        return None
    value = entry.get("value")
    if "value" in entry and reads_as_promptfoo(loader.top):
        value = as_promptfoo_reads(spec.name, value, yaml_data)
    has_value = "value" in entry and value is not None
    if spec.uses_threshold and not has_value and "threshold" in entry:
        value, has_value = entry["threshold"], True
    rubric_prompt_only = _rubric_prompt_only(loader, spec, entry, doc) and not has_value
    if spec.value_required and rubric_prompt_only:
        value, has_value = "", True  # promptfoo renders its rubricPrompt with an empty rubric
    if spec.value_required and not has_value:
        loader.error(where, f"'{type_name}' needs a `value:`")
        return None
    if spec.value_schema is None and has_value and not spec.uses_threshold:
        loader.error(doc.key_at([*at, "value"]), f"'{type_name}' takes no `value:`")
        return None
    if has_value:
        if spec.name not in CODE_TYPES:
            try:
                value = loader.reader.resolve(value, base, doc, [*at, "value"])
            except DiagnosticsError as exc:
                loader.absorb(exc)
                return None
        elif fileref.is_ref(value):
            try:
                found = loader.reader.paths(str(value), base, doc.at([*at, "value"]))
            except DiagnosticsError as exc:
                loader.absorb(exc)
                return None
            if spec.name == "javascript" and fileref.parse(str(value)).path.endswith(JS_SUFFIXES):
                problem = javascript_file_problem(found[0], doc.at([*at, "value"]))
                if problem is not None:
                    loader.error(*problem)
                    return None
        if not rubric_prompt_only and not value_ok(loader, spec, value, doc, [*at, "value"], vars_):
            return None
    transform = compile_transform(loader, entry.get("transform"), doc, [*at, "transform"], base)
    context_transform = compile_transform(loader, raw_context, doc, [*at, "contextTransform"], base)
    children: tuple[AssertionEntry, ...] = ()
    if members is not None:
        compiled = _members(loader, members, doc, at, base, vars_, from_default=from_default)
        if compiled is None:
            return None
        children = compiled
    threshold = entry.get("threshold")
    if reads_as_promptfoo(loader.top):
        if entry.get("weight") == 0:
            spec = weightless(spec, resolved.negated)
        if threshold is None and spec.name == "llm-rubric":
            threshold = 0.0  # promptfoo goes by the judge's pass unless a threshold is set
    return AssertionEntry(
        type=type_name,
        spec=spec,
        negated=resolved.negated,
        value=value if has_value else None,
        where=where,
        base_dir=base,
        threshold=threshold,
        metric=entry.get("metric"),
        transform=transform,
        config=dict(entry.get("config") or {}),
        options=options,
        from_default=from_default,
        context_transform=context_transform,
        children=children,
        value_where=doc.at([*at, "value"]) if "value" in entry else None,
        **written(entry, {"weight": float}),
    )


def _members(
    loader: Loader,
    members: Any,
    doc: Document,
    at: list[str | int],
    base: Path,
    vars_: Mapping[str, Any] | None,
    *,
    from_default: bool,
) -> tuple[AssertionEntry, ...] | None:
    """The assertions of an ``assert-set``, each compiled as a test's are; None when one is
    invalid (the reasons are recorded). A set holds neither a set nor a type that compares
    outputs across prompts."""
    if not isinstance(members, list) or not members:
        return None  # the options schema has said why
    out = []
    ok = True
    for i, member in enumerate(members):
        compiled = compile_assertion(
            loader, member, doc, [*at, "assert", i], base, vars_, from_default=from_default
        )
        if compiled is None:
            ok = False
            continue
        if compiled.children or compiled.spec.name == "assert-set":
            loader.error(compiled.where, "an assert-set cannot hold another assert-set")
            ok = False
        elif compiled.spec.compares:
            loader.error(
                compiled.where,
                f"'{compiled.type}' compares the outputs of several prompts; put it on the "
                "test, not in an assert-set",
            )
            ok = False
        out.append(compiled)
    return tuple(out) if ok else None


def options_ok(
    loader: Loader,
    spec: AssertionType,
    options: Mapping[str, Any],
    doc: Document,
    at: list[str | int],
) -> bool:
    """Type-specific keys (``reference``, ``require``, ``rubricPrompt`` …) against their schemas."""
    ok = True
    for key, value in options.items():
        schema = spec.options_schema.get(key)
        if not isinstance(schema, Mapping) or not schema or is_valid(schema, value):
            continue
        errors = list(validator_for(schema).iter_errors(value))
        if errors:
            loader.error(
                doc.at([*at, key]), f"invalid '{key}' for '{spec.name}': {errors[0].message}"
            )
            ok = False
    return ok


def value_ok(
    loader: Loader,
    spec: AssertionType,
    value: Any,
    doc: Document,
    at: list[str | int],
    vars_: Mapping[str, Any] | None,
) -> bool:
    """Whether ``value`` fits the type: its schema, its templates, then the type's own check."""
    where = doc.at(at)
    if spec.value_schema is not None and not is_valid(spec.value_schema, value):
        # The compiled check is fast; jsonschema explains what it found wrong.
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
    return value_vars_ok(loader, spec, value, where, vars_)


def value_vars_ok(
    loader: Loader,
    spec: AssertionType,
    value: Any,
    where: Location,
    vars_: Mapping[str, Any] | None,
) -> bool:
    """The checks of ``value`` that depend on a test's vars: its templates read only variables
    the test defines, and the type's own check passes on the rendered value.

    The rest of :func:`value_ok` is the same for every test, so an assertion of
    ``defaultTest`` compiled once is checked against each further test with this alone.
    """
    templated = template.is_template(value)
    if templated and not _templates_ok(loader, spec, value, where, vars_):
        return False
    if spec.check_value is not None and (vars_ is not None or not templated):
        rendered = value
        if templated:
            try:
                rendered = template.render_value(value, vars_ or {})
            except TemplateProblem as exc:
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


def _templates_ok(
    loader: Loader,
    spec: AssertionType,
    value: Any,
    where: Location,
    vars_: Mapping[str, Any] | None,
) -> bool:
    """Every template in ``value`` compiles and reads only variables the test defines."""
    used: set[str] = set()
    for text in _strings(value):
        try:
            used |= template.variables(text)
        except TemplateProblem as exc:
            loader.error(where, exc.message)
            return False
    if vars_ is None:
        return True
    missing = sorted(used - set(vars_))
    if not missing:
        return True
    names = ", ".join(f"'{m}'" for m in missing)
    close = difflib.get_close_matches(missing[0], list(vars_), n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    loader.error(
        where, f"the '{spec.name}' value uses {names}, which this test's vars do not define{hint}"
    )
    return False


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


def _rubric_prompt_only(
    loader: Loader, spec: AssertionType, entry: Mapping[str, Any], doc: Document
) -> bool:
    """A promptfoo config's judge assertion with no value where a ``rubricPrompt`` is set (on
    it, its test or ``defaultTest``): promptfoo grades with that prompt alone."""
    if not reads_as_promptfoo(loader.top) or "rubricPrompt" not in spec.options_schema:
        return False
    holders = [entry, doc.data.get("options") if isinstance(doc.data, Mapping) else None]
    default = loader.top.get("defaultTest")
    holders.append(default.get("options") if isinstance(default, Mapping) else None)
    return any(isinstance(h, Mapping) and h.get("rubricPrompt") for h in holders)


def with_rubric_prompt(
    loader: Loader, asserts: list[AssertionEntry], raw: Any, doc: Document, base: Path
) -> list[AssertionEntry]:
    """A test's ``options.rubricPrompt`` applies to its judge assertions that set none."""
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


def with_factuality(asserts: list[AssertionEntry], scores: Any) -> list[AssertionEntry]:
    """A test's ``options.factuality`` (promptfoo's place for it) applies to its factuality
    assertions that set no ``options.factuality`` of their own."""
    return [
        replace(a, options={**a.options, "options": {"factuality": dict(scores)}})
        if "options" in a.spec.options_schema and "options" not in a.options
        else a
        for a in asserts
    ]


def with_parsed_reply(asserts: Sequence[AssertionEntry]) -> tuple[AssertionEntry, ...]:
    """The assertions of a test on a ``json_schema`` prompt of a promptfoo config, or run by
    an application that replies with data: its JavaScript checks see the reply parsed, as
    promptfoo hands it to them."""
    return tuple(
        replace(a, options={**a.options, PARSED_REPLY: True}) if a.type == "javascript" else a
        for a in asserts
    )
