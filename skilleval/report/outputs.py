"""Write a run's results in the format a file's extension asks for (``-o/--output``).

Formats are registered output formats (:func:`~skilleval.plugins.reporter`): the built-ins in
:mod:`skilleval.report.formats`, and any a plugin adds. Every format gets the typed
:class:`~skilleval.results.model.Run` (exported from ``skilleval``); one that declares
``side_by_side`` also writes a run on several models, from its
:class:`~skilleval.results.matrix.Matrix`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skilleval.errors import Diagnostic, Location, PluginError, StorageError, UsageError
from skilleval.plugins.manager import PluginManager
from skilleval.plugins.markers import ReporterType
from skilleval.report.target import check_target
from skilleval.results.model import Run

if TYPE_CHECKING:
    from skilleval.results.matrix import Matrix

SUPPORTED: tuple[str, ...] = (".json", ".jsonl", ".html", ".xml", ".md", ".csv")
"""The built-in formats' extensions, in the order the docs list them."""


def builtin_formats() -> PluginManager:
    """A manager with the built-ins only, for writers that never see a suite's plugins."""
    manager = PluginManager()
    manager.load_builtins()
    return manager


def check_output_path(path: Path, formats: PluginManager) -> ReporterType:
    """The format for ``path``, or a UsageError naming the supported extensions.

    Call it for every ``-o`` before the run starts, so a typo costs nothing. A path that can
    never be written (a folder, or under a file) is refused here too.
    """
    found = formats.reporter_for(path.suffix)
    if found is None:
        shown = f"'{path.suffix}'" if path.suffix else "no extension"
        known = ", ".join(r.suffix for r in _in_order(formats))
        raise UsageError(
            f"cannot write {path}: {shown} is not a supported output format; use one of {known}"
        )
    check_target(path)
    return found


def write_output(run: Run, path: Path, jsonl_source: Path | None, formats: PluginManager) -> None:
    """Write ``run`` to ``path`` in the format its extension names.

    Args:
        run: The run's results.
        path: Where to write; parent folders are created. The file is replaced atomically.
        jsonl_source: The run's streamed results.jsonl. For a ``.jsonl`` output it is copied
            byte for byte when given; otherwise the records are written from ``run``.
        formats: The registered output formats.

    Raises:
        UsageError: No registered format writes files with this extension, or the file could
            not be written (the message names the path and the reason).
        StorageError: The disk is full.
        PluginError: The format raised; the file is left as it was.
    """
    found = check_output_path(path, formats)
    if found.name == "jsonl" and jsonl_source is not None and jsonl_source.is_file():
        _written(path, lambda tmp: shutil.copyfile(jsonl_source, tmp))
    else:
        _written(path, lambda tmp: _render(found, found.factory, run, path, tmp))


def check_matrix_output(path: Path, formats: PluginManager) -> ReporterType:
    """The format for ``path`` of a run on several models, or a UsageError naming those that
    write one (each model's own run has every format).

    Call it for every ``-o`` before the run starts, as :func:`check_output_path`.
    """
    found = formats.reporter_for(path.suffix)
    if found is None or found.side_by_side is None:
        shown = f"'{path.suffix}'" if path.suffix else "no extension"
        able = [r.suffix for r in _in_order(formats) if r.side_by_side is not None]
        raise UsageError(
            f"cannot write {path}: a run on several models writes {', '.join(able)} "
            f"side by side, not {shown}; each model's run directory has its own results"
        )
    check_target(path)
    return found


def write_matrix(matrix: Matrix, path: Path, formats: PluginManager) -> None:
    """Write the side-by-side report to ``path`` in the format its extension names.

    Raises:
        UsageError: No format writes this extension side by side, or the file could not be
            written.
        StorageError: The disk is full.
        PluginError: The format raised; the file is left as it was.
    """
    found = check_matrix_output(path, formats)
    write = found.side_by_side
    assert write is not None  # checked above
    _written(path, lambda tmp: _render(found, write, matrix, path, tmp))


def _in_order(formats: PluginManager) -> list[ReporterType]:
    """The formats, built-ins in the order the docs list them, then the others by suffix."""
    first = [r for s in SUPPORTED if (r := formats.reporter_for(s)) is not None]
    return first + sorted(
        (r for r in formats.reporters() if r not in first), key=lambda r: r.suffix
    )


def _written(path: Path, write: Callable[[Path], object]) -> None:
    """Call ``write(tmp)`` on a file beside ``path``, then put it in place; nothing is left
    behind when it fails."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            # A full disk is not a wrong path: the same exit 3 as a run stopped by one.
            raise StorageError(f"cannot write {path}: no space left on the device") from None
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _render(
    found: ReporterType, write: Callable[..., Any], payload: Run | Matrix, path: Path, tmp: Path
) -> None:
    """Call a format's function; anything it raises but an OSError is a PluginError at its
    definition, whoever wrote it."""
    try:
        write(payload, tmp)
    except OSError:
        raise
    except Exception as exc:
        tmp.unlink(missing_ok=True)
        code = getattr(write, "__code__", None)
        where = (
            Location(code.co_filename, code.co_firstlineno, 1)
            if code is not None
            else Location(found.origin)
        )
        message = (
            f"output format '{found.name}' could not write {path}: {type(exc).__name__}: {exc}"
        )
        raise PluginError([Diagnostic(where, message)]) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
