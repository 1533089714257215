"""Import a user's Python file (a ``python`` check, a python tool), once per version of it."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import sys
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from types import ModuleType

_modules: dict[Path, tuple[int, ModuleType]] = {}
_lock = threading.Lock()
_allowed: ContextVar[bool] = ContextVar("skilleval_user_imports_allowed", default=True)


def imports_allowed() -> bool:
    """False inside :func:`no_user_imports`: a user's Python file must not be run."""
    return _allowed.get()


@contextlib.contextmanager
def no_user_imports() -> Iterator[None]:
    """Refuse to import users' Python files (``validate --no-plugins``) while inside."""
    token = _allowed.set(False)
    try:
        yield
    finally:
        _allowed.reset(token)


def import_file(path: Path) -> ModuleType:
    """The module at ``path``, imported again only when the file's mtime changes.

    Each version gets its own name so that an edited file never reuses a stale module, and it
    is put in ``sys.modules`` because dataclasses and pickling look a module up there.

    Raises:
        ImportError: The file cannot be loaded as a module; anything the module raises
            while it runs is passed on.
    """
    if not imports_allowed():
        raise ImportError(f"not importing {path}: importing users' code is turned off")
    path = path.resolve()
    mtime = path.stat().st_mtime_ns
    with _lock:
        cached = _modules.get(path)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        digest = hashlib.sha1(str(path).encode(), usedforsecurity=False).hexdigest()[:12]
        name = f"skilleval_user_{digest}_{mtime}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        if cached is not None:
            sys.modules.pop(cached[1].__name__, None)
        _modules[path] = (mtime, module)
        return module
