"""Relative paths of a promptfoo config, rewritten for a suite written to another folder.

A promptfoo config reads its files relative to its own folder, and so does a suite. When
``skilleval import promptfoo -o`` writes the suite elsewhere, every relative path the config
names is rewritten to reach the same file from there: ``file://`` references anywhere (vars,
prompts, assertion values, transforms, providers), bare file names in ``prompts:`` and
``tests:`` (promptfoo reads those as paths), ``nunjucksFilters`` files, and a model's
``path``. Absolute paths, URLs and
templated paths are left as written.
"""

from __future__ import annotations

import os
import re
from collections.abc import MutableMapping, MutableSequence
from pathlib import Path, PurePosixPath
from typing import Any

__all__ = ["rebase_paths"]

_PREFIX = "file://"
_PROMPT_FILE = re.compile(r"\.(txt|md|j2|json|jsonl|ya?ml|csv|py|js|cjs|mjs)(:[\w$]+)?$", re.I)
_FUNCTION = re.compile(r"^(?P<path>.+?\.(?:py|js|cjs|mjs|ts))(?P<fn>:[A-Za-z_$][\w$]*)$")


def _moved(path: str, source: Path, target: Path) -> str:
    """``path`` (relative to ``source``) as seen from ``target``; the same when it is not a
    plain relative path."""
    if not path or path.startswith(("/", "~", "$")) or "{{" in path or "://" in path:
        return path
    function = ""
    found = _FUNCTION.match(path)
    if found is not None:
        path, function = found["path"], found["fn"]
    moved = os.path.relpath(source / path, target)
    return PurePosixPath(Path(moved)).as_posix() + function


def _ref(value: str, source: Path, target: Path) -> str:
    if value.startswith(_PREFIX):
        return _PREFIX + _moved(value[len(_PREFIX) :], source, target)
    return value


def _entry(ref: str, label: str) -> Any:
    """A prompts entry ``{id, label}`` in the round-trip YAML, on one line."""
    from ruamel.yaml.comments import CommentedMap  # lazy: start-up time

    entry = CommentedMap({"id": ref, "label": label})
    entry.fa.set_flow_style()
    return entry


def _walk(node: Any, source: Path, target: Path, skip: str = "") -> None:
    if isinstance(node, MutableMapping):
        for key in list(node):
            if key == skip:
                continue
            value = node[key]
            if isinstance(value, str):
                node[key] = _ref(value, source, target)
            else:
                _walk(value, source, target)
    elif isinstance(node, MutableSequence):
        for i, value in enumerate(node):
            if isinstance(value, str):
                node[i] = _ref(value, source, target)
            else:
                _walk(value, source, target)


def rebase_paths(data: MutableMapping[str, Any], source: Path, target: Path) -> None:
    """Rewrite, in place, the relative paths of the config ``data`` (read from ``source``)
    for a suite written in ``target``."""
    if source.resolve() == target.resolve():
        return
    _walk(data, source, target, skip="prompts")
    prompts = data.get("prompts")
    if isinstance(prompts, MutableSequence):
        for i, item in enumerate(prompts):
            if not isinstance(item, str):
                _walk(item, source, target)
                continue
            if "\n" in item or not _PROMPT_FILE.search(item.strip()):
                continue
            written = item.strip().removeprefix(_PREFIX)
            moved = _moved(written, source, target)
            if _FUNCTION.match(written) or written.endswith((".js", ".cjs", ".mjs")):
                # A prompt function is labelled by its path as written: keep that label.
                prompts[i] = _entry(_PREFIX + moved, written)
            else:
                prompts[i] = (_PREFIX if item.strip().startswith(_PREFIX) else "") + moved
    tests = data.get("tests")
    if isinstance(tests, str) and not tests.startswith(_PREFIX):
        data["tests"] = _moved(tests, source, target)
    elif isinstance(tests, MutableSequence):
        for i, item in enumerate(tests):
            if isinstance(item, str) and not item.startswith(_PREFIX):
                tests[i] = _moved(item, source, target)
    filters = data.get("nunjucksFilters")
    if isinstance(filters, MutableMapping):
        for name, written in list(filters.items()):
            if isinstance(written, str):
                filters[name] = _moved(written, source, target)
    models = data.get("models")
    if isinstance(models, MutableSequence):
        for i, model in enumerate(models):
            if isinstance(model, str) and model.endswith(".gguf"):
                models[i] = _moved(model, source, target)
            elif isinstance(model, MutableMapping) and _local(model.get("path")):
                model["path"] = _moved(model["path"], source, target)


def _local(path: Any) -> bool:
    """A model's ``path`` that names a file (not ``default``, not a hub reference)."""
    return isinstance(path, str) and not path.startswith(("hf:", "default"))
