"""Which GGUF file an in-process model runs, and what identifies it.

``model.path`` is ``default`` (the embedded model), an ``hf:`` reference (fetched into
huggingface_hub's cache the first time the path is needed) or a file. :class:`ModelFile`
resolves it once, remembers a failed fetch so that it is raised again rather than retried on
every call, and gives the file's identity (name, size, SHA-256, and for a hub file where it
came from) without loading it.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

from skilleval.engine.base import ModelIdentity
from skilleval.engine.embedded import default_model_path
from skilleval.engine.hf import Fetched, fetch
from skilleval.engine.hf_ref import is_hub_ref, parse_ref
from skilleval.engine.identity import file_identity
from skilleval.errors import ProviderError

__all__ = ["ModelFile"]


class ModelFile:
    """The GGUF behind ``path`` as written (``default``, ``hf:…`` or a file path).

    Args:
        written: ``model.path``, already made absolute against the suite.
        memo_dir: Where the file's SHA-256 is remembered (see
            :func:`~skilleval.engine.identity.file_identity`).
    """

    def __init__(self, written: str, memo_dir: Path) -> None:
        self.written = written
        self.memo_dir = memo_dir
        self._path: Path | None = None
        self._fetched: Fetched | None = None
        self._fetch_error: ProviderError | None = None
        self._identity: ModelIdentity | None = None
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        """The file: the embedded model for ``default``, the file in huggingface_hub's cache
        for an ``hf:`` reference (fetched on first use).

        Raises:
            ProviderError: The embedded model is not installed, or a hub file cannot be
                fetched (:class:`~skilleval.errors.ModelDownloadError`).
        """
        with self._lock:
            if self._path is None:
                raw = self.written
                if raw == "default":
                    self._path = default_model_path()
                elif is_hub_ref(raw):
                    self._path = self._fetch(raw).path
                else:
                    self._path = Path(raw).expanduser()
            return self._path

    def _fetch(self, raw: str) -> Fetched:
        if self._fetch_error is not None:
            raise self._fetch_error
        try:
            # The reference was checked when the suite loaded; a spec built in code may not be.
            ref = parse_ref(raw)
        except ValueError as exc:
            raise ProviderError(str(exc)) from None
        try:
            self._fetched = fetch(ref)
        except ProviderError as exc:
            self._fetch_error = exc
            raise
        return self._fetched

    def identity(self) -> ModelIdentity:
        """File name, size and SHA-256, and for a hub file the repository, file and commit it
        came from; does not load the model.

        Raises:
            ProviderError: The file is missing or unreadable, or cannot be fetched.
        """
        if self._identity is None:
            identity = file_identity(self.path, self.memo_dir)
            if self._fetched is not None:
                identity = replace(identity, details=self._fetched.details())
            self._identity = identity
        return self._identity
