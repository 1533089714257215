"""The suite schema, built from the registered plugins.

``schemas/suite.schema.json`` is this schema for the built-ins alone (``make schema`` writes
it, ``make schema-check`` fails on drift); the loader validates each suite against the schema
of the plugins that suite loads, so a plugin's provider or tool kind is checked like a
built-in one.
"""

from __future__ import annotations

import json
from typing import Any

from skilleval.plugins.manager import PluginManager
from skilleval.suite import agentic_schema as agentic
from skilleval.suite.defaults import with_defaults
from skilleval.suite.model import LiftConfig, Suite, TriggerConfig
from skilleval.suite.schema_parts import (
    NUMBER_01,
    PROVIDER_ENTRY,
    TESTS_FILE,
    assertion_schema,
    decoding,
    model_schema,
    prompt_item,
    test,
    test_options,
)


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
                            "runs": {
                                "type": "integer",
                                "minimum": 1,
                                "maximum": 100,
                                "description": "Routing runs per test; above 1 needs "
                                "`decoding: {mode: distribution}`: each run is sampled with "
                                "its own seed and the test triggers when at least `rate` of "
                                "them pick the skill (skill-creator's rule: runs 3, rate 0.5).",
                            },
                            "rate": {
                                "type": "number",
                                "exclusiveMinimum": 0,
                                "maximum": 1,
                                "description": "With `runs` above 1: the share of runs "
                                "that must pick the skill.",
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
                        "side_by_side_fitness": {
                            "type": "string",
                            "pattern": "^\\s*(>=|>|<=|<|==)\\s*[0-9.]+\\s*$",
                            "description": "On the side-by-side judge's fitness (the share of "
                            "the judge-fitness set's pairs where it preferred the good output, "
                            "chance 0.5); fails when it was not checked.",
                        },
                    },
                },
                "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                "compat": {
                    "enum": ["promptfoo"],
                    "description": "Read vars, templates and assertion values as promptfoo does "
                    "(written by `skilleval import promptfoo`); see docs/promptfoo.md.",
                },
                "nunjucksFilters": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "minLength": 1},
                    "description": "promptfoo's template filters: each name's JavaScript file"
                    " (relative to the suite), used in prompts.",
                },
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
