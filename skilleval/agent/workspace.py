"""Per-run workspaces: a fresh temporary folder, seeded with files and set-up commands.

Every test × arm × trial gets its own folder, so the arms never see each other's files. A
path inside a workspace is always relative; one that leads out of it, lexically (``../``, an
absolute path) or through a symlink, is refused by :func:`resolve_inside`, which every file
check and every copy goes through.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import TracebackType

from skilleval.agent.process import Command, ProcessResult, run_process
from skilleval.errors import Diagnostic, Location, PathEscape, missing_file
from skilleval.suite.yamlio import Document, display_path
from skilleval.userfile import lookup_problem

SETUP_TIMEOUT_S = 60.0
SETUP_MAX_OUTPUT = 64_000
_LABEL = re.compile(r"[^A-Za-z0-9_.-]+")


def path_problem(rel: str) -> str | None:
    """Why ``rel`` can never be a workspace path, judged from its text alone; None if it can."""
    if not rel.strip():
        return "path is empty"
    if rel.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:[\\/]", rel):
        return f"{rel!r} is absolute; workspace paths are relative to the workspace"
    depth = 0
    for part in PurePosixPath(rel.replace("\\", "/")).parts:
        depth += -1 if part == ".." else 0 if part == "." else 1
        if depth < 0:
            return f"{rel!r} leads outside the workspace"
    return None


def resolve_inside(root: Path, rel: str) -> Path:
    """The real path of ``rel`` inside the workspace ``root``.

    Symlinks are followed as far as the path exists, so a link that points out of the
    workspace is caught even when the text of ``rel`` looks harmless.

    Raises:
        PathEscape: ``rel`` is absolute, climbs above ``root``, passes through a symlink
            that leads outside it, or is a symlink loop.
    """
    problem = path_problem(rel)
    if problem is not None:
        raise PathEscape(problem)
    real_root = root.resolve()
    try:
        target = (real_root / rel).resolve()
    except (RuntimeError, OSError):
        # Python 3.11 raises RuntimeError for a symlink loop, later versions OSError.
        raise PathEscape(f"{rel!r} cannot be resolved: it is a symlink loop") from None
    if target != real_root and real_root not in target.parents:
        raise PathEscape(f"{rel!r} leads outside the workspace through a symlink")
    return target


# -- declaration ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileCopy:
    """One ``files:`` entry: copy ``src`` (from the suite) to ``dest`` (in the workspace)."""

    src: Path
    dest: str
    where: Location


@dataclass(frozen=True, slots=True)
class SetupCommand:
    """One ``commands:`` entry."""

    command: str | tuple[str, ...]
    where: Location

    def label(self) -> str:
        return self.command if isinstance(self.command, str) else " ".join(self.command)


@dataclass(frozen=True, slots=True)
class Environment:
    """What a workspace starts with."""

    files: tuple[FileCopy, ...] = ()
    commands: tuple[SetupCommand, ...] = ()
    timeout_s: float = SETUP_TIMEOUT_S


def parse_environment(
    doc: Document, path: Sequence[str | int], *, base_dir: Path
) -> tuple[Environment | None, list[Diagnostic]]:
    """Read the ``environment:`` mapping at ``path`` in ``doc``.

    Args:
        doc: The file the mapping is in.
        path: Where the mapping is, e.g. ``["tests", 0, "environment"]``.
        base_dir: The folder ``src`` paths are relative to (the suite's).

    Returns:
        The environment (None when there are errors) and every problem found, positioned.
    """
    from skilleval.agent.schema import ENVIRONMENT
    from skilleval.suite.schema import validate

    sub = doc.sub(path)
    diags = validate(sub, ENVIRONMENT, what="environment")
    if diags:
        return None, diags
    data = sub.data or {}
    files: list[FileCopy] = []
    for i, item in enumerate(data.get("files") or []):
        at = [*path, "files", i]
        raw_src = item if isinstance(item, str) else item["src"]
        src_at = at if isinstance(item, str) else [*at, "src"]
        src = Path(raw_src).expanduser()
        src = src if src.is_absolute() else base_dir / src
        unreadable = lookup_problem(src)
        if unreadable is not None:
            diags.append(Diagnostic(doc.at(src_at), unreadable))
            continue
        if not src.exists():
            diags.append(
                missing_file(
                    doc.at(src_at),
                    f"file not found: {raw_src} (looked for {display_path(src)})",
                    str(src),
                )
            )
            continue
        if not (src.is_file() or src.is_dir()):
            diags.append(
                Diagnostic(doc.at(src_at), f"expected a regular file or a folder: {raw_src}")
            )
            continue
        dest = src.name if isinstance(item, str) else item.get("dest", src.name)
        problem = path_problem(dest)
        if problem is not None:
            dest_at = at if isinstance(item, str) else [*at, "dest"]
            diags.append(Diagnostic(doc.at(dest_at), f"dest: {problem}"))
            continue
        escaping = _escaping_link(src)
        if escaping is not None:
            diags.append(
                Diagnostic(
                    doc.at(src_at),
                    f"{raw_src} holds a symlink that points outside it: {escaping}",
                )
            )
            continue
        files.append(FileCopy(src, dest, doc.at(at)))
    commands = [
        SetupCommand(cmd if isinstance(cmd, str) else tuple(cmd), doc.at([*path, "commands", i]))
        for i, cmd in enumerate(data.get("commands") or [])
    ]
    env = Environment(tuple(files), tuple(commands), float(data.get("timeout", SETUP_TIMEOUT_S)))
    return (None if diags else env), diags


def _escaping_link(src: Path) -> str | None:
    """A symlink under the folder ``src`` whose target lies outside ``src``, if any."""
    if not src.is_dir():
        return None
    root = src.resolve()
    for dirpath, dirnames, filenames in os.walk(src):
        for name in [*dirnames, *filenames]:
            entry = Path(dirpath) / name
            if entry.is_symlink():
                target = entry.resolve()
                if target != root and root not in target.parents:
                    return str(entry.relative_to(src))
    return None


# -- a live workspace --------------------------------------------------------------------------


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
    environment: Environment | None,
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
    if environment is None:
        return workspace
    for copy in environment.files:
        problem = _copy(copy, root)
        if problem is not None:
            workspace.error = f"set-up: cannot copy {copy.src.name} to {copy.dest}: {problem}"
            return workspace
    for i, step in enumerate(environment.commands, start=1):
        result = run_in(
            root, step.command, timeout_s=environment.timeout_s, max_output=SETUP_MAX_OUTPUT
        )
        workspace.setup.append(result)
        if not result.ok:
            failure = result.describe_failure(environment.timeout_s)
            workspace.error = f"set-up command {i} `{step.label()}` {failure}"
            return workspace
    return workspace


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


def run_in(
    workspace: Path, command: Command, *, timeout_s: float, max_output: int
) -> ProcessResult:
    """Run ``command`` in ``workspace`` with ``SKILLEVAL_WORKSPACE`` set."""
    return run_process(
        command,
        cwd=workspace,
        timeout_s=timeout_s,
        max_output=max_output,
        env={"SKILLEVAL_WORKSPACE": str(workspace)},
    )
