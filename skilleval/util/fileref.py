"""``file://`` references, and ``path.py:function`` (or ``path.js:function``) references.

The one parser of both forms. A reference's path is relative to the folder of the file that
wrote it (:func:`resolve`); where that folder is, is the caller's to know.
"""

from __future__ import annotations

from pathlib import Path

from skilleval.util.frozen import frozen

PREFIX = "file://"
CODE_SUFFIXES = (".py", ".js", ".cjs")
"""Files whose reference may name a function after a colon."""


@frozen
class FileRef:
    """What a reference names: a path, and a function in it when one is given."""

    path: str
    """As written, without ``file://``."""
    function: str | None = None
    """``fn`` in ``path.py:fn``; None when the reference names no function."""


def is_ref(value: object) -> bool:
    """Whether ``value`` is a ``file://`` reference."""
    return isinstance(value, str) and value.startswith(PREFIX)


def parse(ref: str) -> FileRef:
    """Split a reference into its path and function.

    ``file://checks.py:grade`` names ``grade`` in ``checks.py`` (and ``file://check.js:fn``
    ``fn`` in ``check.js``); ``file://dir/a:b.py`` names a file (a colon in a name is kept
    unless an identifier follows a code file's suffix: :data:`CODE_SUFFIXES`). A
    reference without ``file://`` (a plugin folder's ``module.py:fn`` or ``module:fn``)
    splits at its last colon whenever an identifier follows it.
    """
    target = ref.removeprefix(PREFIX)
    head, sep, tail = target.rpartition(":")
    if sep and head and tail.isidentifier() and (head.endswith(CODE_SUFFIXES) or not is_ref(ref)):
        return FileRef(head, tail)
    return FileRef(target)


def resolve(path: str, base: Path) -> Path:
    """``path`` as written in a file whose folder is ``base``: absolute paths stay as they are."""
    written = Path(path)
    return written if written.is_absolute() else base / written
