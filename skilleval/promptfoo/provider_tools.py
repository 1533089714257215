"""The tools a promptfoo provider declares, as its tool-call checks read them.

promptfoo's ``is-valid-openai-tools-call`` validates a reply's calls against the provider's
``config.tools``, and its function-call checks against ``config.functions``. Either may be
written inline, or as a ``file://`` JSON or YAML file (a list of them is joined), relative to
the config. skilleval hands them to those checks (:func:`skilleval.suite.model.with_provider_tools`);
it does not send them to the model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["TOOL_CHECK_TYPES", "TOOL_KEYS", "declared_tools", "give_checks"]

TOOL_KEYS = ("tools", "functions")
TOOL_CHECK_TYPES = frozenset(
    {"is-valid-openai-tools-call", "is-valid-openai-function-call", "is-valid-function-call"}
)
_CODE = (".py", ".js", ".mjs", ".cjs", ".ts", ".mts")


class _Unreadable(Exception):
    """A ``file://`` tool reference that cannot be read, with why."""


def declared_tools(config: Any, base: Path) -> tuple[dict[str, Any], str | None]:
    """The provider's ``tools`` and ``functions``, files read, and what cannot be read.

    Args:
        config: The provider's ``config`` as written.
        base: The config's folder, which ``file://`` paths are relative to.

    Returns:
        The keys found, and None; or nothing and the first problem, naming the key.
    """
    if not isinstance(config, Mapping):
        return {}, None
    out: dict[str, Any] = {}
    for key in TOOL_KEYS:
        if key not in config or config[key] is None:
            continue
        try:
            out[key] = _loaded(config[key], base)
        except _Unreadable as exc:
            return {}, f"`config.{key}`: {exc}"
    return out, None


def _loaded(value: Any, base: Path) -> Any:
    if isinstance(value, list):
        items = [_loaded(v, base) for v in value]
        if (
            items
            and all(isinstance(i, list) for i in items)
            and any(isinstance(v, str) for v in value)
        ):
            return [tool for group in items for tool in group]
        return items
    if not isinstance(value, str) or not value.startswith("file://"):
        return value
    ref = value.removeprefix("file://")
    path = ref.rsplit(":", 1)[0] if ref.rsplit(":", 1)[0].endswith(_CODE) else ref
    if path.endswith(_CODE):
        raise _Unreadable(
            f"`{value}`: tools made by a Python or JavaScript function are not read by"
            " skilleval; write them in a JSON or YAML file (`file://tools.json`)"
        )
    file = base / path
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise _Unreadable(f"`{value}`: cannot read {path}: {exc.strerror or exc}") from None
    try:
        if file.suffix.lower() in (".yaml", ".yml"):
            from ruamel.yaml import YAML  # lazy: start-up time

            data = YAML(typ="safe", pure=True).load(text)
        else:
            data = json.loads(text)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _Unreadable(f"`{value}` is not JSON or YAML: {first}") from None
    if not isinstance(data, list | dict):
        raise _Unreadable(f"`{value}` holds no list or mapping of tool definitions")
    return data


def give_checks(data: Mapping[str, Any], tools: Mapping[str, Any]) -> int:
    """Write ``tools`` into the ``config`` of each inline tool-call check of a config's tests
    and ``defaultTest`` (in sets too), over the check's own: how ``import`` keeps the
    provider's tools once the provider is a ``models:`` entry. Returns how many it wrote."""
    tests = data.get("tests")
    stack = [*(tests if isinstance(tests, list) else []), data.get("defaultTest")]
    written = 0
    while stack:
        holder = stack.pop()
        asserts = holder.get("assert") if isinstance(holder, Mapping) else None
        for entry in asserts if isinstance(asserts, list) else []:
            if not isinstance(entry, dict):
                continue
            stack.append(entry)  # an assert-set's own `assert:`
            if str(entry.get("type", "")).removeprefix("not-") in TOOL_CHECK_TYPES:
                own = entry.get("config")
                entry["config"] = {**(own if isinstance(own, Mapping) else {}), **tools}
                written += 1
    return written
