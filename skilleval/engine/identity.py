"""Byte-exact identities of model files, with their SHA-256 remembered between runs.

Hashing a multi-gigabyte GGUF takes seconds, so each digest is memoised in a small JSON file
keyed by (absolute path, size, mtime_ns): touching or replacing the file invalidates it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from skilleval.engine.base import ModelIdentity
from skilleval.errors import ProviderError
from skilleval.util.memo import read_memo, remember

MEMO_FILE = "model-hashes.json"
"""The memo's file name inside ``memo_dir``."""


def file_identity(path: Path | str, memo_dir: Path | str) -> ModelIdentity:
    """Identify a model file by name, size and SHA-256.

    Args:
        path: The model file.
        memo_dir: Folder for the digest memo (created when missing). If it cannot be written
            the digest is still returned, only not remembered.

    Returns:
        A ``gguf`` identity whose :meth:`~ModelIdentity.key` is the file's SHA-256.

    Raises:
        ProviderError: The file does not exist or cannot be read.
    """
    file = Path(path).expanduser().absolute()
    try:
        st = file.stat()
    except FileNotFoundError:
        raise ProviderError(f"model file not found: {file}") from None
    except OSError as exc:
        raise ProviderError(f"cannot read model file {file}: {exc.strerror or exc}") from None
    if not file.is_file():
        raise ProviderError(f"model path is not a file: {file}")

    memo = Path(memo_dir) / MEMO_FILE
    entry = {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
    known = read_memo(memo).get(str(file))
    if isinstance(known, dict) and all(known.get(k) == v for k, v in entry.items()):
        digest = known.get("sha256")
        if isinstance(digest, str) and len(digest) == 64:
            return _identity(file, st.st_size, digest)

    digest = _sha256(file)
    remember(memo, str(file), {**entry, "sha256": digest})
    return _identity(file, st.st_size, digest)


def _identity(file: Path, size: int, digest: str) -> ModelIdentity:
    return ModelIdentity(kind="gguf", name=file.name, sha256=digest, size=size, file=str(file))


def _sha256(file: Path) -> str:
    try:
        with file.open("rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError as exc:
        raise ProviderError(f"cannot read model file {file}: {exc.strerror or exc}") from None
