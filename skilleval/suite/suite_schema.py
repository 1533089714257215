"""The suite schema, built from the registered plugins.

``schemas/suite.schema.json`` is this schema for the built-ins alone (``make schema`` writes
it, ``make schema-check`` fails on drift); the loader validates each suite against the schema
of the plugins that suite loads, so a plugin's provider or tool kind is checked like a
built-in one.
"""

from __future__ import annotations

import json
from typing import Any

from skilleval.api import AssertionType
from skilleval.plugins.manager import PluginManager
from skilleval.plugins.markers import ProviderType
from skilleval.suite import agentic_schema as agentic
from skilleval.suite.defaults import with_defaults
from skilleval.suite.model import AssertionEntry, LiftConfig, Suite, TriggerConfig
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

GRADER: dict[str, Any] = {
    "description": "promptfoo's grader: becomes `judge:` (one per suite). A provider id"
    " (echo, file://model.gguf, openai:chat:NAME with config.apiBaseUrl, ollama:NAME) or {id, config}.",
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
                    "description": "promptfoo's per-prompt provider settings: refused (decoding is set for the whole suite).",
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


def suite_schema(manager: PluginManager) -> dict[str, Any]:
    """The JSON Schema of a suite that may use what ``manager`` has registered."""
    model = model_schema(manager.providers())
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://skilleval.dev/schemas/suite.schema.json",
        "title": "skilleval suite",
        "description": "A skilleval test suite. Bind it in an editor with `# yaml-language-server: $schema=<path>/suite.schema.json`.",
        "type": "object",
        "additionalProperties": False,
        "properties": with_defaults(
            {
                "version": {"const": 1, "description": "Format version."},
                "description": {"type": "string"},
                "type": {
                    "enum": ["regression", "capability"],
                    "description": "regression gates the exit code; capability only reports.",
                },
                "prompts": {
                    "anyOf": [
                        {
                            "type": "string",
                            "minLength": 1,
                            "description": "One prompt, or a prompt file (its path, file:// optional, ending .txt, .md, .j2, .json, .jsonl, .yaml or .csv).",
                        },
                        {"type": "array", "minItems": 1, "items": prompt_item},
                        {
                            "type": "object",
                            "minProperties": 1,
                            "additionalProperties": {"type": "string"},
                            "description": "promptfoo's older form: {prompt or file://: label}.",
                        },
                    ]
                },
                "defaultTest": {"$ref": "#/$defs/test", "description": "Merged into every test."},
                "assertionTemplates": {
                    "type": "object",
                    "additionalProperties": {"$ref": "#/$defs/assertion"},
                    "description": "Named assertions, used with `$ref: '#/assertionTemplates/NAME'`.",
                },
                "plugins": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "description": "Folders of plugins (assertion types, providers, output formats, tool kinds), relative to this file.",
                },
                "trials": {"type": "integer", "minimum": 1},
                "threshold": {**NUMBER_01, "description": "Pass rate a regression suite needs."},
                "tests": {
                    "anyOf": [
                        TESTS_FILE,
                        {
                            "type": "array",
                            "items": {"anyOf": [TESTS_FILE, {"$ref": "#/$defs/test"}]},
                        },
                    ]
                },
                "scenarios": {
                    "type": "array",
                    "description": "promptfoo's scenarios: each `config` entry crossed with each of the `tests`.",
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["config"],
                        "properties": {
                            "description": {"type": "string"},
                            "config": {
                                "type": "array",
                                "minItems": 1,
                                "items": {"$ref": "#/$defs/test"},
                            },
                            "tests": {"type": "array", "items": {"$ref": "#/$defs/test"}},
                        },
                    },
                },
                "model": model,
                "models": {
                    "type": "array",
                    "minItems": 1,
                    "items": model,
                    "description": "Several models side by side: every test runs on each, and the report has one column per model. Each item is what `model:` takes.",
                },
                **{
                    key: {
                        "description": "promptfoo's list of provider ids, read as `models:` (see docs/promptfoo.md).",
                        "anyOf": [
                            {"type": "string", "minLength": 1},
                            {"type": "array", "minItems": 1, "items": PROVIDER_ENTRY},
                        ],
                    }
                    for key in ("providers", "targets")
                },
                "judge": {
                    **model,
                    "description": "The grader for llm-rubric and llm-assert; defaults to the generator. Always greedy.",
                },
                "decoding": {"$ref": "#/$defs/decoding"},
                "skill": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The skill under test: a SKILL.md (or its folder), relative to this file.",
                },
                "skills": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "description": "Other skills present when routing (distractors).",
                },
                "arms": {
                    "type": "array",
                    "minItems": 1,
                    "uniqueItems": True,
                    "items": {"enum": ["on", "off", "routed"]},
                    "description": "Which arms run; default [off, on] when a skill is set.",
                },
                "lift": {
                    "type": "object",
                    "additionalProperties": False,
                    "description": "How the ON-vs-OFF lift is judged.",
                    "properties": with_defaults(
                        {
                            "alpha": {
                                "type": "number",
                                "exclusiveMinimum": 0,
                                "exclusiveMaximum": 1,
                            },
                            "min_lift": {"type": "number", "minimum": 0, "maximum": 1},
                            "sidedness": {
                                "enum": ["two-sided", "one-sided"],
                                "description": "two-sided: exact McNemar test; one-sided: exact sign "
                                "test that ON is better. results.json and the reports use the same word.",
                            },
                        },
                        LiftConfig,
                    ),
                },
                "trigger": {
                    "type": "object",
                    "additionalProperties": False,
                    "description": "How triggering is measured; needs `skill:`.",
                    "properties": with_defaults(
                        {
                            "calibrate": {
                                "type": "boolean",
                                "description": "Also report contextual calibration: each "
                                "router margin minus the margin of a content-free request, "
                                "beside the raw figures.",
                            },
                        },
                        TriggerConfig,
                    ),
                },
                "gate": {
                    "type": "object",
                    "additionalProperties": False,
                    "description": "Extra conditions the run must meet (exit 1 otherwise).",
                    "properties": {
                        "lift": {"enum": ["helps", "not-hurts"]},
                        "trigger_accuracy": {
                            "type": "string",
                            "pattern": "^\\s*(>=|>|<=|<|==)\\s*[0-9.]+\\s*$",
                        },
                        "pass_rate": {
                            "type": "string",
                            "pattern": "^\\s*(>=|>|<=|<|==)\\s*[0-9.]+\\s*$",
                        },
                        "max_errors": {"type": "integer", "minimum": 0},
                        "judge_fitness": {
                            "type": "string",
                            "pattern": "^\\s*(>=|>|<=|<|==)\\s*[0-9.]+\\s*$",
                            "description": "On the judge's fitness (accuracy on the judge-fitness "
                            "set, chance 0.5); fails when the judge was not checked.",
                        },
                    },
                },
                "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                "outputPath": {
                    "anyOf": [
                        {"type": "string", "minLength": 1},
                        {
                            "type": "array",
                            "minItems": 1,
                            "items": {"type": "string", "minLength": 1},
                        },
                    ],
                    "description": "Files to write after a run, as `-o` does (used when `-o` is not given); relative to this file.",
                },
                "evaluateOptions": {
                    "type": "object",
                    "additionalProperties": False,
                    "description": "promptfoo's run settings; the command line wins.",
                    "properties": {
                        "maxConcurrency": {
                            "type": "integer",
                            "minimum": 1,
                            "description": "Parallel requests (as `--jobs`).",
                        },
                        "repeat": {
                            "type": "integer",
                            "minimum": 1,
                            "description": "Trials per test (as `trials:`).",
                        },
                        "delay": {
                            "type": "integer",
                            "minimum": 0,
                            "description": "Milliseconds to wait after each model call.",
                        },
                        "cache": {
                            "type": "boolean",
                            "description": "false: call the model even when a cached reply exists (as `--no-cache`).",
                        },
                        "showProgressBar": {
                            "type": "boolean",
                            "description": "Accepted; `-q` is how skilleval quiets a run.",
                        },
                    },
                },
                "derivedMetrics": {
                    "type": "array",
                    "description": "Formulas over the named metrics' totals per arm (expr; `__count` is the number of results).",
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["name", "value"],
                        "properties": {
                            "name": {"type": "string", "minLength": 1},
                            "value": {"type": "string", "minLength": 1},
                        },
                    },
                },
                "env": {
                    "type": "object",
                    "additionalProperties": {"type": ["string", "number", "boolean"]},
                    "description": "Environment variables set for the run (never written to results).",
                },
                **agentic.SUITE_PROPERTIES,
                "metadata": {"type": "object"},
                # -- lint (skilleval/lint; the checks are listed in docs/lint.md) ----------------------
                "lint": {
                    "type": "object",
                    "additionalProperties": False,
                    "description": "Settings for `skilleval lint`.",
                    "properties": {
                        "ignore": {
                            "type": "array",
                            "description": "Checks this suite silences; each finding still shows, with the reason.",
                            "items": {
                                "type": "object",
                                "additionalProperties": False,
                                "required": ["id", "reason"],
                                "properties": {
                                    "id": {
                                        "type": "string",
                                        "pattern": "^([Ss][Ee][0-9]{3}|[a-z][a-z0-9-]*)$",
                                        "description": "A check id (SE202) or name (prompt-echoes-skill).",
                                    },
                                    "reason": {
                                        "type": "string",
                                        "minLength": 1,
                                        "description": "Why the finding does not apply; shown beside it.",
                                    },
                                },
                            },
                        },
                    },
                },
                # -- end lint ---------------------------------------------------------------------------
            },
            Suite,
        ),
        "$defs": {
            "test": test,
            "testOptions": test_options,
            "assertion": assertion_schema(manager),
            "decoding": decoding,
            "tool": agentic.tool_schema(manager.tool_kinds()),
            "environment": agentic.ENVIRONMENT,
        },
    }


def render(manager: PluginManager) -> str:
    """The schema as the file ``schemas/suite.schema.json`` holds it."""
    return json.dumps(suite_schema(manager), indent=2, ensure_ascii=False) + "\n"
