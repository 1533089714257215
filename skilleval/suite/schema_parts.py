"""The pieces of the suite schema: a test, an assertion, a prompt, a model, promptfoo's
provider and grader entries. :mod:`skilleval.suite.suite_schema` assembles them, with what the
plugins registered, into the schema of a whole suite.
"""

from __future__ import annotations

from typing import Any

from skilleval.api import AssertionType
from skilleval.plugins.manager import PluginManager
from skilleval.plugins.markers import ProviderType
from skilleval.suite import agentic_schema as agentic
from skilleval.suite.defaults import with_defaults
from skilleval.suite.model import AssertionEntry
from skilleval.suite.model_config import Decoding

FILE_REF: dict[str, Any] = {
    "type": "string",
    "pattern": "^file://",
    "description": "A file, relative to this file.",
}
TESTS_FILE: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "description": "A tests file or glob (YAML, JSON, JSONL, CSV), relative to this file; file:// optional.",
}
NUMBER_01: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 1}

_GRADER_ONE: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "required": ["id"],
            "properties": {
                "id": {"type": "string"},
                "config": {"type": "object"},
                "label": {"type": "string"},
            },
        },
    ],
}

GRADER: dict[str, Any] = {
    "description": "promptfoo's grader: becomes `judge:` (one per suite). A provider id"
    " (echo, file://model.gguf, openai:chat:NAME with config.apiBaseUrl, ollama:NAME), {id, config},"
    " or the map {text, embedding, classification} of them.",
    "anyOf": [
        *_GRADER_ONE["anyOf"],
        {
            "type": "object",
            "minProperties": 1,
            "properties": {
                "text": _GRADER_ONE,
                "embedding": _GRADER_ONE,
                "classification": _GRADER_ONE,
            },
        },
    ],
}

transform: dict[str, Any] = {
    "description": "Applied to the output before the assertions: an expr or JavaScript string, file://transform.js[:fn], or {jmespath: query} / {expr: ...} / {javascript: ...}.",
    "anyOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "additionalProperties": False,
            "minProperties": 1,
            "maxProperties": 1,
            "properties": {
                "jmespath": {"type": "string", "minLength": 1},
                "expr": {"type": "string", "minLength": 1},
                "javascript": {"type": "string", "minLength": 1},
            },
        },
    ],
}

assertion: dict[str, Any] = {
    "type": "object",
    "description": "One assertion. Prefix any type with not- to negate it.",
    "additionalProperties": False,
    "required": ["type"],
    "properties": with_defaults(
        {
            "type": {
                "type": "string",
                "minLength": 1,
                "description": "An assertion type (`skilleval plugins` lists them), optionally prefixed by not-.",
            },
            "value": {
                "description": "What the type checks against; its shape depends on the type."
            },
            "threshold": {
                "type": "number",
                "description": "A type-specific bound (score, distance, milliseconds).",
            },
            "weight": {
                "type": "number",
                "minimum": 0,
                "description": "Share of the test's score; 0 makes it metric-only.",
            },
            "metric": {
                "type": "string",
                "minLength": 1,
                "description": "A named score aggregated in the results.",
            },
            "transform": transform,
            "config": {"type": "object", "description": "Free-form settings for plugin types."},
            "reference": {
                "type": "string",
                "description": "llm-rubric: a reference answer shown to the judge.",
            },
            "require": {
                "enum": ["all", "any"],
                "description": "llm-assert: how several statements combine.",
            },
            "rubricPrompt": {
                "description": "llm-rubric: replace the judge prompt (a template string, a message list, or file://)."
            },
            "provider": GRADER,
        },
        AssertionEntry,
    ),
}

test_options: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "provider": GRADER,
        "prefix": {"type": "string", "description": "Text put before the prompt."},
        "suffix": {"type": "string", "description": "Text put after the prompt."},
        "disableVarExpansion": {
            "type": "boolean",
            "description": "Keep list vars whole instead of one test per item.",
        },
        "transform": transform,
        "disableDefaultAsserts": {
            "type": "boolean",
            "description": "Skip defaultTest's assertions for this test.",
        },
        "rubricPrompt": {
            "description": "Judge prompt override for this test's llm-rubric assertions."
        },
        "factuality": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                name: NUMBER_01
                for name in ("subset", "superset", "agree", "disagree", "differButFactual")
            },
            "description": "Category scores for this test's factuality assertions that set none.",
        },
    },
}

test: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "id": {
            "type": "string",
            "pattern": "^[A-Za-z0-9][A-Za-z0-9._:/-]*$",
            "description": "Stable, unique id; defaults to a slug of the description or prompt.",
        },
        "description": {"type": "string"},
        "prompt": {
            "type": "string",
            "minLength": 1,
            "description": "The prompt template for this test (instead of `prompts:`).",
        },
        "vars": {
            "anyOf": [{"type": "object"}, FILE_REF],
            "description": "Template variables; a value may be file://.",
        },
        "should_trigger": {
            "type": "boolean",
            "description": "Whether the skill ought to be picked for this prompt.",
        },
        "split": {
            "enum": ["train", "selection", "confirm"],
            "description": "Pin the test to one of `skilleval improve`'s sets (confirm: only "
            "ever used to confirm a chosen edit).",
        },
        "assert": {"type": "array", "items": {"$ref": "#/$defs/assertion"}},
        "threshold": {
            **NUMBER_01,
            "description": "Weighted score this test needs, instead of every assertion passing.",
        },
        "options": {"$ref": "#/$defs/testOptions"},
        "metadata": {"type": "object"},
        **agentic.TEST_PROPERTIES,
    },
}

decoding: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": with_defaults(
        {
            "mode": {"enum": ["deterministic", "distribution"]},
            "seed": {"type": "integer", "minimum": 0},
            "temperature": {"type": "number", "minimum": 0},
            "top_p": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "max_tokens": {"type": "integer", "minimum": 1},
        },
        Decoding,
    ),
}

prompt_item: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "raw": {"type": "string"},
                "id": {"type": "string"},
                "label": {"type": "string"},
                "config": {
                    "type": "object",
                    "description": "promptfoo's per-prompt provider settings: only `response_format` applies (decoding is set for the whole suite).",
                },
            },
        },
    ]
}


PROVIDER_ENTRY: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "minProperties": 1,
            "properties": {
                "id": {"type": "string", "minLength": 1},
                "label": {"type": "string"},
                "config": {"type": "object"},
            },
        },
    ]
}
"""One promptfoo provider: an id, or a mapping with ``id``, ``label`` and ``config``."""


def model_schema(providers: list[ProviderType]) -> dict[str, Any]:
    """``model:`` and ``judge:``: a shorthand string, or a mapping for one registered provider.

    Each provider's keys apply when ``provider:`` names it. A key no provider takes is left to
    the loader, which says which provider it does not apply to.
    """
    return {
        "description": "`default` (the embedded model), a GGUF path, a provider's name, or a provider mapping.",
        "anyOf": [
            {"type": "string", "minLength": 1},
            {
                "type": "object",
                "properties": {
                    "provider": {
                        "enum": [p.name for p in providers],
                        "description": "Which provider (`skilleval plugins` lists them).",
                    }
                },
                "allOf": [
                    {
                        "if": {
                            "required": ["provider"],
                            "properties": {"provider": {"const": p.name}},
                        },
                        "then": {"properties": p.properties()},
                    }
                    for p in providers
                ],
            },
        ],
    }


_SET_MEMBERS: dict[str, Any] = {
    "type": "array",
    "minItems": 1,
    "items": {"$ref": "#/$defs/assertion"},
    "description": "assert-set: the assertions of the set, written as on a test.",
}


def assertion_schema(manager: PluginManager) -> dict[str, Any]:
    """One assertion: the common keys, and every key a registered type declares for itself.

    Which key applies to which type is checked when the assertion is compiled; here a key
    is known as soon as some type declares it.
    """
    properties = dict(assertion["properties"])
    for spec in manager.entries("assertion"):
        if not isinstance(spec, AssertionType):
            continue
        for key, schema in sorted(spec.options_schema.items()):
            if key not in properties:
                properties[key] = _SET_MEMBERS if key == "assert" else dict(schema)
    return {**assertion, "properties": properties}
