"""Reading tools and environments from a suite into typed config."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_support import KINDS, doc_of, messages, mock_tool, write

from skilleval.agent.calls import call_tool
from skilleval.errors import Location
from skilleval.suite.agentic import merge_tools, parse_tools

# -- python tools and parsing -----------------------------------------------------------------


TOOLS_YAML = """
tools:
  - name: lookup
    description: Look up an order
    parameters:
      type: object
      properties: {id: {type: string}}
      required: [id]
    mock:
      results:
        - {args: {id: A1}, result: {status: shipped}}
      default: unknown
  - name: count
    parameters: {type: object, properties: {word: {type: string}}}
    command: grep -c {word} notes.txt
    timeout: 3
  - name: peek
    python: file://tools.py:peek
  - name: size
    python: helpers.py:size
"""


def test_tools_parse_from_yaml_with_every_implementation(tmp_path: Path) -> None:
    write(
        tmp_path / "tools.py",
        "def peek(arguments, workspace):\n    return sorted(p.name for p in workspace.iterdir())\n",
    )
    write(
        tmp_path / "plugins" / "helpers.py",
        "def size(arguments, workspace):\n    return {'n': 3}\n",
    )
    write(tmp_path / "notes.txt", "milk\nmilk\n")
    tools, diags = parse_tools(
        doc_of(TOOLS_YAML),
        ["tools"],
        kinds=KINDS,
        base_dir=tmp_path,
        plugin_dirs=[tmp_path / "plugins"],
    )
    assert diags == []
    by_name = {t.name: t for t in tools}
    assert [t.impl.kind for t in tools] == ["mock", "command", "python", "python"]
    assert call_tool(by_name["lookup"], {"id": "A1"}, None)[0].output == '{"status": "shipped"}'
    assert call_tool(by_name["count"], {"word": "milk"}, tmp_path)[0].output == "2"
    assert call_tool(by_name["peek"], {}, tmp_path)[0].output.startswith('["notes.txt"')
    assert call_tool(by_name["size"], {}, tmp_path)[0].output == '{"n": 3}'
    assert by_name["lookup"].where == Location("suite.yaml", 2, 5)


def test_a_python_tool_that_raises_is_an_error_result(tmp_path: Path) -> None:
    write(tmp_path / "tools.py", "def boom(arguments, workspace):\n    raise KeyError('nope')\n")
    tools, diags = parse_tools(
        doc_of("tools:\n  - {name: boom, python: 'file://tools.py:boom'}\n"),
        ["tools"],
        kinds=KINDS,
        base_dir=tmp_path,
    )
    assert diags == []
    assert call_tool(tools[0], {}, tmp_path)[0].error == "KeyError: 'nope'"


BAD_TOOLS = {
    "invalid parameter schema": (
        "tools:\n  - name: a\n    parameters: {type: object, properties: {x: {type: strng}}}\n    mock: {default: 1}\n",
        "suite.yaml:3:17: error: tool 'a': invalid parameters schema at $.properties.x.type: "
        "'strng' is not valid under any of the given schemas",
    ),
    "parameters not an object": (
        "tools:\n  - {name: a, parameters: {type: string}, mock: {default: 1}}\n",
        "suite.yaml:2:27: error: tool 'a': parameters must describe an object (type: object), not type 'string'",
    ),
    "duplicate name": (
        "tools:\n  - {name: a, mock: {default: 1}}\n  - {name: a, mock: {default: 2}}\n",
        "suite.yaml:3:12: error: duplicate tool name 'a' (first at suite.yaml:2:12)",
    ),
    "no implementation": (
        "tools:\n  - {name: a}\n",
        "suite.yaml:2:5: error: tool 'a' needs an implementation: mock, command or python",
    ),
    "two implementations": (
        "tools:\n  - {name: a, mock: {default: 1}, command: ls}\n",
        "suite.yaml:2:35: error: tool 'a' has both mock and command; give exactly one",
    ),
    "unknown implementation": (
        "tools:\n  - {name: a, http: 'http://x'}\n",
        "suite.yaml:2:15: error: unknown key 'http'",
    ),
    "placeholder that is no parameter": (
        "tools:\n  - {name: a, command: 'cat {path}'}\n",
        "suite.yaml:2:24: error: command uses {path}, which is not a parameter of tool 'a'",
    ),
    "timeout on a mock": (
        "tools:\n  - {name: a, mock: {default: 1}, timeout: 3}\n",
        "suite.yaml:2:35: error: 'timeout' applies to command tools only",
    ),
    "python file missing": (
        "tools:\n  - {name: a, python: 'file://nope.py:f'}\n",
        "suite.yaml:2:23: error: python tool file not found: nope.py (looked in ",
    ),
    "python function missing": (
        "tools:\n  - {name: a, python: 'file://tools.py:nope'}\n",
        "suite.yaml:2:23: error: tools.py has no function 'nope'",
    ),
    "python reference malformed": (
        "tools:\n  - {name: a, python: tools.py}\n",
        "suite.yaml:2:23: error: python tool must be file://path.py:function or module.py:function, not 'tools.py'",
    ),
    "bad name": (
        "tools:\n  - {name: 'two words', mock: {default: 1}}\n",
        "suite.yaml:2:12: error: 'name': 'two words' does not match",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_TOOLS), ids=lambda c: c.replace(" ", "-"))
def test_bad_tool_declarations_are_positioned_diagnostics(case: str, tmp_path: Path) -> None:
    text, expected = BAD_TOOLS[case]
    write(tmp_path / "tools.py", "def peek(arguments, workspace):\n    return 1\n")
    _, diags = parse_tools(doc_of(text), ["tools"], kinds=KINDS, base_dir=tmp_path)
    assert len(diags) == 1, messages(diags)
    assert messages(diags)[0].startswith(expected)


def test_later_tool_levels_replace_earlier_ones_by_name() -> None:
    a1, b, a2 = mock_tool("a"), mock_tool("b"), mock_tool("a", default="test-level")
    assert merge_tools([a1, b], [a2]) == (a2, b)
