"""Workspaces: set-up, isolation, paths kept inside, and clean-up."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_support import FakeProvider, agent, call, doc_of, final, messages, write

from skilleval.agent import AgentRun, CommandTool, create_workspace
from skilleval.api import Check
from skilleval.assertions.builtin import workspace as workspace_checks
from skilleval.errors import Location, PathEscape
from skilleval.suite.agent_config import EnvironmentConfig, FileCopy, SetupCommand, ToolConfig
from skilleval.suite.agentic import parse_environment
from skilleval.util.workpath import resolve_inside

# -- workspaces -------------------------------------------------------------------------------


def test_a_workspace_gets_its_files_and_runs_its_commands(tmp_path: Path) -> None:
    write(tmp_path / "fixtures" / "app" / "main.py", "print('hi')\n")
    write(tmp_path / "fixtures" / "notes.txt", "milk\n")
    doc = doc_of(
        """
        environment:
          files:
            - {src: fixtures/app, dest: src}
            - fixtures/notes.txt
            - {src: fixtures/notes.txt, dest: deep/er/copy.txt}
          commands:
            - python3 src/main.py > out.txt
            - [touch, made-by-argv]
        """
    )
    env, diags = parse_environment(doc, ["environment"], base_dir=tmp_path)
    assert diags == []
    assert env is not None
    with create_workspace(env, label="t/1 on 0") as ws:
        assert ws.error is None
        names = sorted(str(p.relative_to(ws.path)) for p in ws.path.rglob("*") if p.is_file())
        assert names == ["deep/er/copy.txt", "made-by-argv", "notes.txt", "out.txt", "src/main.py"]
        assert (ws.path / "out.txt").read_text() == "hi\n"
        assert "skilleval-t_1_on_0-" in ws.path.name
        root = ws.path
    assert not root.exists()


def test_every_run_gets_a_fresh_workspace_so_arms_never_share_files(tmp_path: Path) -> None:
    write(tmp_path / "seed.txt", "original\n")
    env = EnvironmentConfig(files=(FileCopy(tmp_path / "seed.txt", "seed.txt", Location("x")),))
    tool = ToolConfig(
        "write",
        "",
        {"type": "object", "properties": {"text": {"type": "string"}}},
        CommandTool("printf %s {text} > seed.txt; touch {text}.marker"),
    )
    seen = {}
    for arm in ("off", "on"):
        with create_workspace(env, label=f"t-{arm}-0") as ws:
            seen[arm] = sorted(p.name for p in ws.path.iterdir())
            assert (ws.path / "seed.txt").read_text() == "original\n"
            agent(FakeProvider([call("write", text=arm), final("ok")]), [tool], workspace=ws.path)
            assert (ws.path / "seed.txt").read_text() == arm
    assert seen == {"off": ["seed.txt"], "on": ["seed.txt"]}


@pytest.mark.parametrize(
    ("rel", "message"),
    [
        ("../outside.txt", "'../outside.txt' leads outside the workspace"),
        ("a/../../outside.txt", "'a/../../outside.txt' leads outside the workspace"),
        ("/etc/passwd", "'/etc/passwd' is absolute; workspace paths are relative to the workspace"),
        ("~/x", "'~/x' is absolute; workspace paths are relative to the workspace"),
        ("link/secret.txt", "'link/secret.txt' leads outside the workspace through a symlink"),
        ("filelink", "'filelink' leads outside the workspace through a symlink"),
    ],
)
def test_paths_that_escape_the_workspace_are_rejected(
    tmp_path: Path, rel: str, message: str
) -> None:
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    write(outside / "secret.txt", "s")
    root.mkdir()
    (root / "link").symlink_to(outside)
    (root / "filelink").symlink_to(outside / "secret.txt")
    with pytest.raises(PathEscape) as info:
        resolve_inside(root, rel)
    assert str(info.value) == message


def test_a_symlink_loop_is_rejected_not_raised(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(PathEscape, match="'a/x' cannot be resolved: it is a symlink loop"):
        resolve_inside(tmp_path, "a/x")
    verdict = workspace_checks.file_exists(Check(output="", value="a/x", workspace=tmp_path))
    assert verdict.error == "'a/x' cannot be resolved: it is a symlink loop"


def test_paths_inside_the_workspace_resolve(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "inner").symlink_to(tmp_path / "sub")
    assert resolve_inside(tmp_path, "a/../b.txt") == tmp_path.resolve() / "b.txt"
    assert resolve_inside(tmp_path, "inner/x") == (tmp_path / "sub" / "x").resolve()
    assert resolve_inside(tmp_path, ".") == tmp_path.resolve()


def test_a_malformed_environment_is_a_positioned_diagnostic(tmp_path: Path) -> None:
    doc = doc_of("environment:\n  files: [{src: a.txt, dst: b.txt}]\n  commands: [ls, 3]\n")
    env, diags = parse_environment(doc, ["environment"], base_dir=tmp_path)
    assert env is None
    assert messages(diags) == [
        "suite.yaml:2:24: error: unknown key 'dst'; did you mean 'dest'?",
        "suite.yaml:3:18: error: 'commands' must be a string or a list, not a number",
    ]


def test_bad_environment_files_are_positioned_diagnostics(tmp_path: Path) -> None:
    outside = write(tmp_path / "secret.txt", "s")
    write(tmp_path / "fixtures" / "ok.txt", "x")
    (tmp_path / "fixtures" / "escape").symlink_to(outside)
    doc = doc_of(
        """
        environment:
          files:
            - {src: missing.txt}
            - {src: fixtures/ok.txt, dest: ../up.txt}
            - {src: fixtures/ok.txt, dest: /abs.txt}
            - {src: fixtures}
        """
    )
    env, diags = parse_environment(doc, ["environment"], base_dir=tmp_path)
    assert env is None
    assert messages(diags) == [
        f"suite.yaml:3:13: error: file not found: missing.txt (looked for {tmp_path / 'missing.txt'})",
        "suite.yaml:4:36: error: dest: '../up.txt' leads outside the workspace",
        "suite.yaml:5:36: error: dest: '/abs.txt' is absolute; workspace paths are relative to the workspace",
        "suite.yaml:6:13: error: fixtures holds a symlink that points outside it: escape",
    ]


def test_a_copy_through_a_symlink_made_by_an_earlier_copy_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    (fixture / "link").symlink_to("/tmp")
    write(tmp_path / "payload.txt", "p")
    env = EnvironmentConfig(
        files=(
            FileCopy(fixture, ".", Location("x")),
            FileCopy(tmp_path / "payload.txt", "link/payload.txt", Location("x")),
        )
    )
    with create_workspace(env) as ws:
        assert ws.error == (
            "set-up: cannot copy payload.txt to link/payload.txt: "
            "'link/payload.txt' leads outside the workspace through a symlink"
        )


def test_a_failing_setup_command_is_an_error_and_stops_setup(tmp_path: Path) -> None:
    env = EnvironmentConfig(
        commands=(
            SetupCommand("echo building; echo 'no such target' >&2; exit 2", Location("x")),
            SetupCommand("touch never", Location("x")),
        )
    )
    with create_workspace(env) as ws:
        assert ws.error == (
            "set-up command 1 `echo building; echo 'no such target' >&2; exit 2` "
            "exited with 2: no such target"
        )
        assert not (ws.path / "never").exists()
        assert ws.setup[0].stdout == "building\n"
    failed = AgentRun.failed(ws.error)
    assert (failed.error, failed.final, failed.steps) == (ws.error, "", ())


def test_a_hung_setup_command_is_killed_and_is_an_error() -> None:
    env = EnvironmentConfig(commands=(SetupCommand("sleep 30", Location("x")),), timeout_s=0.3)
    with create_workspace(env) as ws:
        assert ws.error == "set-up command 1 `sleep 30` timed out after 0.3 s and was killed"


def test_a_kept_workspace_survives_cleanup() -> None:
    ws = create_workspace(None, keep=True)
    ws.cleanup()
    assert ws.path.is_dir()
    ws.path.rmdir()
