"""JSON Schemas for the agentic keys of a suite: ``tools``, ``environment``, ``turns``, ``max_steps``.

They describe shape only. What a schema cannot say (a tool's parameters are a valid JSON
Schema, tool names are unique, files exist, paths stay inside the workspace) is checked by
:func:`~skilleval.suite.agentic.parse_tools` and
:func:`~skilleval.suite.agentic.parse_environment`. :mod:`skilleval.suite.suite_schema` embeds
these fragments in the suite schema; a tool's implementation keys come from the registered
tool kinds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from skilleval.plugins.markers import ToolKindType

TOOL_NAME = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"

_COMMAND: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "minLength": 1},
        {"type": "array", "items": {"type": "string"}, "minItems": 1},
    ]
}


def tool_schema(kinds: Sequence[ToolKindType]) -> dict[str, Any]:
    """One tool: its name, description and parameters, and one key per registered tool kind."""
    properties: dict[str, Any] = {
        "name": {"type": "string", "pattern": TOOL_NAME},
        "description": {"type": "string", "description": "What the tool does, shown to the model."},
        "parameters": {
            "type": "object",
            "description": "JSON Schema (draft 2020-12) for the arguments; default: no arguments.",
        },
    }
    for kind in kinds:
        properties[kind.name] = dict(kind.schema or {})
    for kind in kinds:
        for key, value in kind.options.items():
            properties.setdefault(key, value)
    names = [k.name for k in kinds]
    listed = " or ".join([", ".join(names[:-1]), names[-1]]) if len(names) > 1 else "".join(names)
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "description": f"A tool the model may call; exactly one of {listed} implements it.",
        "properties": properties,
    }


def tools_schema(kinds: Sequence[ToolKindType]) -> dict[str, Any]:
    """A ``tools:`` list."""
    return {"type": "array", "items": tool_schema(kinds)}


ENVIRONMENT: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "A fresh workspace for every test × arm × trial.",
    "properties": {
        "files": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"type": "string", "minLength": 1},
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["src"],
                        "properties": {
                            "src": {
                                "type": "string",
                                "minLength": 1,
                                "description": "A file or folder, relative to the suite.",
                            },
                            "dest": {
                                "type": "string",
                                "minLength": 1,
                                "description": "Where it goes, relative to the workspace (default: its name).",
                            },
                        },
                    },
                ]
            },
        },
        "commands": {
            "type": "array",
            "items": _COMMAND,
            "description": "Run in order in the workspace after the files are copied; a failure makes the result an error.",
        },
        "timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "Seconds each set-up command may take (default 60).",
        },
    },
}

TURN: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["user"],
    "properties": {
        "user": {
            "type": "string",
            "minLength": 1,
            "description": "The user's message (a template).",
        },
        "assert": {
            "type": "array",
            "items": {"$ref": "#/$defs/assertion"},
            "description": "Graded on this turn's answer, its steps, and the workspace after it.",
        },
    },
}

TURNS: dict[str, Any] = {"type": "array", "minItems": 1, "items": TURN}

MAX_STEPS: dict[str, Any] = {
    "type": "integer",
    "minimum": 1,
    "description": "Model calls allowed per turn of the agent loop.",
}

TEST_PROPERTIES: dict[str, Any] = {
    "tools": {
        "type": "array",
        "items": {"$ref": "#/$defs/tool"},
        "description": "Tools for this test, added to the suite's (a name here replaces one there).",
    },
    "environment": {"$ref": "#/$defs/environment"},
    "turns": {
        **TURNS,
        "description": "User messages in order, instead of `prompt:`; `assert:` grades the last turn.",
    },
    "max_steps": MAX_STEPS,
}
"""The agentic keys of a test (and of ``defaultTest``)."""

SUITE_PROPERTIES: dict[str, Any] = {
    "tools": {
        "type": "array",
        "items": {"$ref": "#/$defs/tool"},
        "description": "Tools every test may call; a test with tools runs the agent loop.",
    },
}
"""The agentic keys at the top of a suite."""
