"""Where a suite's tests come from: written inline, or in YAML, JSON, JSONL and CSV files."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from skilleval.api import NEGATION_PREFIX
from skilleval.errors import DiagnosticsError, Location
from skilleval.plugins.registry import UNSUPPORTED
from skilleval.promptfoo.config import reads_as_promptfoo
from skilleval.sandbox.pyfile import imports_allowed
from skilleval.suite import files as filerefs
from skilleval.suite.code_hooks import call_generator, code_ref
from skilleval.suite.context import Loader
from skilleval.suite.schema import validate
from skilleval.suite.vars import MAX_EXPANDED, too_many
from skilleval.suite.yamlio import Document, PathKey, parse_yaml
from skilleval.util import fileref

_SCHEME = re.compile(r"^([a-zA-Z][\w+.-]*)://")


def is_type(loader: Loader, name: str) -> bool:
    """Whether ``name`` is an assertion type (a CSV cell ``name:value`` is then an assertion)."""
    base = name.removeprefix(NEGATION_PREFIX)
    return base in loader.registry or base in UNSUPPORTED


def raw_tests(loader: Loader, doc: Document) -> list[filerefs.RawTest]:
    """Every test as written, in order; a tests file's tests are checked against the schema.

    Inline tests are checked with the suite; those it found wrong are left out here.
    """
    raw = doc.data.get("tests")
    if raw is None:
        return []
    entries: list[tuple[Any, list[str | int]]] = (
        [(raw, ["tests"])]
        if isinstance(raw, str)
        else [(t, ["tests", i]) for i, t in enumerate(raw)]
    )
    out: list[filerefs.RawTest] = []
    test_schema = {"$defs": loader.schema["$defs"], "$ref": "#/$defs/test"}
    for item, at in entries:
        if tuple(at) in loader.skipped:
            continue
        config = None
        if is_generator_entry(item) and reads_as_promptfoo(loader.top):
            # promptfoo's {path: file://gen.py, config: …}: a generator given its config.
            item, config = item["path"], item.get("config")
        if not isinstance(item, str):
            out.append(filerefs.RawTest(doc.sub(at), loader.base))
            continue
        scheme = _SCHEME.match(item)
        if scheme and scheme[1] != "file":
            loader.error(
                doc.at(at),
                f"tests from {scheme[1]}:// are not read: save them as a CSV, YAML or JSONL file"
                " beside the suite and name that file",
            )
            continue
        # promptfoo reads a bare string in `tests:` as a path (or glob) relative to the suite.
        ref = item if fileref.is_ref(item) else f"file://{item}"
        hook = code_ref(ref)
        if hook is not None:
            out.extend(generated_tests(loader, hook, doc.at(at), test_schema, config))
            continue
        try:
            for path in loader.reader.paths(ref, loader.base, doc.at(at)):
                for rt in filerefs.tests_from_file(path, doc.at(at), lambda n: is_type(loader, n)):
                    problems = validate(rt.doc, test_schema, what="the test")
                    if problems:
                        loader.diags.extend(problems)
                    else:
                        out.append(rt)
        except DiagnosticsError as exc:
            loader.absorb(exc)
    return out


def is_generator_entry(item: Any) -> bool:
    """promptfoo's ``{path: file://gen.py, config: …}`` in ``tests:``."""
    return (
        isinstance(item, Mapping)
        and set(item) <= {"path", "config"}
        and isinstance(item.get("path"), str)
        and code_ref(item["path"] if fileref.is_ref(item["path"]) else f"file://{item['path']}")
        is not None
    )


def generated_tests(
    loader: Loader,
    hook: tuple[str, str, str | None],
    where: Location,
    schema: Mapping[str, Any],
    config: Any = None,
) -> list[filerefs.RawTest]:
    """The tests a Python or JavaScript generator returns, each checked against the schema;
    their positions point into the JSON of what it returned."""
    raw, _, name = hook
    path = fileref.resolve(raw, loader.base)
    if not path.is_file():
        loader.error(where, f"test generator file not found: {raw} (looked for {path})")
        return []
    if not imports_allowed() and path.suffix == ".py":
        loader.error(
            where,
            f"the test generator {raw} is not run (--no-plugins), so its tests cannot be checked",
        )
        return []
    try:
        tests = call_generator(path, name, config)
        text = json.dumps(tests, indent=1, ensure_ascii=False)
    except (ValueError, TypeError) as exc:
        loader.error(where, str(exc))
        return []
    default = "generate_tests" if path.suffix == ".py" else "export"
    shown = f"{raw}:{name or default} (what it returned)"
    try:
        returned = parse_yaml(text, shown)
    except DiagnosticsError as exc:
        loader.absorb(exc)
        return []
    out: list[filerefs.RawTest] = []
    for i in range(len(tests)):
        rt = filerefs.RawTest(returned.sub([i]), loader.base)
        problems = validate(rt.doc, schema, what="the test")
        if problems:
            loader.diags.extend(problems)
        else:
            out.append(rt)
    return out


def scenario_tests(loader: Loader, doc: Document) -> list[filerefs.RawTest]:
    """promptfoo's ``scenarios``: each ``config`` entry crossed with each of the ``tests``.

    A config entry and a test merge as promptfoo merges them: the test's keys win, vars are
    merged (the test's win), assertions are the config's then the test's, metadata merged,
    and ``options`` are the test's alone. The merged test keeps the position of every part:
    a mistake is reported where it is written.
    """
    scenarios = doc.data.get("scenarios")
    if not isinstance(scenarios, list):
        return []
    out: list[filerefs.RawTest] = []
    counted = 0
    for si, scenario in enumerate(scenarios):
        if ("scenarios", si) in loader.skipped or not isinstance(scenario, dict):
            continue
        tests = scenario.get("tests") or [{}]
        configs = scenario.get("config") or []
        # Counted before anything is built: the product can be far past what fits in memory.
        count = len(configs) * len(tests) if isinstance(configs, list) else 0
        counted += count
        if counted > MAX_EXPANDED:
            what = f"the scenarios cross {len(configs):,} configs with {len(tests):,} tests here"
            loader.error(doc.at(["scenarios", si]), too_many(what, counted))
            return out
    positions = _positions(doc, "scenarios")
    for si, scenario in enumerate(scenarios):
        if ("scenarios", si) in loader.skipped or not isinstance(scenario, dict):
            continue
        tests = scenario.get("tests") or [{}]
        for ci, config in enumerate(scenario.get("config") or []):
            if ("scenarios", si, "config", ci) in loader.skipped:
                continue
            for ti, test in enumerate(tests):
                if ("scenarios", si, "tests", ti) in loader.skipped:
                    continue
                base = ("scenarios", si, "__merged", ci, ti)
                from_config = ("scenarios", si, "config", ci)
                from_test = ("scenarios", si, "tests", ti) if "tests" in scenario else from_config
                merged = _merge_scenario(config, test)
                _graft(doc, positions, from_test, base)
                for key in config:
                    if key not in test and key not in ("vars", "assert", "metadata", "options"):
                        _graft(doc, positions, (*from_config, key), (*base, key))
                for key in ("vars", "metadata"):
                    for name in config.get(key) or {}:
                        if name not in (test.get(key) or {}):
                            _graft(doc, positions, (*from_config, key, name), (*base, key, name))
                own = test.get("assert") or []
                for j in range(len(config.get("assert") or [])):
                    _graft(doc, positions, (*from_config, "assert", j), (*base, "assert", j))
                shift = len(config.get("assert") or [])
                for j in range(len(own)):
                    _graft(doc, positions, (*from_test, "assert", j), (*base, "assert", j + shift))
                view = Document(
                    merged,
                    doc.display,
                    doc.file,
                    doc.text,
                    doc.values,
                    doc.keys,
                    base,
                    aliases=doc.aliases,
                )
                out.append(filerefs.RawTest(view, loader.base))
    return out


def _merge_scenario(config: dict[str, Any], test: dict[str, Any]) -> dict[str, Any]:
    merged = {**config, **test}
    merged.pop("options", None)
    if "options" in test:
        merged["options"] = test["options"]
    for key in ("vars", "metadata"):
        if key in config or key in test:
            merged[key] = {**(config.get(key) or {}), **(test.get(key) or {})}
    if "assert" in config or "assert" in test:
        merged["assert"] = [*(config.get("assert") or []), *(test.get("assert") or [])]
    return merged


_Under = dict[PathKey, list[tuple[PathKey, Location]]]
Positions = tuple[_Under, _Under]
"""The positions recorded under each path (values, keys), each as (the rest of its path,
where it is): a graft looks its origin up instead of scanning every position."""


def _positions(doc: Document, top: str) -> Positions:
    """The positions recorded under ``top``, indexed by every leading part of their path."""

    def index(found: Mapping[PathKey, Location]) -> _Under:
        under: _Under = {}
        for path, loc in found.items():
            if path[:1] != (top,):
                continue
            for n in range(1, len(path) + 1):
                under.setdefault(path[:n], []).append((path[n:], loc))
        return under

    return index(doc.values), index(doc.keys)


def _graft(doc: Document, positions: Positions, origin: PathKey, dest: PathKey) -> None:
    """Give the nodes under ``dest`` the positions of those under ``origin``."""
    values, keys = positions
    for rest, loc in values.get(origin, ()):
        doc.values[dest + rest] = loc
    for rest, loc in keys.get(origin, ()):
        doc.keys[dest + rest] = loc
