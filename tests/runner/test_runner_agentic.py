"""Agentic suites end to end: loading, planning, running and grading."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from agent_support import FakeProvider, agent, call, final, mock_tool, write

from skilleval.agent import step_schema
from skilleval.engine.testing import ScriptedProvider
from skilleval.errors import ProviderError

# -- suites: loading and running agentic tests ------------------------------------------------

SUITE = """
model:
  provider: scripted
  responses:
    - {match: "Thanks", output: '{"thought": "t", "action": {"final": "You are welcome."}}'}
    - {match: "Result of write_note", output: '{"thought": "d", "action": {"final": "Saved."}}'}
    - {id: notes, output: '{"thought": "w", "action": {"tool": "write_note", "arguments": {"text": "milk"}}}'}
tools:
  - name: write_note
    description: Append a line to notes.txt
    parameters: {type: object, properties: {text: {type: string}}, required: [text]}
    command: "printf '%s\\\\n' {text} >> notes.txt"
defaultTest:
  environment:
    files: [{src: seed.txt, dest: notes.txt}]
tests:
  - id: notes
    vars: {item: milk}
    max_steps: 3
    turns:
      - user: "Add {{item}} to my notes"
        assert:
          - {type: tool-called, value: {name: write_note, args: {text: milk}}}
          - {type: file-contains, value: {path: notes.txt, value: milk}}
          - {type: equals, value: Saved.}
      - user: "Thanks"
    assert:
      - {type: contains, value: welcome}
      - {type: file-matches, value: {path: notes.txt, pattern: "^eggs$"}}
      - {type: max-steps, value: 3}
      - {type: tool-call-count, value: {max: 1}}
  - id: plain
    prompt: "Just answer"
    tools:
      - {name: write_note, description: replaced, mock: {default: ok}}
    assert: [{type: file-exists, value: notes.txt}]
"""


def load(tmp_path: Path, text: str = SUITE) -> Any:
    from skilleval.suite.load import load_suite

    write(tmp_path / "seed.txt", "eggs\n")
    suite, _ = load_suite(write(tmp_path / "suite.yaml", text))
    return suite


def test_a_suite_with_tools_environment_and_turns_loads(tmp_path: Path) -> None:
    suite = load(tmp_path)
    notes, plain = suite.tests
    assert notes.agent is not None
    assert [t.name for t in notes.agent.tools] == ["write_note"]
    assert notes.agent.max_steps == 3
    assert [t.user for t in notes.agent.turns] == ["Add {{item}} to my notes", "Thanks"]
    assert [a.type for a in notes.agent.turns[0].asserts] == [
        "tool-called",
        "file-contains",
        "equals",
    ]
    assert notes.agent.environment is not None
    assert notes.agent.environment.files[0].dest == "notes.txt"
    assert notes.prompt.text == "Add {{item}} to my notes"
    assert len(notes.every_assert) == 7
    assert plain.agent is not None
    assert plain.agent.tools[0].description == "replaced"


def test_a_test_without_agentic_keys_is_a_plain_test(tmp_path: Path) -> None:
    suite = load(
        tmp_path, "model: echo\ntests:\n  - {prompt: hi, assert: [{type: contains, value: hi}]}\n"
    )
    assert suite.tests[0].agent is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "model: echo\ntools:\n  - {name: a, parameters: {type: object, required: 3}, mock: {default: 1}}\ntests: [{prompt: x}]\n",
            "suite.yaml:3:27: error: tool 'a': invalid parameters schema at $.required: 3 is not of type 'array'",
        ),
        (
            "model: echo\ntests:\n  - prompt: x\n    turns: [{user: y}]\n",
            "suite.yaml:3:5: error: a test has `prompt:` or `turns:`, not both",
        ),
        (
            "model: echo\ndefaultTest: {turns: [{user: y}]}\ntests: [{prompt: x}]\n",
            "suite.yaml:2:15: error: `turns` belongs on a test, not on defaultTest",
        ),
        (
            "model: echo\ntests:\n  - turns: [{user: 'hi {{nme}}'}, {user: 'and {{nme}}'}]\n    vars: {name: x}\n",
            "suite.yaml:3:20: error: prompt 'turn 1' uses 'nme', which this test's vars do not define; did you mean 'name'?",
        ),
        (
            "model: echo\ntests:\n  - prompt: x\n    environment: {files: [{src: x, dest: ../y}]}\n",
            "suite.yaml:4:33: error: file not found: x (looked for ",
        ),
        (
            "model: echo\ntests:\n  - turns: [{user: y, assert: [{type: file-exists, value: ../y}]}]\n",
            "suite.yaml:3:59: error: '../y' leads outside the workspace",
        ),
    ],
)
def test_bad_agentic_suites_fail_to_load_with_positions(
    tmp_path: Path, text: str, message: str
) -> None:
    from skilleval.errors import SuiteError

    with pytest.raises(SuiteError) as info:
        load(tmp_path, text)
    found = [f"suite.yaml:{str(d).split('suite.yaml:', 1)[1]}" for d in info.value.diagnostics]
    assert any(f.startswith(message) for f in found), found


def jobs_of(suite: Any, arms: tuple[str, ...] = ("default",)) -> list[Any]:
    from skilleval.runner.plan import plan

    return plan(suite, suite.tests, arms, lambda arm, test: "SKILL" if arm == "on" else None)


def test_an_agentic_job_runs_grades_every_turn_and_cleans_up(tmp_path: Path) -> None:
    from skilleval.runner.agentic import is_agentic, run_job

    suite = load(tmp_path)
    job = jobs_of(suite)[0]
    assert is_agentic(job)
    record = run_job(job, ScriptedProvider(suite.model.config), None)
    assert record.error is None
    assert [(a.type, a.status, a.details.get("turn")) for a in record.asserts] == [
        ("tool-called", "pass", 0),
        ("file-contains", "pass", 0),
        ("equals", "pass", 0),
        ("contains", "pass", None),
        ("file-matches", "pass", None),
        ("max-steps", "pass", None),
        ("tool-call-count", "pass", None),
    ]
    assert record.status == "pass"
    assert record.output == "You are welcome."
    assert record.stats is not None
    assert record.stats.steps == 3
    assert record.stats.tool_calls == 1
    agent_block = record.agent
    assert agent_block is not None
    assert [t.output for t in agent_block.turns] == ["Saved.", "You are welcome."]
    assert agent_block.steps[0].tool == "write_note"
    assert agent_block.turns[0].steps == (0, 1)
    assert record.messages[-1].role == "assistant"
    leftovers = list(Path(os.environ.get("TMPDIR", "/tmp")).glob("skilleval-notes-default-0-*"))
    assert leftovers == []


def test_the_on_arm_gets_the_skill_before_the_tool_guide(tmp_path: Path) -> None:
    from skilleval.runner.agentic import run_job

    suite = load(tmp_path)
    on = next(j for j in jobs_of(suite, ("off", "on")) if j.arm == "on" and j.test.id == "notes")
    record = run_job(on, ScriptedProvider(suite.model.config), None)
    assert record.messages[0].content.startswith("SKILL\n\nYou can use tools.")


def test_a_failed_setup_makes_the_record_an_error(tmp_path: Path) -> None:
    from skilleval.runner.agentic import run_job

    text = SUITE.replace("files: [{src: seed.txt, dest: notes.txt}]", "commands: ['exit 7']")
    suite = load(tmp_path, text)
    record = run_job(jobs_of(suite)[0], ScriptedProvider(suite.model.config), None)
    assert (record.status, record.error) == ("error", "set-up command 1 `exit 7` exited with 7")
    assert record.asserts == ()


def test_a_provider_failure_makes_the_record_an_error_with_its_trajectory(tmp_path: Path) -> None:
    from skilleval.runner.agentic import run_job

    suite = load(tmp_path)
    provider = FakeProvider([call("write_note", text="x"), ProviderError("model crashed")])
    record = run_job(jobs_of(suite)[0], provider, None)
    assert (record.status, record.error) == ("error", "model crashed")
    assert record.agent is not None
    assert len(record.agent.steps) == 1


def test_a_plain_prompt_is_the_single_turn(tmp_path: Path) -> None:
    from skilleval.runner.agentic import run_job

    suite = load(tmp_path)
    job = jobs_of(suite)[1]
    record = run_job(job, FakeProvider([final("done")]), None)
    assert record.agent is not None
    assert record.agent.turns[0].user == "Just answer"
    assert [a.status for a in record.asserts] == ["pass"]


def test_skilleval_run_runs_agentic_tests_in_both_arms(tmp_path: Path, capsys: Any) -> None:
    from skilleval.cli import run_cli

    write(
        tmp_path / "skill" / "SKILL.md",
        "---\nname: notes\ndescription: Keep notes.\n---\nWrite notes.\n",
    )
    text = SUITE.replace("model:", "skill: skill/SKILL.md\nmodel:", 1)
    load(tmp_path, text)
    code = run_cli(["run", str(tmp_path / "suite.yaml"), "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0
    notes = [r for r in document["records"] if r["test_id"] == "notes"]
    assert [(r["arm"], r["status"]) for r in notes] == [("off", "pass"), ("on", "pass")]
    assert [s["tool"] for s in notes[0]["extra"]["agent"]["steps"]] == ["write_note", None, None]
    report = Path(os.environ["SKILLEVAL_HOME"]) / "runs" / document["run_id"] / "report.html"
    assert "Result of write_note" in report.read_text(encoding="utf-8")


def test_the_loop_works_through_an_openai_compatible_server(tmp_path: Path) -> None:
    import httpx

    from skilleval.engine.openai import OpenAIProvider
    from skilleval.engine.openai_provider import OpenAIConfig

    replies = [call("lookup", id="A1"), final("It has shipped.")]
    sent: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append(body)
        content = json.dumps(replies[len(sent) - 1])
        message = {"role": "assistant", "content": content}
        return httpx.Response(
            200,
            json={
                "choices": [{"message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 12},
            },
        )

    spec = OpenAIConfig(base_url="http://test/v1", model="m")
    with OpenAIProvider(spec, transport=httpx.MockTransport(handler)) as provider:
        run = agent(provider, [mock_tool()])
    assert run.final == "It has shipped."
    assert [s.kind for s in run.steps] == ["tool", "final"]
    tools = [mock_tool()]
    assert sent[0]["response_format"]["json_schema"]["schema"] == step_schema(tools)
    assert [m["role"] for m in sent[1]["messages"]] == ["system", "user", "assistant", "user"]


# -- hostile inputs: text the model writes, arguments too big, SIGTERM ------------------------

HOSTILE = r"""
model:
  provider: scripted
  responses:
    - {match: "Result of echo", output: '{"thought": "d", "action": {"final": "done"}}'}
    - {match: "Error from echo", output: '{"thought": "d", "action": {"final": "gave up"}}'}
    - {id: nul, output: '{"thought": "w", "action": {"tool": "echo", "arguments": {"text": "a\u0000b"}}}'}
    - {id: surrogate, output: '{"thought": "w\ud800", "action": {"tool": "echo", "arguments": {"text": "x\udfffy"}}}'}
tools:
  - name: echo
    parameters: {type: object, properties: {text: {type: string}}, required: [text]}
    command: [printf, "%s", "{text}"]
tests:
  - {id: nul, prompt: go, max_steps: 2, assert: [{type: tool-called, value: echo}, {type: equals, value: done}]}
  - {id: surrogate, prompt: go, max_steps: 2, assert: [{type: tool-called, value: echo}]}
"""


def test_a_nul_byte_or_a_lone_surrogate_in_an_argument_is_replaced_and_recorded(
    tmp_path: Path, capsys: Any
) -> None:
    from skilleval.cli import run_cli

    write(tmp_path / "suite.yaml", HOSTILE)
    code = run_cli(["run", str(tmp_path / "suite.yaml"), "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0, document
    steps = {r["test_id"]: r["extra"]["agent"]["steps"][0] for r in document["records"]}
    assert steps["nul"]["arguments"] == {"text": "a\ufffdb"}
    assert steps["nul"]["ran"] is True
    assert steps["nul"]["result"] == "a\ufffdb"
    assert steps["nul"]["replaced"] == ["action.arguments.text: 1 NUL byte"]
    assert steps["surrogate"]["thought"] == "w\ufffd"
    assert steps["surrogate"]["replaced"] == [
        "thought: 1 lone surrogate",
        "action.arguments.text: 1 lone surrogate",
    ]
    run_dir = Path(os.environ["SKILLEVAL_HOME"]) / "runs" / document["run_id"]
    lines = (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2


STALLING = """
model:
  provider: scripted
  responses:
    - {id: stall, output: '{"thought": "w", "action": {"tool": "wait", "arguments": {}}}'}
tools:
  - {name: wait, command: "touch started; sleep 60", timeout: 120}
tests:
  - id: stall
    prompt: go
    environment: {commands: ["%s"], timeout: 120}
"""


@pytest.mark.parametrize(
    "setup", ["touch started; sleep 60", "true"], ids=["during-setup", "during-a-tool"]
)
def test_sigterm_removes_the_workspace_as_ctrl_c_does(tmp_path: Path, setup: str) -> None:
    import signal
    import subprocess
    import sys
    import time

    temp = tmp_path / "tmp"
    temp.mkdir()
    write(tmp_path / "suite.yaml", STALLING % setup)
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": str(Path(__file__).parents[2])}
    stderr = tmp_path / "stderr.txt"
    with stderr.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "skilleval", "run", str(tmp_path / "suite.yaml")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + 60
        while not list(temp.glob("skilleval-*/started")):
            assert proc.poll() is None, stderr.read_text()
            assert time.monotonic() < deadline, "the workspace never started"
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert code == 130, stderr.read_text()
    assert list(temp.glob("skilleval-*")) == []


def test_an_agentic_test_sees_the_cost_of_a_local_model(tmp_path: Path, capsys: Any) -> None:
    from skilleval.cli import run_cli

    text = """
    model:
      provider: scripted
      responses: [{id: c, output: '{"thought": "t", "action": {"final": "ok"}}'}]
    tests:
      - {id: c, prompt: go, max_steps: 1, assert: [{type: cost, value: 0.01}]}
    """
    write(tmp_path / "suite.yaml", text)
    assert run_cli(["run", str(tmp_path / "suite.yaml"), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)["records"][0]
    assert record["asserts"][0]["reason"] == "cost was $0 (max $0.01)"
