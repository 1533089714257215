"""Which models a suite runs: ``model:``, or several side by side.

A suite runs one model (``model:``), or several as the columns of one run: skilleval's
``models:`` list takes what ``model:`` takes; promptfoo's ``providers:`` (or ``targets:``) takes
provider ids, read by :mod:`skilleval.promptfoo.provider_ids`. ``--model`` on the command line
replaces all of them with one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from skilleval.errors import Diagnostic, Location
from skilleval.promptfoo.config import PROVIDER_LISTS
from skilleval.promptfoo.provider_ids import ENTRY_KEYS, normalized, translate, with_config_env
from skilleval.promptfoo.provider_tools import TOOL_KEYS, declared_tools
from skilleval.suite.context import Loader
from skilleval.suite.model import TestCase
from skilleval.suite.model_config import ModelSpec, parse_model
from skilleval.suite.yamlio import Document

# What a promptfoo provider's `config:` may hold that skilleval reads; the rest is noted.
_READ_CONFIG = frozenset({"apiBaseUrl", "apiHost", "baseUrl", "apiKeyEnvar"})


@dataclass
class Models:
    """The suite's models: the first, every column, and what was read differently."""

    model: ModelSpec
    columns: tuple[ModelSpec, ...] = ()
    notes: list[str] = field(default_factory=list)
    """Warnings, each ``file:line:col: warning: …``."""
    prompts: tuple[tuple[str, ...], ...] = ()
    """Per model (in column order), the prompt labels it runs; empty: every prompt."""
    prompts_at: tuple[Location, ...] = ()

    def all(self) -> tuple[ModelSpec, ...]:
        """Every model the suite runs: its columns, or its one model."""
        return self.columns or (self.model,)


def read_models(loader: Loader, doc: Document) -> Models:
    """Read ``model:``, ``models:`` or ``providers:``/``targets:``; report each problem."""
    data: Mapping[str, Any] = doc.data
    given = [k for k in ("model", "models", *PROVIDER_LISTS) if k in data]
    if len(given) > 1:
        loader.error(
            doc.key_at([given[1]]),
            f"`{given[1]}:` and `{given[0]}:` both name the models; keep one "
            "(`models:` for several side by side)",
        )
    override = loader.overrides.model
    key = next((k for k in given if k != "model"), None)
    specs: list[ModelSpec] = []
    notes: list[str] = []
    prompts: list[tuple[tuple[str, ...], Location]] = []
    # A list is read even when --model replaces it, so that its mistakes are still reported.
    if key == "models":
        specs, prompts = _listed(loader, doc)
    elif key is not None:
        specs, notes, prompts = _providers(loader, doc, key)
    if override is not None or key is None:
        out = Models(read_model(loader, doc, "model", override), notes=notes)
        declared = [s.tools for s in specs if s.tools]
        if declared and all(t == declared[0] for t in declared) and len(declared) == len(specs):
            # The one model that runs instead checks calls against the tools they all declare.
            out.model = replace(out.model, tools=declared[0])
        if override is not None and key is not None:
            message = f"--model {override} replaces the suite's `{key}:`; one model runs"
            out.notes.append(_warning(Location("command line"), message))
        return out
    if not specs:
        return Models(_placeholder(loader), notes=notes)
    specs = _unique_labels(specs)
    return Models(
        specs[0],
        tuple(specs) if len(specs) > 1 else (),
        notes,
        tuple(p for p, _ in prompts) if any(p for p, _ in prompts) else (),
        tuple(w for _, w in prompts),
    )


def read_model(loader: Loader, doc: Document, key: str, override: str | None) -> ModelSpec:
    """``model:`` or ``judge:`` (or the option that overrides it)."""
    raw: Any = override if override is not None else doc.data.get(key)
    from_doc = key in doc.data and override is None
    spec = _parse(
        loader,
        raw,
        key=key,
        where=doc.at([key]) if from_doc else Location("command line"),
        doc=doc if from_doc else None,
        # A path written in the suite is relative to it; one given on the command line
        # (`--model ./m.gguf`), to the directory skilleval runs in.
        base_dir=loader.base if from_doc else Path.cwd(),
    )
    if spec is None:
        return _placeholder(loader)
    # Where a model that does not load is reported: the `model:` line, or the suite itself
    # when it names no model (the embedded one).
    if override is None:
        spec = replace(spec, where=doc.key_at([key]) if from_doc else doc.at())
    return spec


def _listed(
    loader: Loader, doc: Document
) -> tuple[list[ModelSpec], list[tuple[tuple[str, ...], Location]]]:
    """skilleval's ``models:``: each item is what ``model:`` takes, and a mapping may also give
    its column a ``label`` and limit it to some ``prompts`` (by label)."""
    items = doc.data.get("models")
    specs: list[ModelSpec] = []
    prompts: list[tuple[tuple[str, ...], Location]] = []
    for i, raw in enumerate(items if isinstance(items, list) else []):
        where = doc.at(["models", i])
        label = ""
        labels: tuple[str, ...] = ()
        if isinstance(raw, Mapping):
            raw = dict(raw)
            label, labels = _column(
                loader, doc, ["models", i], raw.pop("label", ""), raw.pop("prompts", ())
            )
        spec = _parse(
            loader,
            raw,
            key="models",
            where=where,
            doc=doc if isinstance(raw, Mapping) else None,
            base_dir=loader.base,
            path=["models", i],
        )
        if spec is not None:
            specs.append(replace(spec, where=where, label=label or spec.label))
            prompts.append((labels, doc.at(["models", i, "prompts"]) if labels else where))
    return specs, prompts


def _providers(
    loader: Loader, doc: Document, key: str
) -> tuple[list[ModelSpec], list[str], list[tuple[tuple[str, ...], Location]]]:
    """promptfoo's ``providers:``: each id read as the model that means the same, with the
    labels of the prompts it runs (empty: all of them)."""
    raw = doc.data.get(key)
    items = raw if isinstance(raw, list) else [raw]
    specs: list[ModelSpec] = []
    notes: list[str] = []
    prompts: list[tuple[tuple[str, ...], Location]] = []
    for i, item in enumerate(items):
        path: list[str | int] = [key, i] if isinstance(raw, list) else [key]
        where = doc.at(path)
        item = normalized(item)
        read = translate(item, with_config_env(loader.top))
        written = item.get("config") if isinstance(item, Mapping) else None
        tools, unreadable = declared_tools(written, loader.base)
        if unreadable is not None:
            notes.append(_warning(where, f"{unreadable}; the tool-call checks see no tools"))
        if isinstance(item, Mapping):
            for extra in sorted(set(item) - ENTRY_KEYS):
                notes.append(
                    _warning(where, f"`{extra}` of this provider is not used by skilleval")
                )
            config = item.get("config") or {}
            if read.uses_config or not isinstance(config, Mapping):
                config = {}
            for extra in sorted(set(config) - _READ_CONFIG - set(TOOL_KEYS)):
                notes.append(
                    _warning(
                        where,
                        f"`config.{extra}` is not used: skilleval sets decoding for the whole "
                        "suite (`decoding:`)",
                    )
                )
            for extra in sorted(set(config) & set(TOOL_KEYS)):
                notes.append(
                    _warning(
                        where,
                        f"`config.{extra}` is read by the tool-call checks, as promptfoo reads"
                        " it, but not sent to the model: its calls are read from its text",
                    )
                )
        if read.refusal is not None or read.model is None:
            loader.error(where, read.refusal or "this provider cannot be run")
            continue
        spec = _parse(loader, read.model, key=key, where=where, doc=None, base_dir=loader.base)
        if spec is not None:
            written = item.get("prompts", ()) if isinstance(item, Mapping) else ()
            _, labels = _column(loader, doc, path, "", written)
            label = read.label or spec.label
            specs.append(replace(spec, where=where, label=label, tools=tools))
            prompts.append((labels, doc.at([*path, "prompts"]) if labels else where))
    return specs, notes, prompts


def only_their_prompts(loader: Loader, models: Models, tests: list[TestCase]) -> list[TestCase]:
    """promptfoo's per-provider ``prompts:``: check the labels name prompts of the suite.

    With one model, the tests of other prompts are dropped here; with several, each column
    keeps its own (see :meth:`Suite.columns`).
    """
    known = {t.prompt.label for t in tests}
    for labels, where in zip(models.prompts, models.prompts_at, strict=False):
        for label in labels:
            if label not in known:
                shown = ", ".join(sorted(known)) or "none"
                loader.error(where, f"no prompt is labelled '{label}' (the prompts: {shown})")
    if models.prompts and not models.columns and models.prompts[0]:
        return [t for t in tests if t.prompt.label in models.prompts[0]]
    return tests


def _column(
    loader: Loader, doc: Document, path: list[str | int], label: Any, prompts: Any
) -> tuple[str, tuple[str, ...]]:
    """A model's column ``label`` and the ``prompts`` (labels) it runs, each checked."""
    if not isinstance(label, str):
        loader.error(doc.at([*path, "label"]), "`label` must be a string (the column's name)")
        label = ""
    if prompts is None or prompts == ():
        return label, ()
    if not isinstance(prompts, list) or not all(isinstance(x, str) for x in prompts):
        loader.error(doc.at([*path, "prompts"]), "`prompts` must be a list of prompt labels")
        return label, ()
    return label, tuple(prompts)


def _warning(where: Location, message: str) -> str:
    return str(Diagnostic(where, message, severity="warning"))


def _parse(
    loader: Loader,
    raw: Any,
    *,
    key: str,
    where: Location,
    doc: Document | None,
    base_dir: Path,
    path: list[str | int] | None = None,
) -> ModelSpec | None:
    spec, diags = parse_model(
        raw,
        key=key,
        where=where,
        doc=doc,
        manager=loader.registry,
        base_dir=base_dir,
        reader=loader.reader,
        path=path,
    )
    loader.diags.extend(diags)
    return spec


def _placeholder(loader: Loader) -> ModelSpec:
    """A stand-in that keeps loading going so that every problem is reported; the
    diagnostics already recorded make the load fail before anything could run it."""
    provider = loader.registry.provider("echo") or loader.registry.providers()[0]
    return ModelSpec(provider, label="invalid")


def _unique_labels(specs: list[ModelSpec]) -> list[ModelSpec]:
    """Column labels tell the models apart: a repeated label gets ``#2``, ``#3`` …"""
    seen: dict[str, int] = {}
    out: list[ModelSpec] = []
    for spec in specs:
        n = seen[spec.label] = seen.get(spec.label, 0) + 1
        out.append(spec if n == 1 else replace(spec, label=f"{spec.label} #{n}"))
    return out
