"""Import one plugin file from a plugin folder, with errors that point into it."""

from __future__ import annotations

import hashlib
import sys
import traceback
from pathlib import Path
from types import ModuleType

from skilleval.errors import Diagnostic, Location, PluginError, SuiteError
from skilleval.userfile import read_bytes


def import_plugin_file(file: Path) -> ModuleType:
    """Import one plugin file under a stable, unique module name.

    The source is compiled afresh on every import instead of going through the bytecode
    cache, whose staleness check (whole-second mtime and size) can miss a quick edit.

    Raises:
        PluginError: The file has a syntax error or raised while it ran; the position is the
            deepest line of the file in the traceback.
    """
    resolved = file.resolve()
    digest = hashlib.sha256(str(resolved.parent).encode()).hexdigest()[:12]
    name = f"skilleval_plugins.d{digest}.{resolved.stem}"
    module = ModuleType(name)
    module.__file__ = str(resolved)
    sys.modules[name] = module
    try:
        source = read_bytes(resolved, Location(str(file)))
    except SuiteError as exc:
        sys.modules.pop(name, None)
        raise PluginError(exc.diagnostics) from None
    try:
        code = compile(source, str(resolved), "exec")
        exec(code, module.__dict__)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        where = Location(str(file), exc.lineno or 1, exc.offset or 1)
        raise PluginError([Diagnostic(where, f"plugin has a syntax error: {exc.msg}")]) from None
    except Exception as exc:
        # Importing runs the author's code, which may raise anything.
        sys.modules.pop(name, None)
        line = _line_in(exc, resolved)
        raise PluginError(
            [
                Diagnostic(
                    Location(str(file), line, 1),
                    f"plugin failed to import: {type(exc).__name__}: {exc}",
                )
            ]
        ) from None
    return module


def _line_in(exc: BaseException, file: Path) -> int:
    """The deepest line of ``file`` in the traceback, so the message points into the plugin."""
    line = 1
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == file:
            line = frame.lineno or line
    return line
