"""Tool calls written in the output, as promptfoo's OpenAI-style checks read them.

promptfoo's OpenAI provider hands these checks the reply's structured ``tool_calls`` (or its
``function_call``); skilleval's output is text, so the calls are read from it as JSON: a
list of ``{type: function, function: {name, arguments}}``, ``{tool_calls: [...]}``, or for a
function call ``{name, arguments}`` or ``{function_call: {...}}``, with ``arguments`` a JSON
text as OpenAI writes it. Output that is not such JSON fails, as a reply without tool calls
fails in promptfoo.

The tools and functions to check against are those the provider declares, as promptfoo reads
them: a promptfoo provider's ``config: {tools: [...], functions: [...]}`` (``file://`` JSON or
YAML files read when the suite loads), handed to these checks' ``config`` by the loader
(``suite.model.with_provider_tools``). A check's own ``config: {tools | functions}`` is read
where the provider declares none (a skilleval suite's model declares none); skilleval does not
send the tools to the model.

``tool-call-f1`` compares the set of tools called with the expected names. On a test that
runs the agent loop, the tools called are the calls that ran; otherwise they are read from
the output's JSON as promptfoo reads them (OpenAI, Anthropic and Gemini shapes, and JSON
blocks on lines of their own in mixed text).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from skilleval.api import Check, Verdict, assertion
from skilleval.assertions.builtin._common import clip, dump
from skilleval.assertions.builtin.structured import schema_problem

_NAMES: dict[str, Any] = {
    "anyOf": [
        {"type": "string"},
        {"type": "array", "minItems": 1, "items": {"type": ["string", "number"]}},
    ],
    "description": "the expected tool names: a list, or a comma-separated text",
}
_MCP_ERROR = re.compile(r"MCP Tool Error \(([^)]+)\): (.+)")
_MCP_RESULT = re.compile(r"MCP Tool Result \(([^)]+)\):")


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _function_problem(call: Any, functions: Sequence[Any]) -> str | None:
    """Why ``call`` is not a valid call of one of ``functions``, or None."""
    if isinstance(call, Mapping) and "function_call" in call:
        call = call["function_call"]
    if (
        not isinstance(call, Mapping)
        or not isinstance(call.get("name"), str)
        or not isinstance(call.get("arguments"), str)
    ):
        return f"not a valid-looking function call: {dump(call)}"
    try:
        args = json.loads(call["arguments"])
    except ValueError as exc:
        return f"the arguments of {call['name']!r} are not JSON: {exc}"
    name = call["name"]
    declared = next(
        (f for f in functions if isinstance(f, Mapping) and f.get("name") == name), None
    )
    schema = declared.get("parameters") if declared is not None else None
    if schema is None:
        return f"called {name!r}, but there is no function with that name"
    from jsonschema.exceptions import SchemaError  # lazy: start-up time

    try:
        problem = schema_problem(schema, args)
    except SchemaError as exc:
        return f"the parameters of {name!r} are not a valid JSON Schema: {clip(exc.message)}"
    return None if problem is None else f"the call to {name!r} does not match its schema {problem}"


@assertion("is-valid-openai-tools-call", value_required=False)
def valid_tools_call(check: Check) -> Verdict:
    """The output's tool calls each name a declared tool with arguments its schema accepts."""
    text = check.output
    if "MCP Tool Error" in text:
        found = _MCP_ERROR.search(text)
        tool, why = (found.group(1), found.group(2)) if found else ("unknown", "unknown error")
        return Verdict.of(False, f"MCP tool call failed for {tool}: {why}")
    if "MCP Tool Result" in text:
        found = _MCP_RESULT.search(text)
        return Verdict.of(
            True, f"MCP tool call succeeded for {found.group(1) if found else 'unknown'}"
        )
    calls = _json(text)
    if isinstance(calls, Mapping) and "tool_calls" in calls:
        calls = calls["tool_calls"]
    if (
        not isinstance(calls, list)
        or not calls
        or not all(
            isinstance(c, Mapping)
            and isinstance(c.get("function"), Mapping)
            and isinstance(c["function"].get("name"), str)
            and isinstance(c["function"].get("arguments"), str)
            for c in calls
        )
    ):
        return Verdict.of(
            False, f"the output is not a valid-looking tools response: {clip(text)!r}"
        )
    tools = check.config.get("tools")
    if not tools:
        return Verdict.of(
            False,
            "no tools are declared (the provider's `config: {tools: [...]}`), but the output"
            " calls tools",
        )
    functions = [
        t["function"]
        for t in tools
        if isinstance(t, Mapping) and t.get("type") == "function" and "function" in t
    ]
    for call in calls:
        problem = _function_problem(call["function"], functions)
        if problem is not None:
            return Verdict.of(False, problem)
    return Verdict.of(True, f"{len(calls)} valid tool call(s)")


def _function_call(check: Check) -> Verdict:
    functions = check.config.get("functions")
    if not functions:
        return Verdict.of(
            False, "no functions are declared (the provider's `config: {functions: [...]}`)"
        )
    problem = _function_problem(_json(check.output) or check.output, list(functions))
    if problem is not None:
        return Verdict.of(False, problem)
    return Verdict.of(True, "a valid function call")


@assertion("is-valid-openai-function-call", value_required=False)
def valid_openai_function_call(check: Check) -> Verdict:
    """The output is a call of a declared function with arguments its schema accepts."""
    return _function_call(check)


@assertion("is-valid-function-call", value_required=False)
def valid_function_call(check: Check) -> Verdict:
    """``is-valid-openai-function-call`` under promptfoo's provider-neutral name."""
    return _function_call(check)


# -- tool-call-f1 ------------------------------------------------------------------------------


def _names_in(data: Any) -> Iterator[str]:
    """Tool names in one parsed JSON value, in the shapes promptfoo recognises."""
    if isinstance(data, Mapping):
        if isinstance(data.get("tool_calls"), list):
            for call in data["tool_calls"]:
                if isinstance(call, Mapping):
                    fn = call.get("function")
                    if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
                        yield fn["name"]
                    if isinstance(call.get("name"), str):
                        yield call["name"]
            return
        if data.get("type") in ("tool_use", "function_call") and isinstance(data.get("name"), str):
            yield data["name"]
            return
        if isinstance(data.get("functionCall"), Mapping):
            if isinstance(data["functionCall"].get("name"), str):
                yield data["functionCall"]["name"]
            return
        if isinstance(data.get("toolCall"), Mapping):
            for fc in data["toolCall"].get("functionCalls") or []:
                if isinstance(fc, Mapping) and isinstance(fc.get("name"), str):
                    yield fc["name"]
        return
    if isinstance(data, list):
        for item in data:
            if not isinstance(item, Mapping):
                continue
            if item.get("type") == "tool_use" and isinstance(item.get("name"), str):
                yield item["name"]
            elif isinstance(item.get("functionCall"), Mapping):
                if isinstance(item["functionCall"].get("name"), str):
                    yield item["functionCall"]["name"]
            elif isinstance(item.get("function"), Mapping):
                if isinstance(item["function"].get("name"), str):
                    yield item["function"]["name"]
            elif isinstance(item.get("name"), str):
                yield item["name"]


_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})")


def _line_blocks(text: str) -> Iterator[Any]:
    """JSON values that start a line and end one, outside Markdown fences."""
    decoder = json.JSONDecoder()
    lines = text.split("\n")
    fence = ""
    offsets = []
    at = 0
    for line in lines:
        offsets.append(at)
        at += len(line) + 1
    i = 0
    while i < len(lines):
        line = lines[i]
        marker = _FENCE.match(line)
        if fence:
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence):
                fence = ""
            i += 1
            continue
        if marker:
            fence = marker.group(1)
            i += 1
            continue
        stripped = line.lstrip()
        if stripped[:1] in ("{", "["):
            start = offsets[i] + len(line) - len(stripped)
            try:
                value, end = decoder.raw_decode(text, start)
            except ValueError:
                i += 1
                continue
            rest = text[end:].split("\n", 1)[0]
            if not rest.strip():
                yield value
                i = text.count("\n", 0, end) + 1
                continue
        i += 1


def called_names(text: str) -> set[str]:
    """The tool names promptfoo finds in an output: its whole JSON, or JSON blocks on lines
    of their own."""
    whole = _json(text)
    if whole is not None or text.strip() == "null":
        return set(_names_in(whole))
    names: set[str] = set()
    for block in _line_blocks(text):
        names.update(_names_in(block))
    return names


def _expected(value: Any) -> list[str]:
    items = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    return [n.strip() for n in items if n.strip()]


def check_names(value: Any) -> str | None:
    """At least one tool name, once the text is split at commas and trimmed."""
    if isinstance(value, str | list) and not _expected(value):
        return "tool-call-f1 needs at least one expected tool name"
    return None


@assertion("tool-call-f1", value=_NAMES, check_value=check_names)
def tool_call_f1(check: Check) -> Verdict:
    """F1 of the set of tools called against the expected names reaches ``threshold``
    (default 1: exactly the expected tools)."""
    expected = set(_expected(check.value))
    if not expected:
        return Verdict.errored("tool-call-f1 needs at least one expected tool name")
    if check.trajectory is not None:
        actual = {s.tool for s in check.trajectory if s.kind == "tool" and s.ran and s.tool}
    else:
        actual = called_names(check.output)
    both = len(expected & actual)
    precision = both / len(actual) if actual else 0.0
    recall = both / len(expected)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    threshold = 1.0 if check.threshold is None else check.threshold
    listed = ", ".join(sorted(actual)) or "(none)"
    return Verdict.of(
        f1 >= threshold,
        f"tool call F1 {f1:.3f} (precision {precision:.3f}, recall {recall:.3f}, threshold"
        f" {threshold:g}); expected [{', '.join(sorted(expected))}], called [{listed}]",
        score=f1,
    )
