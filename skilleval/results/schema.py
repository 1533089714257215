"""Build ``results.schema.json`` from the typed results model (``tools/results_schema.py``).

The schema is generated, never written by hand, so the model, the writer, the loader and the
schema describe one format; ``make schema-check`` fails when the file on disk drifts.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, Union

from skilleval.results.codec import fields, hints, json_key
from skilleval.results.model import Run

SCHEMA_ID = "https://skilleval.dev/schemas/results.schema.json"

SHARED_DEFS: dict[str, Any] = {
    "arm": {"enum": ["default", "off", "on", "routed"]},
    "count": {"type": "integer", "minimum": 0},
    "rate": {
        "type": ["number", "null"],
        "minimum": 0,
        "maximum": 1,
        "description": "A proportion; null when its denominator is zero.",
    },
}

# A finished run records everything; only a document rebuilt from results.jsonl has gaps.
FINISHED_RUN: dict[str, Any] = {
    "if": {"properties": {"status": {"enum": ["complete", "interrupted"]}}},
    "then": {
        "properties": {
            "skilleval": {"type": "string"},
            "environment": {"type": "object"},
            "calls": {"type": "object"},
            "gate": {"type": "object"},
            "suite": {
                "properties": {
                    "path": {"type": "string"},
                    "type": {"type": "string"},
                    "threshold": {"type": "number"},
                    "trials": {"type": "integer"},
                }
            },
        }
    },
}

_SCALARS: Mapping[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def results_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``results.json``."""
    defs: dict[str, Any] = dict(SHARED_DEFS)
    root = _object(Run, defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "skilleval results",
        "description": (
            "One run of a skilleval suite: what ran, on which model, every graded output and "
            "the aggregates. Written to .skilleval/runs/<id>/results.json; each item of "
            "`records` is also one line of results.jsonl. Generated from skilleval/results/ by "
            "tools/results_schema.py."
        ),
        **root,
        "allOf": [FINISHED_RUN],
        "$defs": dict(sorted(defs.items())),
    }


def _def_name(cls: type) -> str:
    return cls.__name__[0].lower() + cls.__name__[1:]


def _object(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    doc = (cls.__doc__ or "").strip()
    out: dict[str, Any] = {"type": "object", "additionalProperties": False}
    if doc and not doc.startswith(cls.__name__ + "("):
        out["description"] = doc
    types_of = hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in fields(cls):
        key = json_key(f)
        if not f.metadata.get("omit"):
            required.append(key)
        properties[key] = _field(types_of[f.name], f.metadata, defs)
    out["required"] = required
    out["properties"] = properties
    return out


def _field(tp: Any, metadata: Mapping[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    extra: dict[str, Any] = dict(metadata.get("schema") or {})
    if "$ref" in extra or "const" in extra:
        out = extra
    else:
        out = _type(tp, defs)
        if extra:
            out = {**out, **extra}
    if metadata.get("none_as_empty"):
        out = {"anyOf": [_type(_non_null(tp), defs), {"type": "object", "maxProperties": 0}]}
    description = metadata.get("description")
    if description:
        out = {**out, "description": description}
    return out


def _non_null(tp: Any) -> Any:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    return args[0] if len(args) == 1 else tp


def _type(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if tp is Any:
        return {}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        name = _def_name(tp)
        if name not in defs:
            defs[name] = {}  # placeholder: a class may refer to itself
            defs[name] = _object(tp, defs)
        return {"$ref": f"#/$defs/{name}"}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        return _union(args, defs)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _type(args[0], defs)}
        return {
            "type": "array",
            "prefixItems": [_type(a, defs) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if origin is not None and issubclass(origin, Mapping):
        value = _type(args[1], defs)
        return {"type": "object", **({"additionalProperties": value} if value else {})}
    raise TypeError(f"no schema for {tp!r}")


def _union(args: tuple[Any, ...], defs: dict[str, Any]) -> dict[str, Any]:
    literals = [a for a in args if typing.get_origin(a) is Literal]
    if literals and all(typing.get_origin(a) is Literal or a is type(None) for a in args):
        values = [v for lit in literals for v in typing.get_args(lit)]
        return {"enum": [*values, *([None] if type(None) in args else [])]}
    if all(a in _SCALARS for a in args):
        return {"type": [_SCALARS[a] for a in args]}
    return {"anyOf": [_type(a, defs) for a in args]}
