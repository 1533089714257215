"""Write schemas/suite.schema.json (run by `make schema`; `make schema-check` fails on drift)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

# -- agentic (skilleval/agent/schema.py holds the shapes; docs/agentic.md describes them) --------
from skilleval.agent import schema as agentic

# -- end agentic ------------------------------------------------------------------------------

FILE_REF = {
    "type": "string",
    "pattern": "^file://",
    "description": "A file, relative to this file.",
}
NUMBER_01 = {"type": "number", "minimum": 0, "maximum": 1}

transform = {
    "description": "Applied to the output before the assertions: an expr string, or {jmespath: query} / {expr: ...}.",
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
            },
        },
    ],
}

assertion = {
    "type": "object",
    "description": "One assertion. Prefix any type with not- to negate it.",
    "additionalProperties": False,
    "required": ["type"],
    "properties": {
        "type": {
            "type": "string",
            "minLength": 1,
            "description": "An assertion type (`skilleval plugins` lists them), optionally prefixed by not-.",
        },
        "value": {"description": "What the type checks against; its shape depends on the type."},
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
    },
}

test_options = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "transform": transform,
        "disableDefaultAsserts": {
            "type": "boolean",
            "description": "Skip defaultTest's assertions for this test.",
        },
        "rubricPrompt": {
            "description": "Judge prompt override for this test's llm-rubric assertions."
        },
    },
}

test = {
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
        # -- agentic ---------------------------------------------------------------------------
        "tools": {
            "type": "array",
            "items": {"$ref": "#/$defs/tool"},
            "description": "Tools for this test, added to the suite's (a name here replaces one there).",
        },
        "environment": {"$ref": "#/$defs/environment"},
        "turns": {
            **agentic.TURNS,
            "description": "User messages in order, instead of `prompt:`; `assert:` grades the last turn.",
        },
        "max_steps": agentic.MAX_STEPS,
        # -- end agentic -----------------------------------------------------------------------
    },
}

model = {
    "description": "`default` (the embedded model), a GGUF path, or a provider mapping.",
    "anyOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "provider": {"enum": ["gguf", "openai", "echo", "scripted"]},
                "path": {
                    "type": "string",
                    "minLength": 1,
                    "description": "gguf: `default` or a .gguf file.",
                },
                "n_ctx": {"type": "integer", "minimum": 256},
                "threads": {"type": "integer", "minimum": 1},
                "n_batch": {"type": "integer", "minimum": 1},
                "base_url": {"type": "string", "pattern": "^https?://"},
                "model": {"type": "string", "minLength": 1},
                "api_key_env": {"type": "string", "minLength": 1},
                "timeout": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "description": "Seconds per request.",
                },
                "retries": {"type": "integer", "minimum": 0},
                "responses": {
                    "description": "scripted: rules tried in order, or file://.",
                    "anyOf": [
                        FILE_REF,
                        {"type": "array", "items": {"$ref": "#/$defs/scriptedRule"}},
                    ],
                },
                "default": {
                    "type": "string",
                    "description": "scripted: the reply when no rule matches.",
                },
            },
        },
    ],
}

scripted_rule = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "description": "Answer this test id."},
        "match": {"type": "string", "description": "Answer prompts that this regex finds."},
        "arm": {"type": "string", "description": "Only in this arm (on, off, routed)."},
        "output": {"type": "string"},
        "outputs": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "description": "One reply per trial, cycling.",
        },
    },
}

decoding = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "mode": {"enum": ["deterministic", "distribution"]},
        "seed": {"type": "integer", "minimum": 0},
        "temperature": {"type": "number", "minimum": 0},
        "top_p": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "max_tokens": {"type": "integer", "minimum": 1},
    },
}

prompt_item = {
    "anyOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "raw": {"type": "string"},
                "id": {"type": "string"},
                "label": {"type": "string"},
            },
        },
    ]
}

suite = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://skilleval.dev/schemas/suite.schema.json",
    "title": "skilleval suite",
    "description": "A skilleval test suite. Bind it in an editor with `# yaml-language-server: $schema=<path>/suite.schema.json`.",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "version": {"const": 1, "description": "Format version."},
        "description": {"type": "string"},
        "type": {
            "enum": ["regression", "capability"],
            "description": "regression gates the exit code; capability only reports.",
        },
        "prompts": {
            "anyOf": [
                FILE_REF,
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
        "plugins": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "description": "Folders of custom assertion types, relative to this file.",
        },
        "trials": {"type": "integer", "minimum": 1},
        "threshold": {**NUMBER_01, "description": "Pass rate a regression suite needs."},
        "tests": {
            "anyOf": [
                FILE_REF,
                {"type": "array", "items": {"anyOf": [FILE_REF, {"$ref": "#/$defs/test"}]}},
            ]
        },
        "model": model,
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
            "properties": {
                "alpha": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                "min_lift": {"type": "number", "minimum": 0, "maximum": 1},
                "sidedness": {
                    "enum": ["two-sided", "one-sided"],
                    "description": "two-sided: exact McNemar test; one-sided: exact sign "
                    "test that ON is better. results.json and the reports use the same word.",
                },
            },
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
                "pass_rate": {"type": "string", "pattern": "^\\s*(>=|>|<=|<|==)\\s*[0-9.]+\\s*$"},
                "max_errors": {"type": "integer", "minimum": 0},
            },
        },
        "tags": {"type": "object", "additionalProperties": {"type": "string"}},
        # -- agentic ---------------------------------------------------------------------------
        "tools": {
            "type": "array",
            "items": {"$ref": "#/$defs/tool"},
            "description": "Tools every test may call; a test with tools runs the agent loop.",
        },
        # -- end agentic -----------------------------------------------------------------------
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
    "$defs": {
        "test": test,
        "testOptions": test_options,
        "assertion": assertion,
        "scriptedRule": scripted_rule,
        "decoding": decoding,
        "tool": agentic.TOOL,
        "environment": agentic.ENVIRONMENT,
    },
}


def render() -> str:
    return json.dumps(suite, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    out = Path(__file__).resolve().parent.parent / "schemas" / "suite.schema.json"
    if sys.argv[1:] == ["--check"]:
        if out.read_text(encoding="utf-8") != render():
            print("schemas/suite.schema.json is stale: run `make schema`", file=sys.stderr)
            sys.exit(1)
    else:
        out.write_text(render(), encoding="utf-8")
