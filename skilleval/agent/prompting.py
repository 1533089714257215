"""What the model is asked for at each step: the step schema and the system message.

The request's ``json_schema`` is a union with one branch per tool (its ``arguments`` held to
that tool's parameters) plus the final answer, so a constrained provider can only produce a
declared tool with well-formed arguments. ``thought`` comes first: a small model that has
said what it is about to do picks the action more reliably.

The schema sent for decoding keeps only the *structural* keywords of each parameters schema
(types, properties, required, enum, const, items, lengths): a grammar cannot enforce
``minimum``, ``pattern``, ``format`` and the like, and a provider that validates its reply
against the schema it was sent would turn such a slip into a failed run. The arguments are
then validated against the full schema (:mod:`skilleval.agent.calls`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from skilleval.suite.agent_config import ToolConfig

_STRUCTURAL = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "prefixItems",
        "enum",
        "const",
        "anyOf",
        "oneOf",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
    }
)


def decoding_schema(schema: Any) -> dict[str, Any]:
    """The part of a parameters schema a grammar can enforce (see the module docstring).

    ``$ref`` is replaced by "any value": refs are relative to the tool's own schema, which is
    nested inside the step schema. The full schema still validates the arguments.
    """
    if not isinstance(schema, Mapping):
        return {}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _STRUCTURAL:
            continue
        if key == "properties" and isinstance(value, Mapping):
            out[key] = {name: decoding_schema(sub) for name, sub in value.items()}
        elif key in ("anyOf", "oneOf", "prefixItems") and isinstance(value, list):
            # The grammar treats oneOf as anyOf; exclusivity is checked by validation.
            out["anyOf" if key == "oneOf" else key] = [decoding_schema(v) for v in value]
        elif key == "items" or (key == "additionalProperties" and isinstance(value, Mapping)):
            out[key] = decoding_schema(value)
        else:
            out[key] = value
    return out


def step_schema(tools: Sequence[ToolConfig], *, think: bool = True) -> dict[str, Any]:
    """The JSON Schema every step's reply must satisfy."""
    actions: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": tool.name},
                "arguments": {"type": "object", **decoding_schema(tool.parameters)},
            },
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    actions.append(
        {
            "type": "object",
            "properties": {"final": {"type": "string"}},
            "required": ["final"],
            "additionalProperties": False,
        }
    )
    properties: dict[str, Any] = {"thought": {"type": "string"}} if think else {}
    properties["action"] = actions[0] if len(actions) == 1 else {"anyOf": actions}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def agent_system(system: str | None, tools: Sequence[ToolConfig], *, think: bool = True) -> str:
    """The system message: the caller's (the skill, in the ON arm), then how to act."""
    thought = '"thought": "why", ' if think else ""
    lines = []
    if tools:
        lines += [
            "You can use tools. Answer every message with exactly one JSON object:",
            f'- to call a tool: {{{thought}"action": {{"tool": "NAME", "arguments": {{...}}}}}}',
            f'- to reply to the user: {{{thought}"action": {{"final": "your answer"}}}}',
            "Call one tool at a time. After each call you get its result; then call another "
            "tool or reply.",
            "",
            "Tools:",
        ]
        for tool in tools:
            lines.append(f"- {tool.name}: {tool.description or '(no description)'}")
            lines.append(f"  arguments: {_signature(tool.parameters)}")
    else:
        lines.append(
            f'Answer every message with exactly one JSON object: {{{thought}"action": '
            '{"final": "your answer"}}'
        )
    guide = "\n".join(lines)
    return f"{system.rstrip()}\n\n{guide}" if system and system.strip() else guide


def _signature(parameters: Mapping[str, Any]) -> str:
    props = parameters.get("properties") or {}
    if not props:
        return "none (send {})"
    required = set(parameters.get("required") or ())
    parts = []
    for name, sub in props.items():
        sub = sub if isinstance(sub, Mapping) else {}
        if "enum" in sub:
            kind = " or ".join(json.dumps(v) for v in sub["enum"])
        else:
            kind = str(sub.get("type", "any"))
        flags = f"{kind}, required" if name in required else kind
        text = f"{name} ({flags})"
        if sub.get("description"):
            text += f": {sub['description']}"
        parts.append(text)
    return "; ".join(parts)
