"""A stand-in ``llama_cpp`` package, put first on PYTHONPATH, for testing the canary from outside.

It says what llama.cpp's system info would say, and its ``Llama`` crashes the process the way
a build with the wrong instructions does: by a real signal (a NULL read through ctypes for
SIGSEGV, the signal itself for SIGILL), or decodes nothing and returns. Every import is
logged, so a test can count the processes that imported it: the parent of a run never imports
it before the canary, so the log counts canary children.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

VERSION = "0.3.99"

_PACKAGE = """
import ctypes, os, signal

__version__ = {version!r}

with open(os.environ["FAKE_LLAMA_LOG"], "a") as _log:
    _log.write(str(os.getpid()) + "\\n")


def llama_print_system_info():
    return {system_info!r}


def llama_supports_gpu_offload():
    return False


class Llama:
    def __init__(self, **kwargs):
        self.kwargs = kwargs

    def create_completion(self, *args, **kwargs):
        mode = {mode!r}
        if mode == "segv":
            ctypes.string_at(0)
        if mode == "ill":
            os.kill(os.getpid(), signal.SIGILL)
        return {{"usage": {{"completion_tokens": 4}}}}

    def close(self):
        pass
"""


@dataclass(frozen=True)
class FakeLlama:
    """Where the fake package is and what it logged."""

    root: Path
    """The folder to put first on PYTHONPATH."""
    log: Path

    @property
    def library(self) -> Path:
        """A file the canary's key counts as one of llama.cpp's shared libraries."""
        return self.root / "llama_cpp" / "lib" / "libllama.so"

    def imports(self) -> int:
        """How many processes imported the package."""
        return len(self.log.read_text().split()) if self.log.exists() else 0

    def env(self, home: Path) -> dict[str, str]:
        """The environment of a ``skilleval`` process that finds this package first."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(self.root), *filter(None, [env.get("PYTHONPATH")])]
        )
        env["FAKE_LLAMA_LOG"] = str(self.log)
        env["SKILLEVAL_HOME"] = str(home)
        return env


def make_fake_llama(where: Path, mode: str, system_info: str) -> FakeLlama:
    """Write the package: ``mode`` is ``segv``, ``ill`` or ``ok``."""
    package = where / "llama_cpp"
    (package / "lib").mkdir(parents=True)
    (package / "__init__.py").write_text(
        _PACKAGE.format(version=VERSION, system_info=system_info.encode(), mode=mode)
    )
    (package / "lib" / "libllama.so").write_bytes(b"\x7fELF not really")
    return FakeLlama(where, where / "imports.log")


def skilleval_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "skilleval", *args]
