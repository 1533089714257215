"""Compiled Jinja templates kept under the skilleval home, one file per template and version.

Compiling a template costs more than rendering it for a small run, and a cached re-run does
little else: the HTML report's template and the judge's prompt templates are compiled once
and read back after that. Jinja checks the template's checksum and its own version when it
reads a file back, so an edited template or another Jinja compiles afresh. The compiled code
is marshal data, which CPython loads without checking (damaged bytes can crash the
interpreter), so each file is sealed (:mod:`skilleval.util.homefile`) and its digest checked
before Jinja sees a byte of it; a damaged file is a warning and a fresh compile. The home is
looked up at each use (it can change between runs in one process), and a home that cannot be
written only means compiling again next time.
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import jinja2

from skilleval.util.home import home_dir
from skilleval.util.homefile import read_sealed, write_sealed
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
        target = self._file(bucket)
        payload = read_sealed(target, "a compiled template", bucket.key.encode("utf-8"))
        if payload is None:
            bucket.reset()  # missing or damaged: compile it again
            return
        try:
            bucket.load_bytecode(io.BytesIO(payload))
        except (ValueError, EOFError, TypeError, pickle.UnpicklingError):
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        buffer = io.BytesIO()
        bucket.write_bytecode(buffer)
        write_sealed(self._file(bucket), buffer.getvalue(), bucket.key.encode("utf-8"))
