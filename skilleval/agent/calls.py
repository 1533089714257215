"""Calling a declared tool: its arguments checked against its full schema, then run and timed."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skilleval.suite.agent_config import ToolConfig
from skilleval.trajectory import ToolResult, result_text

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

_validators: dict[str, Draft202012Validator] = {}
_validators_lock = threading.Lock()


def argument_error(tool: ToolConfig, arguments: Any) -> str | None:
    """Why ``arguments`` do not satisfy the tool's parameters schema, or None when they do."""
    if not isinstance(arguments, Mapping):
        return f"arguments must be a JSON object, not {result_text(arguments)}"
    from jsonschema.exceptions import best_match  # lazy: start-up time

    error = best_match(_validator(tool.parameters).iter_errors(dict(arguments)))
    if error is None:
        return None
    return f"at {error.json_path}: {error.message}"


def call_tool(
    tool: ToolConfig, arguments: Mapping[str, Any], workspace: Path | None
) -> tuple[ToolResult, float]:
    """Run the tool's implementation; returns the result and how long it took (ms)."""
    start = time.perf_counter()
    result = tool.impl.run(arguments, workspace)
    return result, (time.perf_counter() - start) * 1000.0


def _validator(schema: Mapping[str, Any]) -> Draft202012Validator:
    # Tools are shared by every job of a suite; one compiled validator per schema.
    from jsonschema import Draft202012Validator  # lazy: start-up time

    key = json.dumps(schema, sort_keys=True, default=str)
    with _validators_lock:
        found = _validators.get(key)
        if found is None:
            found = _validators[key] = Draft202012Validator(dict(schema))
    return found
