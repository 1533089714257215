"""Write a run's results in the format a file's extension asks for (``-o/--output``).

Formats are registered output formats (:func:`~skilleval.plugins.reporter`): the built-ins in
:mod:`skilleval.report.formats`, and any a plugin adds. A built-in format gets the typed
:class:`~skilleval.results.model.Run`; a plugin's gets the results document as plain JSON data
(``schemas/results.schema.json``), the stable form of the same thing.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from skilleval.errors import Diagnostic, Location, PluginError, StorageError, UsageError
from skilleval.plugins.manager import PluginManager
from skilleval.plugins.markers import ReporterType
from skilleval.report.target import check_target
from skilleval.results.model import Run
from skilleval.results.write import dumps_matrix, run_json, write_atomic

if TYPE_CHECKING:
    from skilleval.results.matrix import Matrix

SUPPORTED: tuple[str, ...] = (".json", ".jsonl", ".html", ".xml", ".md", ".csv")
"""The built-in formats' extensions, in the order the docs list them."""

WriteFn = Callable[[Any, Path], None]


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
        known = [s for s in SUPPORTED if formats.reporter_for(s)]
        known += sorted(r.suffix for r in formats.reporters() if r.suffix not in SUPPORTED)
        raise UsageError(
            f"cannot write {path}: {shown} is not a supported output format; "
            f"use one of {', '.join(known)}"
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
        PluginError: A plugin's format raised; the file is left as it was.
    """
    found = check_output_path(path, formats)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if found.name == "jsonl" and jsonl_source is not None and jsonl_source.is_file():
            shutil.copyfile(jsonl_source, tmp)
        else:
            _render(found, run, path, tmp)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            # A full disk is not a wrong path: the same exit 3 as a run stopped by one.
            raise StorageError(f"cannot write {path}: no space left on the device") from None
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _render(found: ReporterType, run: Run, path: Path, tmp: Path) -> None:
    payload: Any = run if found.origin == "builtin" else run_json(run)
    try:
        cast(WriteFn, found.factory)(payload, tmp)
    except OSError:
        raise
    except Exception as exc:
        tmp.unlink(missing_ok=True)
        if found.origin == "builtin":
            raise  # a bug in skilleval: keep the traceback
        code = found.factory.__code__
        where = Location(code.co_filename, code.co_firstlineno, 1)
        message = (
            f"output format '{found.name}' could not write {path}: {type(exc).__name__}: {exc}"
        )
        raise PluginError([Diagnostic(where, message)]) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


MATRIX_FORMATS: tuple[str, ...] = (".json", ".html", ".md")
"""What ``-o`` can write for a run on several models; each model's run has every format."""


def check_matrix_output(path: Path) -> None:
    """Refuse, before the run, an ``-o`` the side-by-side report cannot be written as."""
    if path.suffix not in MATRIX_FORMATS:
        shown = f"'{path.suffix}'" if path.suffix else "no extension"
        raise UsageError(
            f"cannot write {path}: a run on several models writes {', '.join(MATRIX_FORMATS)} "
            f"side by side, not {shown}; each model's run directory has its own results"
        )
    check_target(path)


def write_matrix(matrix: Matrix, path: Path) -> None:
    """Write the side-by-side report to ``path`` (``.json``, ``.html`` or ``.md``).

    Raises:
        UsageError: The extension is not one of those, or the file could not be written.
        StorageError: The disk is full.
    """
    check_matrix_output(path)
    # lazy: start-up time (a run of one model never writes the side-by-side report)
    from skilleval.report.matrix import render_matrix_html, render_matrix_markdown

    render = {
        ".json": dumps_matrix,
        ".html": render_matrix_html,
        ".md": render_matrix_markdown,
    }[path.suffix]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, render(matrix))
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise StorageError(f"cannot write {path}: no space left on the device") from None
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
