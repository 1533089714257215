"""The agentic assertion types: trajectory checks and workspace checks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_support import write

from skilleval.api import Check, Verdict
from skilleval.assertions.builtin import agentic
from skilleval.assertions.builtin import workspace as workspace_checks
from skilleval.plugins.registry import Registry
from skilleval.trajectory import Step

# -- assertions -------------------------------------------------------------------------------


def steps_of(*specs: tuple[str, dict[str, Any], bool]) -> tuple[Step, ...]:
    out = [
        Step(
            index=i,
            turn=0,
            kind="tool",
            tool=tool,
            arguments=args,
            ran=ran,
            error=None if ran else "invalid",
        )
        for i, (tool, args, ran) in enumerate(specs)
    ]
    out.append(Step(index=len(specs), turn=0, kind="final", answer="done"))
    return tuple(out)


TRAJECTORY = steps_of(
    ("search", {"q": "milk", "limit": 5}, True),
    ("search", {"q": "eggs"}, True),
    ("read", {"path": "a"}, False),
    ("read", {"path": "b"}, True),
)


def check(
    fn: Callable[[Check], Any],
    value: Any,
    *,
    steps: tuple[Step, ...] | None = None,
    workspace: Path | None = None,
) -> Verdict:
    trajectory = TRAJECTORY if steps is None else steps
    result = fn(Check(output="", value=value, trajectory=trajectory, workspace=workspace))
    assert isinstance(result, Verdict)
    return result


def test_every_agentic_type_is_a_registered_builtin() -> None:
    registry = Registry()
    registry.load_builtins()
    names = {
        "tool-called",
        "tool-not-called",
        "tool-call-count",
        "max-steps",
        "trajectory",
        "file-exists",
        "file-not-exists",
        "file-contains",
        "file-not-contains",
        "file-matches",
        "run-command",
    }
    assert names <= {spec.name for spec in registry}
    assert all(registry.get(n).tier == "deterministic" for n in names)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("value", "passed", "reason"),
    [
        ("search", True, "search was called 2 times (steps 0, 1)"),
        ("read", True, "read was called once (step 3)"),
        ("write", False, "write was never called; calls: search ×2, read"),
        (
            {"name": "search", "args": {"q": "eggs"}},
            True,
            'search was called with arguments matching {"q":"eggs"} (step 1)',
        ),
        (
            {"name": "search", "args": {"q": "milk"}, "match": "exact"},
            False,
            'search was called 2 times, never with arguments equal to {"q":"milk"}; got {"limit":5,"q":"milk"}, {"q":"eggs"}',
        ),
        (
            {"name": "read", "args": {"path": "a"}},
            False,
            'read was called once, never with arguments matching {"path":"a"}; got {"path":"b"}',
        ),
    ],
)
def test_tool_called(value: Any, passed: bool, reason: str) -> None:
    verdict = check(agentic.tool_called, value)
    assert (verdict.passed, verdict.reason) == (passed, reason)


def test_tool_called_mentions_rejected_attempts() -> None:
    verdict = check(agentic.tool_called, "write", steps=steps_of(("write", {}, False)))
    assert (
        verdict.reason == "write was never called (1 attempt rejected before running); no tool ran"
    )


@pytest.mark.parametrize(
    ("value", "passed", "reason"),
    [
        ("write", True, "write was not called; calls: search ×2, read"),
        ("search", False, "search was called 2 times (steps 0, 1)"),
        (
            {"name": "read", "args": {"path": "a"}},
            True,
            'read was not called with arguments matching {"path":"a"}; calls: search ×2, read',
        ),
        (
            {"name": "read", "args": {"path": "b"}},
            False,
            'read was called with arguments matching {"path":"b"} once (step 3)',
        ),
    ],
)
def test_tool_not_called(value: Any, passed: bool, reason: str) -> None:
    verdict = check(agentic.tool_not_called, value)
    assert (verdict.passed, verdict.reason) == (passed, reason)


@pytest.mark.parametrize(
    ("value", "passed", "reason"),
    [
        (
            {"name": "search", "min": 1, "max": 2},
            True,
            "search was called 2 times; expected at least 1 and at most 2",
        ),
        ({"name": "search", "max": 1}, False, "search was called 2 times; expected at most 1"),
        ({"name": "read", "min": 2}, False, "read was called once; expected at least 2"),
        ({"min": 3}, True, "tools were called 3 times; expected at least 3"),
    ],
)
def test_tool_call_count(value: Any, passed: bool, reason: str) -> None:
    verdict = check(agentic.tool_call_count, value)
    assert (verdict.passed, verdict.reason) == (passed, reason)


def test_tool_call_count_checks_its_bounds_at_load() -> None:
    assert agentic.check_count({"name": "a"}) == "tool-call-count needs `min`, `max` or both"
    assert (
        agentic.check_count({"min": 3, "max": 1})
        == "tool-call-count: min (3) is greater than max (1)"
    )
    assert agentic.check_count({"min": 1}) is None


def test_max_steps() -> None:
    assert check(agentic.max_steps, 5).reason == "the agent took 5 steps (limit 5)"
    assert check(agentic.max_steps, 5).passed
    failed = check(agentic.max_steps, 4)
    assert (failed.passed, failed.reason) == (False, "the agent took 5 steps (limit 4)")


@pytest.mark.parametrize(
    ("value", "passed", "reason"),
    [
        (
            "[?tool=='read' && ran] | length(@) == `1`",
            True,
            "query \"[?tool=='read' && ran] | length(@) == `1`\" gives true, which is truthy",
        ),
        ("[?tool=='write']", False, "query \"[?tool=='write']\" gives [], which is falsy"),
        (
            {"query": "[?ran].tool", "equals": ["search", "search", "read"]},
            True,
            'query \'[?ran].tool\' gives ["search","search","read"]',
        ),
        (
            {"query": "[0].arguments.q", "equals": "eggs"},
            False,
            'query \'[0].arguments.q\' gives "milk", which differs: $ is "milk", expected "eggs"',
        ),
    ],
)
def test_trajectory_queries(value: Any, passed: bool, reason: str) -> None:
    verdict = check(agentic.trajectory, value)
    assert (verdict.passed, verdict.reason) == (passed, reason)


def test_a_bad_trajectory_query_is_caught_at_load() -> None:
    assert agentic.check_query("[?tool==") is not None


def test_trajectory_types_need_a_trajectory() -> None:
    verdict = agentic.tool_called(Check(output="", value="a"))
    assert verdict.error == "this test has no trajectory (it runs no agent loop)"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write(root / "out" / "report.md", "# Report\ntotal: 42\n")
    write(root / "empty.txt", "")
    write(tmp_path / "secret.txt", "password\n")
    (root / "escape").symlink_to(tmp_path / "secret.txt")
    return root


@pytest.mark.parametrize(
    ("fn", "value", "passed", "reason"),
    [
        (workspace_checks.file_exists, "out/report.md", True, "out/report.md exists (19 bytes)"),
        (workspace_checks.file_exists, "out", True, "out exists (a directory)"),
        (
            workspace_checks.file_exists,
            "out/summary.md",
            False,
            "out/summary.md does not exist; its folder has report.md",
        ),
        (workspace_checks.file_not_exists, "out/summary.md", True, "out/summary.md does not exist"),
        (workspace_checks.file_not_exists, "empty.txt", False, "empty.txt exists (0 bytes)"),
        (
            workspace_checks.file_contains,
            {"path": "out/report.md", "value": "total: 42"},
            True,
            "out/report.md contains 'total: 42' at line 2",
        ),
        (
            workspace_checks.file_contains,
            {"path": "out/report.md", "value": 43},
            False,
            "out/report.md lacks '43'; it has 2 lines starting '# Report\\ntotal: 42\\n'",
        ),
        (
            workspace_checks.file_contains,
            {"path": "nope.md", "value": "x"},
            False,
            "nope.md does not exist; its folder has empty.txt, escape, out",
        ),
        (
            workspace_checks.file_contains,
            {"path": "out", "value": "x"},
            False,
            "out is a directory, not a file",
        ),
        (
            workspace_checks.file_contains,
            {"path": "empty.txt", "value": "x"},
            False,
            "empty.txt lacks 'x'; it has no content (0 bytes)",
        ),
        (
            workspace_checks.file_not_contains,
            {"path": "out/report.md", "value": "TODO"},
            True,
            "out/report.md does not contain 'TODO'",
        ),
        (
            workspace_checks.file_not_contains,
            {"path": "out/report.md", "value": "Report"},
            False,
            "out/report.md contains 'Report' at line 1",
        ),
        (
            workspace_checks.file_not_contains,
            {"path": "gone.md", "value": "x"},
            True,
            "gone.md does not exist, so it does not contain 'x'",
        ),
        (
            workspace_checks.file_matches,
            {"path": "out/report.md", "pattern": r"^total: \d+$"},
            True,
            "out/report.md matches /^total: \\d+$/ at line 2: 'total: 42'",
        ),
        (
            workspace_checks.file_matches,
            {"path": "out/report.md", "pattern": "^## "},
            False,
            "out/report.md has no match for /^## /; it has 2 lines starting '# Report\\ntotal: 42\\n'",
        ),
    ],
)
def test_file_checks(
    ws: Path, fn: Callable[[Check], Any], value: Any, passed: bool, reason: str
) -> None:
    verdict = check(fn, value, workspace=ws)
    assert verdict.error is None
    assert (verdict.passed, verdict.reason) == (passed, reason)


@pytest.mark.parametrize(
    ("fn", "value", "error"),
    [
        (
            workspace_checks.file_exists,
            "../secret.txt",
            "'../secret.txt' leads outside the workspace",
        ),
        (
            workspace_checks.file_contains,
            {"path": "/etc/passwd", "value": "root"},
            "'/etc/passwd' is absolute; workspace paths are relative to the workspace",
        ),
        (
            workspace_checks.file_matches,
            {"path": "escape", "pattern": "pass"},
            "'escape' leads outside the workspace through a symlink",
        ),
        (
            workspace_checks.file_not_exists,
            "escape",
            "'escape' leads outside the workspace through a symlink",
        ),
    ],
)
def test_file_paths_that_escape_the_workspace_are_errors(
    ws: Path, fn: Callable[[Check], Any], value: Any, error: str
) -> None:
    verdict = check(fn, value, workspace=ws)
    assert verdict.error == error


def test_file_checks_need_a_workspace() -> None:
    verdict = check(workspace_checks.file_exists, "x")
    assert verdict.error == "this test has no workspace"
    assert check(workspace_checks.run_command, "true").error == "this test has no workspace"


def test_file_paths_are_checked_at_load() -> None:
    assert workspace_checks.check_path("../x") == "'../x' leads outside the workspace"
    assert workspace_checks.check_path({"path": "/x", "value": "y"}) is not None
    assert workspace_checks.check_path("{{ name }}/x") is None
    assert workspace_checks.check_pattern({"path": "a", "pattern": "("}) is not None
    assert workspace_checks.check_run({"command": "x", "stdout": "["}) is not None


@pytest.mark.parametrize(
    ("value", "passed", "reason"),
    [
        ("test -f out/report.md", True, "`test -f out/report.md` exited with 0"),
        (
            {"command": "grep -c total out/report.md", "stdout": r"^1$"},
            True,
            "`grep -c total out/report.md` exited with 0; stdout matches /^1$/",
        ),
        (
            {"command": ["grep", "-q", "missing", "out/report.md"], "exit_code": 1},
            True,
            "`grep -q missing out/report.md` exited with 1",
        ),
        (
            {"command": "echo nope >&2; exit 4"},
            False,
            "`echo nope >&2; exit 4` exited with 4: nope; expected exit code 0",
        ),
        (
            {"command": "echo 3", "stdout": "^42$"},
            False,
            "`echo 3` exited with 0 but its stdout has no match for /^42$/: '3\\n'",
        ),
        (
            {"command": "sleep 20", "timeout": 0.3},
            False,
            "`sleep 20` timed out after 0.3 s and was killed",
        ),
        (
            {"command": ["no-such-program-xyz"]},
            False,
            "`no-such-program-xyz` could not run: cannot run 'no-such-program-xyz': No such file or directory",
        ),
    ],
)
def test_run_command(ws: Path, value: Any, passed: bool, reason: str) -> None:
    verdict = check(workspace_checks.run_command, value, workspace=ws)
    assert (verdict.passed, verdict.reason) == (passed, reason)


@pytest.mark.parametrize(
    "value", [{"command": ["no-such-program-xyz"]}, "no-such-program-xyz --version"]
)
def test_run_command_of_a_program_not_installed_is_an_error(ws: Path, value: Any) -> None:
    verdict = check(workspace_checks.run_command, value, workspace=ws)
    assert verdict.error is not None
    assert "could not run" in verdict.reason


def test_run_command_expecting_127_still_passes_on_it(ws: Path) -> None:
    verdict = check(
        workspace_checks.run_command, {"command": "exit 127", "exit_code": 127}, workspace=ws
    )
    assert verdict.passed
    assert verdict.error is None
