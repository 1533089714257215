"""Import a user's Python file: a plugin, a ``python`` check, a python tool.

The one importer of users' Python. The source is read like every user file (regular files
only, with a size cap) and compiled afresh, never through the bytecode cache, whose
staleness check (whole-second mtime and size) can miss a quick edit. The module is put in
``sys.modules`` under a name of its own, because dataclasses and pickling look it up there.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import threading
import traceback
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from types import ModuleType

from skilleval.errors import Diagnostic, Location, PluginError, SuiteError
from skilleval.userfile import read_bytes

_modules: dict[Path, tuple[int, ModuleType]] = {}
_lock = threading.Lock()
_allowed: ContextVar[bool] = ContextVar("skilleval_user_imports_allowed", default=True)


def imports_allowed() -> bool:
    """False inside :func:`no_user_imports`: a user's Python file must not be run."""
    return _allowed.get()


@contextlib.contextmanager
def no_user_imports() -> Iterator[None]:
    """Refuse to run users' Python files (``validate --no-plugins``) while inside."""
    token = _allowed.set(False)
    try:
        yield
    finally:
        _allowed.reset(token)


def _execute(path: Path, name: str, shown: str) -> ModuleType:
    """Run the file at ``path`` (resolved) as the module ``name``; gone again if it fails.

    Raises:
        SuiteError: The file cannot be read (missing, a FIFO, too large …).
        SyntaxError: The file does not compile; anything the module raises is passed on.
    """
    if not imports_allowed():
        raise ImportError(f"not importing {shown}: running users' code is turned off")
    source = read_bytes(path, Location(shown))
    module = ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    try:
        exec(compile(source, str(path), "exec"), module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def import_file(path: Path) -> ModuleType:
    """The module at ``path``, imported again only when the file's mtime changes.

    Each version gets its own name, so that an edited file never reuses a stale module.

    Raises:
        SuiteError: The file cannot be read; anything the module raises while it runs is
            passed on (a ``python`` check turns it into an ``error`` verdict).
    """
    path = path.resolve()
    mtime = path.stat().st_mtime_ns
    with _lock:
        cached = _modules.get(path)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        digest = hashlib.sha1(str(path).encode(), usedforsecurity=False).hexdigest()[:12]
        module = _execute(path, f"skilleval_user_{digest}_{mtime}", str(path))
        if cached is not None:
            sys.modules.pop(cached[1].__name__, None)
        _modules[path] = (mtime, module)
        return module


def import_plugin_file(file: Path) -> ModuleType:
    """Import one file of a plugin folder under a stable, unique module name.

    Raises:
        PluginError: The file cannot be read, has a syntax error or raised while it ran;
            the position is the deepest line of the file in the traceback.
    """
    resolved = file.resolve()
    digest = hashlib.sha256(str(resolved.parent).encode()).hexdigest()[:12]
    try:
        return _execute(resolved, f"skilleval_plugins.d{digest}.{resolved.stem}", str(file))
    except SuiteError as exc:
        raise PluginError(exc.diagnostics) from None
    except SyntaxError as exc:
        where = Location(str(file), exc.lineno or 1, exc.offset or 1)
        raise PluginError([Diagnostic(where, f"plugin has a syntax error: {exc.msg}")]) from None
    except Exception as exc:
        # Importing runs the author's code, which may raise anything.
        line = _line_in(exc, resolved)
        raise PluginError(
            [
                Diagnostic(
                    Location(str(file), line, 1),
                    f"plugin failed to import: {type(exc).__name__}: {exc}",
                )
            ]
        ) from None


def _line_in(exc: BaseException, file: Path) -> int:
    """The deepest line of ``file`` in the traceback, so the message points into the plugin."""
    line = 1
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == file:
            line = frame.lineno or line
    return line
