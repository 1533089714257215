"""Write a run's results in the format a file's extension asks for (``-o/--output``).

Formats are registered output formats (:func:`~skilleval.plugins.reporter`): the built-ins in
:mod:`skilleval.report.formats`, and any a plugin adds.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from skilleval.errors import Diagnostic, Location, PluginError, UsageError
from skilleval.plugins.manager import PluginManager
from skilleval.plugins.markers import ReporterType

SUPPORTED: tuple[str, ...] = (".json", ".jsonl", ".html", ".xml", ".md", ".csv")
"""The built-in formats' extensions, in the order the docs list them."""

WriteFn = Callable[[Mapping[str, Any], Path], None]


def builtin_formats() -> PluginManager:
    """A manager with the built-ins only, for writers that never see a suite's plugins."""
    manager = PluginManager()
    manager.load_builtins()
    return manager


def check_output_path(path: Path, formats: PluginManager) -> ReporterType:
    """The format for ``path``, or a UsageError naming the supported extensions.

    Call it for every ``-o`` before the run starts, so a typo costs nothing.
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
    return found


def write_output(
    doc: Mapping[str, Any], path: Path, jsonl_source: Path | None, formats: PluginManager
) -> None:
    """Write ``doc`` to ``path`` in the format its extension names.

    Args:
        doc: The results document.
        path: Where to write; parent folders are created. The file is replaced atomically.
        jsonl_source: The run's streamed results.jsonl. For a ``.jsonl`` output it is copied
            byte for byte when given; otherwise the records are written from ``doc``.
        formats: The registered output formats.

    Raises:
        UsageError: No registered format writes files with this extension.
        PluginError: A plugin's format raised; the file is left as it was.
    """
    found = check_output_path(path, formats)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    if found.name == "jsonl" and jsonl_source is not None and jsonl_source.is_file():
        shutil.copyfile(jsonl_source, tmp)
    else:
        try:
            cast(WriteFn, found.factory)(doc, tmp)
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
    os.replace(tmp, path)
