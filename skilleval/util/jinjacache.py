"""Compiled Jinja templates kept under the skilleval home, one file per template and version.

Compiling a template costs more than rendering it for a small run, and a cached re-run does
little else: the HTML report's template and the judge's prompt templates are compiled once
and read back after that. Jinja checks the template's checksum and its own version when it
reads a file back, so an edited template or another Jinja compiles afresh. The home is looked
up at each use (it can change between runs in one process), and a home that cannot be
written only means compiling again next time.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from pathlib import Path

import jinja2

from skilleval.util.home import home_dir
from skilleval.version import __version__

TEMPLATE_CACHE = "templates"
"""The folder under the skilleval home that holds the compiled templates."""


class HomeBytecodeCache(jinja2.BytecodeCache):
    """Each compiled template as ``<home>/templates/<prefix>-<version>-<key>.bin``."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def _file(self, bucket: jinja2.bccache.Bucket) -> Path:
        return home_dir() / TEMPLATE_CACHE / f"{self.prefix}-{__version__}-{bucket.key}.bin"

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            with self._file(bucket).open("rb") as fh:
                bucket.load_bytecode(fh)
        except (OSError, ValueError, EOFError, TypeError, pickle.UnpicklingError):
            bucket.reset()  # missing, unreadable or damaged: compile it again

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        target = self._file(bucket)
        partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with partial.open("wb") as fh:
                bucket.write_bytecode(fh)
            os.replace(partial, target)
        except OSError:
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
