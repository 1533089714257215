"""Per-run workspaces: a fresh temporary folder, seeded with files and set-up commands.

Every test × arm × trial gets its own folder, so the arms never see each other's files. What
goes in is the test's :class:`~skilleval.suite.agent_config.EnvironmentConfig`; every copy
goes through :func:`~skilleval.util.workpath.resolve_inside`, so nothing lands outside.

A workspace is removed when its ``with`` block ends, also when Ctrl-C (SIGINT) unwinds it.
:func:`sigterm_as_interrupt` makes SIGTERM unwind the same way, and any workspace still live
when the interpreter exits is removed then.
"""

from __future__ import annotations

import atexit
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from skilleval.errors import PathEscape
from skilleval.sandbox.process import ProcessResult, run_in
from skilleval.suite.agent_config import EnvironmentConfig, FileCopy
from skilleval.util.signals import sigterm_as_interrupt as sigterm_as_interrupt
from skilleval.util.workpath import resolve_inside

SETUP_MAX_OUTPUT = 64_000
_LABEL = re.compile(r"[^A-Za-z0-9_.-]+")

_live: set[Path] = set()
_live_lock = threading.Lock()


@dataclass
class Workspace:
    """A temporary folder for one run; remove it with :meth:`cleanup` or a ``with`` block.

    Attributes:
        path: The folder.
        setup: What each set-up command did, in order.
        error: Why set-up failed, or None. A run whose set-up failed is an ``error`` result,
            not a ``fail``: the model never had a fair chance.
    """

    path: Path
    setup: list[ProcessResult] = field(default_factory=list)
    error: str | None = None
    keep: bool = False

    def cleanup(self) -> None:
        with _live_lock:
            _live.discard(self.path)
        if not self.keep:
            shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()


def create_workspace(
    environment: EnvironmentConfig | None,
    *,
    label: str = "",
    parent: Path | None = None,
    keep: bool = False,
) -> Workspace:
    """Make a fresh folder, copy the files in, then run the set-up commands in order.

    Never raises for a bad environment: the first failure is recorded in ``error`` and
    nothing after it runs.

    Args:
        environment: What to put in; None gives an empty workspace.
        label: Readable part of the folder name (test id, arm, trial).
        parent: Where to create it (the system temporary folder by default).
        keep: Leave the folder behind on cleanup (for debugging).
    """
    prefix = f"skilleval-{_LABEL.sub('_', label)[:60]}-" if label else "skilleval-"
    root = Path(tempfile.mkdtemp(prefix=prefix, dir=parent)).resolve()
    workspace = Workspace(root, keep=keep)
    if not keep:
        with _live_lock:
            _live.add(root)
    if environment is None:
        return workspace
    try:
        _set_up(workspace, environment)
    except BaseException:
        # An interrupt during a set-up command: the caller never gets the workspace to clean.
        workspace.cleanup()
        raise
    return workspace


def _set_up(workspace: Workspace, environment: EnvironmentConfig) -> None:
    for copy in environment.files:
        problem = _copy(copy, workspace.path)
        if problem is not None:
            workspace.error = f"set-up: cannot copy {copy.src.name} to {copy.dest}: {problem}"
            return
    for i, step in enumerate(environment.commands, start=1):
        result = run_in(
            workspace.path,
            step.command,
            timeout_s=environment.timeout_s,
            max_output=SETUP_MAX_OUTPUT,
        )
        workspace.setup.append(result)
        if not result.ok:
            failure = result.describe_failure(environment.timeout_s)
            workspace.error = f"set-up command {i} `{step.label()}` {failure}"
            return


def _copy(copy: FileCopy, root: Path) -> str | None:
    try:
        target = resolve_inside(root, copy.dest)
    except PathEscape as exc:
        return str(exc)
    try:
        if copy.src.is_dir():
            # symlinks=True: links are copied as links (their targets were checked at load).
            shutil.copytree(copy.src, target, symlinks=True, dirs_exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(copy.src, target)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def live_workspaces() -> list[Path]:
    """The workspaces made and not yet cleaned up (kept ones are not counted)."""
    with _live_lock:
        return sorted(_live)


def _remove_leftovers() -> None:
    for path in live_workspaces():
        shutil.rmtree(path, ignore_errors=True)
    with _live_lock:
        _live.clear()


atexit.register(_remove_leftovers)
