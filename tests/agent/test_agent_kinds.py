"""The built-in tool kinds: mock, command and python, and argument matching."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from agent_support import FakeProvider, agent, call, command_tool, final

from skilleval.agent import MockCase, MockTool, PythonTool
from skilleval.agent.calls import call_tool
from skilleval.api import Check
from skilleval.assertions.builtin import agentic as trajectory_checks
from skilleval.sandbox.process import run_process
from skilleval.suite.agent_config import ToolConfig
from skilleval.trajectory import args_match

# -- mock tools -------------------------------------------------------------------------------


def test_mock_cases_match_by_subset_or_exactly_then_fall_back_to_the_default() -> None:
    mock = MockTool(
        (
            MockCase({"id": "A1", "n": 2}, "exact two", exact=True),
            MockCase({"id": "A1"}, "any A1"),
            MockCase(None, "catch-all"),
        ),
        "default",
    )
    assert mock.run({"id": "A1", "n": 2}, None).output == "exact two"
    assert mock.run({"id": "A1", "n": 3}, None).output == "any A1"
    assert mock.run({"id": "B2"}, None).output == "catch-all"
    assert (
        MockTool((MockCase({"id": "A1"}, "x"),), "default").run({"id": "Z"}, None).output
        == "default"
    )


def test_a_mock_without_a_default_makes_an_unmatched_call_an_error() -> None:
    result = MockTool((MockCase({"id": "A1"}, "x"),)).run({"id": "B"}, None)
    assert result.error == 'the mock has no result for arguments {"id": "B"}'


@pytest.mark.parametrize(
    ("actual", "expected", "exact", "matches"),
    [
        ({"a": 1, "b": 2}, {"a": 1}, False, True),
        ({"a": 1, "b": 2}, {"a": 1}, True, False),
        ({"a": {"x": 1, "y": 2}}, {"a": {"x": 1}}, False, True),
        ({"a": [1, 2]}, {"a": [1]}, False, False),
        ({"a": True}, {"a": 1}, False, False),
        ({"a": 1.0}, {"a": 1}, False, True),
        ({}, {"a": None}, False, False),
    ],
)
def test_argument_matching(
    actual: dict[str, Any], expected: dict[str, Any], exact: bool, matches: bool
) -> None:
    assert args_match(actual, expected, exact=exact) is matches


# -- command tools ----------------------------------------------------------------------------


def test_arguments_reach_a_command_line_shell_quoted(tmp_path: Path) -> None:
    tool = command_tool("echo {text}")
    result, _ = call_tool(tool, {"text": "hi; touch pwned $(touch pwned2)"}, tmp_path)
    assert result.output == "hi; touch pwned $(touch pwned2)"
    assert not (tmp_path / "pwned").exists()
    assert not (tmp_path / "pwned2").exists()


def test_arguments_reach_an_argv_command_verbatim_and_as_env_vars(tmp_path: Path) -> None:
    tool = command_tool(
        (
            "python3",
            "-c",
            "import os,sys; print(sys.argv[1], os.environ['SKILLEVAL_ARG_TEXT'], os.environ['SKILLEVAL_ARGS'])",
            "{text}",
        )
    )
    result, _ = call_tool(tool, {"text": "a b"}, tmp_path)
    assert result.output == 'a b a b {"text": "a b"}'


def test_a_command_runs_in_the_workspace_and_reports_its_exit_code(tmp_path: Path) -> None:
    (tmp_path / "here.txt").write_text("x")
    result, _ = call_tool(command_tool("ls; echo oops >&2; exit 3"), {}, tmp_path)
    assert result.exit_code == 3
    assert result.error is None
    assert result.output == "exit code 3\nhere.txt\nstderr:\noops"


def test_a_hung_command_is_killed_at_its_timeout(tmp_path: Path) -> None:
    start = time.monotonic()
    result, _ = call_tool(command_tool("echo started; sleep 30", timeout=0.5), {}, tmp_path)
    assert time.monotonic() - start < 10
    assert result.timed_out
    assert result.exit_code is None
    assert result.error == "timed out after 0.5 s and was killed"
    assert result.output == "started"


def test_a_timeout_kills_the_commands_children_too(tmp_path: Path) -> None:
    result = run_process(
        "sleep 30 & echo $! > pid; wait", cwd=tmp_path, timeout_s=0.5, max_output=100
    )
    assert result.timed_out
    pid = int((tmp_path / "pid").read_text())
    time.sleep(0.2)
    assert _gone(pid)


def _gone(pid: int) -> bool:
    # A killed orphan may linger as a zombie until its new parent reaps it; that is dead too.
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_huge_output_is_capped_and_marked_truncated(tmp_path: Path) -> None:
    result, _ = call_tool(command_tool("yes | head -c 5000000", cap=1000), {}, tmp_path)
    assert result.truncated
    assert result.exit_code == 0
    assert len(result.output) < 1200
    assert result.output.endswith("[output cut at 1000 bytes per stream]")


def test_a_long_result_is_cut_before_the_model_sees_it(tmp_path: Path) -> None:
    provider = FakeProvider([call("run"), final("ok")])
    run = agent(
        provider, [command_tool("yes | head -c 3000")], workspace=tmp_path, max_observation=100
    )
    assert run.steps[0].truncated
    assert run.messages[3].content.endswith("[result cut at 100 characters]")


def test_a_command_tool_without_a_workspace_is_an_error_step() -> None:
    run = agent(FakeProvider([call("run"), final("ok")]), [command_tool("true")])
    assert run.steps[0].error == "a command tool needs a workspace, and this run has none"


def test_a_missing_program_is_reported_not_raised(tmp_path: Path) -> None:
    result = run_process(["no-such-program-xyz"], cwd=tmp_path, timeout_s=5, max_output=100)
    assert result.error is not None
    assert result.error.startswith("cannot run 'no-such-program-xyz'")


def test_an_argument_over_the_os_limit_is_not_a_call_that_ran(tmp_path: Path) -> None:
    # Linux refuses any one argument over 128 KiB (MAX_ARG_STRLEN) with E2BIG.
    provider = FakeProvider([call("run", text="x" * 300_000), final("ok")])
    run = agent(provider, [command_tool(("printf", "{text}"))], workspace=tmp_path)
    step = run.steps[0]
    assert (step.kind, step.ran) == ("tool", False)
    assert step.error is not None
    assert "Argument list too long" in step.error
    verdict = trajectory_checks.tool_called(Check(output="", value="run", trajectory=run.steps))
    assert not verdict.passed
    assert verdict.reason == (
        "run was never called (1 attempt rejected before running); no tool ran"
    )


def test_a_program_that_cannot_start_is_not_a_call_that_ran(tmp_path: Path) -> None:
    run = agent(
        FakeProvider([call("run"), final("ok")]),
        [command_tool(("no-such-program-xyz",))],
        workspace=tmp_path,
    )
    assert run.steps[0].ran is False
    assert run.tool_calls == 0
    assert run.messages[3].content.startswith("Error from run: cannot run 'no-such-program-xyz'")


@pytest.mark.parametrize("bad", ["a\x00b", "a\ud800b"])
def test_text_execve_cannot_take_is_a_failed_start_not_an_exception(
    tmp_path: Path, bad: str
) -> None:
    as_argv = run_process(["printf", bad], cwd=tmp_path, timeout_s=5, max_output=100)
    as_env = run_process(["true"], cwd=tmp_path, timeout_s=5, max_output=100, env={"X": bad})
    for result in (as_argv, as_env):
        assert result.exit_code is None
        assert result.error is not None
        assert result.error.startswith("cannot run ")


def test_a_python_tools_lone_surrogates_are_replaced_and_recorded(tmp_path: Path) -> None:
    def bad(arguments: dict[str, Any], workspace: Path | None) -> str:
        return "ok\ud800"

    tool = ToolConfig("bad", "", {"type": "object"}, PythonTool("file://t.py:bad", bad))
    run = agent(FakeProvider([call("bad"), final("done")]), [tool], workspace=tmp_path)
    assert run.steps[0].result == "ok\ufffd"
    assert run.steps[0].replaced == ("result: 1 lone surrogate",)
    json.dumps(run.to_json(), ensure_ascii=False).encode("utf-8")
