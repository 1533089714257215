"""JSON Schemas for the agentic keys of a suite: ``tools``, ``environment``, ``turns``, ``max_steps``.

They describe shape only. What a schema cannot say (a tool's parameters are a valid JSON
Schema, tool names are unique, files exist, paths stay inside the workspace) is checked by
:func:`~skilleval.agent.tools.parse_tools` and
:func:`~skilleval.agent.workspace.parse_environment`. ``tools/suite_schema.py`` embeds these
fragments in the suite schema.
"""

from __future__ import annotations

from typing import Any

TOOL_NAME = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"

_COMMAND: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "minLength": 1},
        {"type": "array", "items": {"type": "string"}, "minItems": 1},
    ]
}

MOCK_CASE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["result"],
    "properties": {
        "args": {
            "type": "object",
            "description": "Arguments this result answers; omitted matches every call.",
        },
        "match": {
            "enum": ["subset", "exact"],
            "description": "subset (default): the call has at least these arguments; exact: only these.",
        },
        "result": {"description": "What the tool returns: text, or any JSON value."},
    },
}

TOOL: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "description": "A tool the model may call; exactly one of mock, command or python implements it.",
    "properties": {
        "name": {"type": "string", "pattern": TOOL_NAME},
        "description": {"type": "string", "description": "What the tool does, shown to the model."},
        "parameters": {
            "type": "object",
            "description": "JSON Schema (draft 2020-12) for the arguments; default: no arguments.",
        },
        "mock": {
            "type": "object",
            "additionalProperties": False,
            "description": "Canned results: the first case whose args match wins, else the default.",
            "properties": {
                "results": {"type": "array", "items": MOCK_CASE},
                "default": {"description": "The result when no case matches."},
            },
        },
        "command": {
            **_COMMAND,
            "description": "Run in the workspace: a shell line with {arg} placeholders (shell-quoted), or an argv list.",
        },
        "python": {
            "type": "string",
            "minLength": 1,
            "description": "file://path.py:fn (relative to the suite) or module.py:fn in a plugin folder.",
        },
        "timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "command: seconds before it is killed (default 10).",
        },
        "max_output": {
            "type": "integer",
            "minimum": 1,
            "description": "command: bytes kept from each of stdout and stderr (default 16000).",
        },
    },
}

TOOLS: dict[str, Any] = {"type": "array", "items": TOOL}

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
